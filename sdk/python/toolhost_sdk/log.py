"""Lines for the host's log (``toolhost -v``), never shown to the model."""

__all__ = ["trace", "debug", "info", "warn", "error"]


def _log(level, message):
    from wit_world.imports import log
    log.log(getattr(log.Level, level), str(message))


def trace(message):
    """Logs at trace level."""
    _log("TRACE", message)


def debug(message):
    """Logs at debug level."""
    _log("DEBUG", message)


def info(message):
    """Logs at info level."""
    _log("INFO", message)


def warn(message):
    """Logs at warn level."""
    _log("WARN", message)


def error(message):
    """Logs at error level."""
    _log("ERROR", message)
