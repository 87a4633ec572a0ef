"""The agent state (the WIT ``state`` interface), for tools declared with
``state=True``: JSON values under keys, kept by the host between calls of a
session, and the read cache of files. Values are Python values (stored as
JSON); failures (state not granted, ``set`` in a read-only call, a value
over the size limit) raise ``ToolError`` of kind ``denied``."""

import json

from .errors import ToolError

__all__ = ["get", "set", "compare_and_set", "cache_file", "cached_file", "forget_file"]


def _s():
    from wit_world.imports import state
    return state


def _call(f, *args):
    from componentize_py_types import Err
    try:
        return f(*args)
    except Err as e:
        raise ToolError(f"state: {e.value}", "denied") from None


def get(key, default=None):
    """The value stored under ``key``, or ``default``."""
    text = _call(_s().get, key)
    return default if text is None else json.loads(text)


def set(key, value):
    """Stores ``value`` (any JSON value) under ``key``."""
    _call(_s().set, key, json.dumps(value))


def compare_and_set(key, expected, value):
    """Stores ``value`` only if the stored value still equals ``expected``
    (``None``: nothing stored); ``False`` when another call changed it first."""
    return _call(_s().compare_and_set, key, None if expected is None else json.dumps(expected), json.dumps(value))


def cache_file(path, content):
    """Records that the tool has just read ``path`` with this content."""
    _s().cache_file(path, content)


def cached_file(path):
    """The content recorded by ``cache_file``, or ``None``."""
    return _s().cached_file(path)


def forget_file(path):
    """Forgets a cached file."""
    _s().forget_file(path)
