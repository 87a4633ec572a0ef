"""toolhost_sdk: write toolhost tools and middleware in Python.

A tool is one decorated function (or a ``ToolBase`` subclass); ``export``
turns it into the class componentize-py exports::

    from toolhost_sdk import tool, export

    @tool(read_only=True)
    def shout(text: str) -> str:
        \"\"\"Upper-cases text.

        Args:
            text: What to shout.
        \"\"\"
        return text.upper()

    Tool = export(shout)

A middleware is ``@middleware(name=...)`` on ``f(tool, input, next)`` and
``Middleware = export_middleware(f)``. The host's interfaces are the
modules ``backend``, ``state``, ``log`` and ``output``.
"""

from . import backend, log, output, state
from .chunks import Chunk, Context, Data, Decision, Rule, ToolInfo, allow, ask, deny, passthrough
from .errors import ToolError
from .middleware import FunctionMiddleware, middleware
from .output import emit
from .tool import FUNCTION_TOOL_ASK, FunctionTool, ToolBase, tool

__all__ = ["tool", "ToolBase", "FunctionTool", "export", "middleware", "export_middleware", "ToolError", "Chunk",
           "Data", "Decision", "Rule", "Context", "ToolInfo", "allow", "deny", "ask", "passthrough", "emit",
           "backend", "state", "log", "output", "FUNCTION_TOOL_ASK"]


def _in_component():
    """Whether the componentize-py bindings (``wit_world``) are importable:
    in a component build, not under plain Python (unit tests)."""
    import importlib.util
    return importlib.util.find_spec("wit_world") is not None


def export(t):
    """The ``Tool`` class to bind in the app module (``Tool = export(my_tool)``):
    componentize-py exports the module's ``Tool`` for the WIT ``tool`` interface.
    Under plain Python (no ``wit_world`` bindings) it returns ``None``, so the
    module still imports in unit tests."""
    if isinstance(t, type) and issubclass(t, ToolBase):
        t = t()
    if not isinstance(t, ToolBase):
        raise TypeError("export() takes a @tool function or a ToolBase subclass (or instance)")
    if not t.name:
        raise ValueError(f"{type(t).__name__} has no name")
    if not _in_component():
        return None
    from ._wit import export_tool
    return export_tool(t)


def export_middleware(m):
    """The ``Middleware`` class to bind in the app module
    (``Middleware = export_middleware(my_middleware)``)."""
    if not isinstance(m, FunctionMiddleware):
        raise TypeError("export_middleware() takes a @middleware function")
    if not _in_component():
        return None
    from ._wit import export_middleware as _export
    return _export(m)
