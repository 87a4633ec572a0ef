"""Middleware: a function wrapped around every call of the tools it is
attached to, written with ``@middleware``."""

__all__ = ["middleware", "FunctionMiddleware", "Inner"]


class Inner:
    """One run of the inner layers: iterate it for their chunks (``Chunk``
    values, as they come), then ``outcome()`` raises their ``ToolError``,
    if any."""

    def __init__(self, raw, to_chunk, raise_error):
        self._raw, self._to_chunk, self._raise = raw, to_chunk, raise_error

    def __iter__(self):
        while True:
            chunk = self._raw.next_chunk()
            if chunk is None:
                return
            yield self._to_chunk(chunk)

    def outcome(self):
        """Raises the inner layers' ``ToolError`` if they failed."""
        self._raise(self._raw.outcome)


class FunctionMiddleware:
    """A function ``(tool, input, next)`` as a middleware; made by ``@middleware``."""

    def __init__(self, func, name, description):
        if not name:
            raise ValueError("a middleware needs a name= (settings attach it by name)")
        self.func, self.name = func, name
        self.description = description or (func.__doc__ or "").strip()
        self.__doc__, self.__wrapped__ = func.__doc__, func

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


def middleware(*, name, description=None):
    """Makes ``f(tool, input, next)`` a middleware.

    ``tool`` is a ``ToolInfo``; ``input`` the call's input as a dict;
    ``next(input)`` runs the inner layers (the next middleware, finally the
    tool) and returns an ``Inner`` to iterate; pass a changed dict to change
    the input (the host decides the permission again). Send chunks with
    ``output.emit``: forward, change, drop or replace them. Not calling
    ``next`` short-circuits the tool; calling it again retries. Raise
    ``ToolError`` to fail the call.
    """
    def wrap(f):
        return FunctionMiddleware(f, name, description)
    return wrap
