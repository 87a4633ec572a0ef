"""The glue between the SDK's plain Python values and the bindings
componentize-py generates (the ``wit_world`` package, present only inside a
component build). Imported lazily, so the rest of the SDK runs anywhere."""

import json

from .chunks import Chunk, Context, Data, Decision, Rule, ToolInfo
from .errors import KINDS, ToolError

_ERROR_CLASSES = ("InvalidInput", "Denied", "NotFound", "Timeout", "Io", "Unsupported", "Internal")


def _types():
    from wit_world.imports import types
    return types


def _err(value):
    from componentize_py_types import Err
    return Err(value)


def to_wit_error(error):
    """A ``ToolError`` as the WIT variant."""
    cls = _ERROR_CLASSES[KINDS.index(error.kind)]
    return getattr(_types(), "ToolError_" + cls)(error.message)


def from_wit_error(value):
    """A WIT ``tool-error`` (or a plain string) as a ``ToolError``."""
    if isinstance(value, str):
        return ToolError(value, "denied")
    name = type(value).__name__.removeprefix("ToolError_")
    kind = KINDS[_ERROR_CLASSES.index(name)] if name in _ERROR_CLASSES else "internal"
    return ToolError(value.value, kind)


def unwrap(f, *args):
    """Calls a bound host function, turning its ``Err`` into ``ToolError``."""
    from componentize_py_types import Err
    try:
        return f(*args)
    except Err as e:
        raise from_wit_error(e.value) from None


def to_wit_chunk(chunk):
    t = _types()
    blocks = []
    for b in chunk.content:
        if isinstance(b, Data):
            blocks.append(t.ContentBlock_Data(t.DataBlock(b.id, b.media_type, bytes(b.data), b.name)))
        else:
            blocks.append(t.ContentBlock_Text(str(b)))
    state = getattr(t.ResultState, chunk.state.upper())
    metadata = json.dumps(chunk.metadata) if chunk.metadata else ""
    return t.Chunk(blocks, state, metadata)


def from_wit_chunk(chunk):
    t = _types()
    content = []
    for b in chunk.content:
        if isinstance(b, t.ContentBlock_Text):
            content.append(b.value)
        else:
            d = b.value
            content.append(Data(bytes(d.data), d.media_type, d.name, d.id))
    return Chunk(content, chunk.state.name.lower(), json.loads(chunk.metadata) if chunk.metadata else None)


def emit(chunk):
    from wit_world.imports import output
    return output.emit(to_wit_chunk(Chunk.of(chunk)))


def _context(ctx):
    return Context(ctx.mode.name.lower().replace("_", "-"), list(ctx.working_directories), ctx.cwd, ctx.home,
                   json.loads(ctx.tool_config or "{}"))


def _behavior(name):
    return getattr(_types().PermissionBehavior, name.upper())


def _rule(rule):
    return _types().PermissionRule(rule.tool_name, rule.content, _behavior(rule.behavior))


def _send(result):
    """Emits what a tool returned or yielded."""
    if result is None:
        return
    if hasattr(result, "__next__") or (hasattr(result, "__iter__") and not isinstance(result, (str, bytes, dict, list, Chunk))):
        for item in result:
            if item is not None and not emit(item):
                break  # past the output cap: stop early
        return
    emit(result)


def _run_call(tool, input_text):
    from .tool import parse_input
    try:
        _send(tool.call(parse_input(input_text)))
    except ToolError as e:
        raise _err(to_wit_error(e)) from None
    except Exception as e:  # noqa: BLE001 - every other exception is the tool's error result
        import traceback
        from wit_world.imports import log
        log.log(log.Level.DEBUG, f"{tool.name}: {traceback.format_exc()}")
        emit(Chunk([f"Error: {type(e).__name__}: {e}"], "error"))


def export_tool(tool):
    """The class componentize-py exports as ``Tool`` for ``tool`` (a
    ``FunctionTool`` or ``ToolBase`` instance)."""
    from wit_world import exports
    # Loaded while the component is built: a module first imported in a call fails to import.
    from wit_world.imports import backend, log, output, state  # noqa: F401
    from .tool import parse_input

    t = _types()
    metadata = t.ToolMetadata(
        name=tool.name,
        description=tool.description,
        input_schema=json.dumps(tool.input_schema),
        concurrency_safe=bool(tool.concurrency_safe),
        read_only=bool(tool.read_only),
        external=bool(tool.external),
        state_injected=bool(tool.state_injected),
        mcp_origin=None,
        result_metadata_schema=None,
        capabilities=t.Capabilities(list(tool.reads), list(tool.writes), bool(tool.exec), bool(tool.network)),
    )

    class Tool(exports.Tool):
        def metadata(self):
            return metadata

        def check_read_only(self, input):
            return bool(tool.check_read_only(parse_input(input)))

        def check_permissions(self, input, context):
            d = tool.check_permissions(parse_input(input), _context(context))
            if not isinstance(d, Decision):
                raise TypeError(f"{tool.name}.check_permissions must return a Decision (allow/deny/ask/passthrough)")
            return t.PermissionDecision(_behavior(d.behavior), d.message, d.reason, d.bypass_immune,
                                        [_rule(r) for r in d.suggested_rules])

        def match_rule(self, behavior, rule_contents, input, context):
            args, ctx = parse_input(input), _context(context)
            for i, content in enumerate(rule_contents):
                if tool.match_rule(behavior.name.lower(), content, args, ctx):
                    return i
            return None

        def generate_suggestions(self, input, context):
            return [_rule(r) for r in tool.suggestions(parse_input(input), _context(context))]

        def call(self, input):
            _run_call(tool, input)

    return Tool


def export_middleware(mw):
    """The class componentize-py exports as ``Middleware`` for ``mw``."""
    from wit_world import exports
    from wit_world.exports import middleware as wit_middleware
    # Loaded while the component is built: a module first imported in a call fails to import.
    from wit_world.imports import backend, chain, log, output, state  # noqa: F401

    def run_next(next_handler):
        def next(input):
            from .tool import parse_input
            text = input if isinstance(input, str) else json.dumps(input)
            parse_input(text)
            raw = unwrap(next_handler.run, text)
            return _Inner(raw)
        return next

    from .middleware import Inner

    class _Inner(Inner):
        def __init__(self, raw):
            super().__init__(raw, from_wit_chunk, unwrap)

    class Middleware(exports.Middleware):
        def info(self):
            return wit_middleware.MiddlewareInfo(mw.name, mw.description)

        def on_tool_call(self, tool, input, next):
            info = ToolInfo(tool.name, tool.description, json.loads(tool.input_schema), tool.read_only,
                            tool.concurrency_safe)
            try:
                mw.func(info, json.loads(input), run_next(next))
            except ToolError as e:
                raise _err(to_wit_error(e)) from None
            except Exception as e:  # noqa: BLE001 - a bug in the middleware fails the call, named
                raise _err(to_wit_error(ToolError.internal(f"middleware {mw.name}: {type(e).__name__}: {e}"))) from None

    return Middleware

