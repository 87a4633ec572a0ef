"""Sending output while a call runs (the WIT ``output`` interface). A
function tool usually just returns or yields; ``emit`` is for middleware
and for tools that send data blocks or metadata."""

from .chunks import Chunk

__all__ = ["emit", "text", "error"]


def emit(chunk):
    """Sends a ``Chunk`` (or a ``str``) at once; ``False`` once the call's
    output cap is reached (stop producing)."""
    from ._wit import emit as _emit
    return _emit(chunk)


def text(text, metadata=None):
    """Sends text, with a metadata dict merged into the response."""
    return emit(Chunk([text], "running", metadata))


def error(text):
    """Sends an error chunk: the response ends in state ``error``."""
    return emit(Chunk([text], "error"))
