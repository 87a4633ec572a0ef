"""How a function becomes a tool's metadata: the JSON Schema of its input
from its type hints, its description and the arguments' descriptions from
its docstring (Google style, as AgentScope's function tools read them).

Pure Python: it runs with plain ``python3`` (the unit tests) and at build
time inside componentize-py, where the component's metadata is computed once.
"""

import inspect
import re
import types
import typing

__all__ = ["derive", "json_type", "parse_docstring"]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Examples?|Notes?)\s*:\s*$")
_ARG = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc):
    """Splits a docstring into its description and a dict of argument
    descriptions (from an ``Args:`` section; continuation lines are joined).

    >>> parse_docstring('Adds.\\n\\nArgs:\\n    a: The first.\\n')
    ('Adds.', {'a': 'The first.'})
    """
    doc = inspect.cleandoc(doc or "")
    description, args = [], {}
    section, current = None, None
    for line in doc.splitlines():
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            arg = _ARG.match(line)
            indent = len(line) - len(line.lstrip())
            if arg and (current is None or indent <= args[current][1]):
                current = arg.group(1).lstrip("*")
                args[current] = [arg.group(3).strip(), indent]
            elif current is not None and line.strip():
                args[current][0] = (args[current][0] + " " + line.strip()).strip()
    return "\n".join(description).strip(), {k: v[0] for k, v in args.items()}


def json_type(hint):
    """The JSON Schema of one type hint, and whether ``None`` is allowed.

    ``str`` → string, ``int`` → integer, ``float`` → number, ``bool`` →
    boolean, ``list[T]``/``tuple``/``set`` → array of T, ``dict`` → object,
    ``Literal[...]`` → enum, ``Optional[T]`` / ``T | None`` → T (optional),
    ``Any`` or no hint → any JSON value.
    """
    if hint is inspect.Parameter.empty or hint is typing.Any or hint is object:
        return {}, False
    origin = typing.get_origin(hint)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(members) < len(typing.get_args(hint))
        if len(members) == 1:
            return json_type(members[0])[0], nullable
        return {"anyOf": [json_type(m)[0] for m in members]}, nullable
    if origin is typing.Literal:
        values = list(typing.get_args(hint))
        schema = {"enum": values}
        kinds = {type(v) for v in values}
        if len(kinds) == 1:
            schema = {**json_type(kinds.pop())[0], **schema}
        return schema, False
    if hint is str:
        return {"type": "string"}, False
    if hint is bool:
        return {"type": "boolean"}, False
    if hint is int:
        return {"type": "integer"}, False
    if hint is float:
        return {"type": "number"}, False
    if hint is type(None):
        return {"type": "null"}, True
    if hint in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        args = typing.get_args(hint)
        schema = {"type": "array"}
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            schema["prefixItems"] = [json_type(a)[0] for a in args]
            schema["minItems"] = schema["maxItems"] = len(args)
        elif args:
            schema["items"] = json_type(args[0])[0]
        return schema, False
    if hint is dict or origin is dict:
        args = typing.get_args(hint)
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = json_type(args[1])[0]
        return schema, False
    raise TypeError(
        f"toolhost_sdk cannot turn the type hint {hint!r} into a JSON Schema; use str, int, float, bool, "
        "list[...], dict[str, ...], Literal[...], Optional[...] or Any, or give the whole schema with @tool(schema=...)"
    )


def derive(func):
    """``(description, input_schema)`` of a function: the schema is a JSON
    object schema with one property per parameter, required unless it has a
    default or admits ``None``, with ``additionalProperties: false``.
    """
    description, arg_docs = parse_docstring(func.__doc__)
    hints = typing.get_type_hints(func)
    properties, required = {}, []
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{func.__name__}: *args and **kwargs cannot be described to the model; name every parameter")
        schema, nullable = json_type(hints.get(name, param.annotation))
        schema = dict(schema)
        if name in arg_docs and arg_docs[name]:
            schema["description"] = arg_docs[name]
        if param.default is not param.empty:
            if param.default is not None:
                schema["default"] = param.default
        elif not nullable:
            required.append(name)
        properties[name] = schema
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return description, schema
