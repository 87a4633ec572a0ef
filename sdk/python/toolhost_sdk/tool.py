"""The two ways to write a tool: a decorated function (``@tool``) or a
subclass of ``ToolBase`` for the whole ``tool`` interface."""

import inspect
import json

from .chunks import Decision, Rule
from .errors import ToolError
from .schema import derive

__all__ = ["tool", "ToolBase", "FunctionTool", "FUNCTION_TOOL_ASK"]

#: The message of a function tool's own permission check (as AgentScope's
#: FunctionTool and the Rust SDK's ``#[tool]``).
FUNCTION_TOOL_ASK = "Custom function tools must be explicitly allowed by the user."


class ToolBase:
    """A tool with every part of the ``tool`` interface in your hands.

    Set the class attributes and override ``call``; the rest has
    AgentScope's defaults:

    - ``check_read_only(input)``: the ``read_only`` attribute;
    - ``check_permissions(input, context)``: ``passthrough`` (the user's
      rules and the mode decide);
    - ``match_rule(behavior, content, input, context)``: content rules never
      match (tool-level rules always do, in the host);
    - ``suggestions(input, context)``: one tool-level rule.

    ``call(input)`` gets the input as a dict and returns or yields output
    like a function tool (``str``, ``Chunk``, JSON values); raising
    ``ToolError`` ends the call with that error.
    """

    name = None
    description = ""
    input_schema = {"type": "object", "properties": {}}
    read_only = False
    concurrency_safe = False
    state_injected = False
    external = False
    reads = ()
    writes = ()
    exec = False
    network = False

    def check_read_only(self, input):
        """Whether this call only reads (default: the ``read_only`` flag)."""
        return bool(self.read_only)

    def check_permissions(self, input, context):
        """The tool's own judgement (default: passthrough)."""
        return Decision("passthrough")

    def match_rule(self, behavior, content, input, context):
        """Whether rule ``content`` covers this call (default: never)."""
        return False

    def suggestions(self, input, context):
        """Rules to offer when the call is asked about (default: the tool)."""
        return [Rule(self.name)]

    def call(self, input):
        """Runs the tool; override it."""
        raise ToolError.internal(f"{type(self).__name__} does not override ToolBase.call")


class FunctionTool(ToolBase):
    """A plain function as a tool; made by ``@tool``. Calling it calls the
    function, so it stays testable as ordinary Python."""

    def __init__(self, func, name=None, description=None, schema=None, read_only=False, concurrency_safe=False,
                 reads=(), writes=(), exec=False, network=False, state=False):
        derived_description, derived_schema = derive(func)
        self.func = func
        self.name = name or func.__name__
        self.description = description or derived_description
        if not self.description:
            raise ValueError(f"tool {self.name}: give the function a docstring (the model reads it) or description=")
        self.input_schema = schema if schema is not None else derived_schema
        self._read_only = read_only
        self.read_only = read_only if isinstance(read_only, bool) else False
        self.concurrency_safe = concurrency_safe
        self.reads, self.writes = tuple(reads), tuple(writes)
        self.exec, self.network, self.state_injected = exec, network, state
        self.__doc__, self.__name__, self.__wrapped__ = func.__doc__, func.__name__, func

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    def check_read_only(self, input):
        if callable(self._read_only):
            return bool(self._read_only(**self._arguments(input)))
        return bool(self._read_only)

    def check_permissions(self, input, context):
        return Decision("ask", FUNCTION_TOOL_ASK)

    def call(self, input):
        return self.func(**self._arguments(input))

    def _arguments(self, input):
        """The input's parameters by name, defaults filled in, unknown keys refused."""
        params = inspect.signature(self.func).parameters
        unknown = sorted(set(input) - set(params))
        if unknown:
            raise ToolError.invalid_input(f"unknown parameter(s) {', '.join(unknown)} for {self.name}")
        args = {}
        for name, param in params.items():
            if input.get(name) is not None:
                args[name] = input[name]
            elif param.default is param.empty:
                args[name] = None  # optional (the schema made every other one required)
        return args


def tool(func=None, *, name=None, description=None, schema=None, read_only=False, concurrency_safe=False,
         reads=(), writes=(), exec=False, network=False, state=False):
    """Makes a function a tool (use as ``@tool`` or ``@tool(...)``).

    - name: the function's name, or ``name=``;
    - description: the docstring before its ``Args:`` section, or ``description=``;
    - input schema: the type hints, the ``Args:`` descriptions and the
      defaults (see ``toolhost_sdk.schema``), or the whole ``schema=`` dict;
    - flags: ``read_only`` (a bool, or a function of the arguments deciding
      per call), ``concurrency_safe``;
    - capabilities: ``reads=["$WORKDIRS"]``, ``writes=[...]``, ``exec=True``,
      ``network=True``, ``state=True`` (the agent state);
    - output: the return value (``str``, ``Chunk``, a JSON value, ``None``),
      or each value it yields, sent as it comes (streaming);
    - errors: raise ``ToolError``; any other exception ends the call with an
      error result naming it.

    Permission: like AgentScope's function tools, an ask (not a safety ask),
    so a call runs once a rule (``--allow NAME``) or the user allows it;
    read-only calls are allowed without asking.
    """
    def wrap(f):
        return FunctionTool(f, name, description, schema, read_only, concurrency_safe, reads, writes, exec,
                            network, state)
    return wrap(func) if func is not None else wrap


def parse_input(text):
    """The input JSON as a dict (the host validated it against the schema)."""
    value = json.loads(text) if text else {}
    if not isinstance(value, dict):
        raise ToolError.invalid_input("the input must be a JSON object")
    return value
