"""Output chunks, permission answers and the context a check sees, as plain
Python values (the SDK converts them to and from the WIT records)."""

import json
from dataclasses import dataclass, field

__all__ = ["Chunk", "Data", "Decision", "Rule", "Context", "ToolInfo", "allow", "deny", "ask", "passthrough"]

#: The WIT ``result-state`` cases.
STATES = ("running", "success", "error", "interrupted", "denied")


@dataclass
class Data:
    """Binary content for the model (an image, a PDF): raw bytes."""

    data: bytes
    media_type: str
    name: str = None
    id: str = None


@dataclass
class Chunk:
    """One piece of output: text and data blocks, a state and metadata
    merged into the response (a dict, or ``None``)."""

    content: list = field(default_factory=list)
    state: str = "running"
    metadata: dict = None

    @property
    def text(self):
        """The chunk's text blocks, joined."""
        return "".join(b for b in self.content if isinstance(b, str))

    def map_text(self, f):
        """A copy with every text block replaced by ``f(text)``."""
        return Chunk([f(b) if isinstance(b, str) else b for b in self.content], self.state, self.metadata)

    @classmethod
    def of(cls, value):
        """A chunk from what a tool yields or returns: a ``Chunk``, a ``str``,
        ``bytes`` (sent as text, UTF-8), ``Data``, or any JSON value (as its
        JSON text)."""
        if isinstance(value, Chunk):
            return value
        if isinstance(value, str):
            return cls([value])
        if isinstance(value, (bytes, bytearray)):
            return cls([bytes(value).decode("utf-8", "replace")])
        if isinstance(value, Data):
            return cls([value])
        return cls([json.dumps(value)])


@dataclass
class Rule:
    """A permission rule: ``Rule("WordCount")`` covers every call of the
    tool, ``Rule("WordCount", "/src/")`` what ``match_rule`` says it covers."""

    tool_name: str
    content: str = None
    behavior: str = "allow"


@dataclass
class Decision:
    """The answer of ``check_permissions``: ``behavior`` is ``allow``,
    ``deny``, ``ask`` or ``passthrough``."""

    behavior: str
    message: str = ""
    reason: str = None
    bypass_immune: bool = False
    suggested_rules: list = field(default_factory=list)


def allow(message="", reason=None):
    """Run the call."""
    return Decision("allow", message, reason)


def deny(message, reason=None):
    """Refuse the call; ``message`` reaches the model."""
    return Decision("deny", message, reason)


def ask(message, reason=None, bypass_immune=False):
    """Ask the user; ``bypass_immune`` makes it a safety ask no rule silences."""
    return Decision("ask", message, reason, bypass_immune)


def passthrough(message=""):
    """No opinion: the user's rules and the mode decide."""
    return Decision("passthrough", message)


@dataclass
class Context:
    """What a permission check may look at: ``mode`` (``default``,
    ``accept-edits``, ``explore``, ``bypass``, ``dont-ask``), the working
    directories, ``cwd``, ``home`` and the tool's own settings (a dict)."""

    mode: str
    working_directories: list
    cwd: str
    home: str
    tool_config: dict


@dataclass
class ToolInfo:
    """What a middleware sees of the tool it wraps."""

    name: str
    description: str
    input_schema: dict
    read_only: bool
    concurrency_safe: bool
