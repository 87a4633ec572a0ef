"""Errors a tool raises to end a call, mapped to the WIT ``tool-error``."""

__all__ = ["ToolError", "KINDS"]

#: The cases of the WIT ``tool-error`` variant, as ``ToolError.kind`` names them.
KINDS = ("invalid-input", "denied", "not-found", "timeout", "io", "unsupported", "internal")


class ToolError(Exception):
    """Ends a call with the WIT ``tool-error`` case ``kind`` and this message.

    Raise it from a tool (``raise ToolError.not_found("no such task 7")``);
    the backend and state functions raise it too, so a denied read ends the
    call as ``denied`` unless the tool catches it. Any other exception a
    function tool raises becomes an error result ``Error: <Type>: <text>``.
    """

    def __init__(self, message, kind="internal"):
        if kind not in KINDS:
            raise ValueError(f"ToolError kind {kind!r} is not one of {', '.join(KINDS)}")
        super().__init__(message)
        self.kind = kind
        self.message = str(message)

    def __repr__(self):
        return f"ToolError({self.message!r}, kind={self.kind!r})"

    @classmethod
    def invalid_input(cls, message):
        """The input is not acceptable; say what to change."""
        return cls(message, "invalid-input")

    @classmethod
    def denied(cls, message):
        """A capability was not granted, or a path is outside the grants."""
        return cls(message, "denied")

    @classmethod
    def not_found(cls, message):
        """A file, task or other named thing does not exist."""
        return cls(message, "not-found")

    @classmethod
    def timeout(cls, message):
        """The operation ran out of time."""
        return cls(message, "timeout")

    @classmethod
    def io(cls, message):
        """An I/O or process failure."""
        return cls(message, "io")

    @classmethod
    def unsupported(cls, message):
        """The operation is not available here."""
        return cls(message, "unsupported")

    @classmethod
    def internal(cls, message):
        """A bug or an unexpected state inside the tool."""
        return cls(message, "internal")
