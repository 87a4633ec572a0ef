"""The backend's files and processes, as far as the user granted them (the
WIT ``backend`` interface). Every function raises ``ToolError`` (``denied``
for a path outside the grants, ``not-found``, ``io``...) instead of
returning an error value."""

from ._wit import unwrap

__all__ = ["cwd", "expand_user", "os", "read_file", "read_text", "write_file", "stat", "list_dir", "create_dir",
           "remove", "real_path", "walk", "run"]


def _b():
    from wit_world.imports import backend
    return backend


def cwd():
    """The backend's working directory (absolute)."""
    return _b().cwd()


def expand_user(path):
    """``~`` and ``~/...`` expanded to the backend user's home."""
    return _b().expand_user(path)


def os():
    """``"posix"`` or ``"windows"``: which shell the backend runs."""
    return _b().os().name.lower()


def read_file(path):
    """The file's bytes."""
    return unwrap(_b().read_file, path)


def read_text(path):
    """The file as text (UTF-8, undecodable bytes replaced)."""
    return read_file(path).decode("utf-8", "replace")


def write_file(path, contents):
    """Writes the whole file atomically (``str`` is written as UTF-8)."""
    if isinstance(contents, str):
        contents = contents.encode("utf-8")
    unwrap(_b().write_file, path, bytes(contents))


def stat(path):
    """``FileStat`` (kind, size, mtime_ns) of a path, symlinks followed."""
    return unwrap(_b().stat, path)


def list_dir(path):
    """The entries of a directory (``DirEntry``: path, kind, size, mtime_ns)."""
    return unwrap(_b().list_dir, path)


def create_dir(path):
    """Creates a directory and its missing parents."""
    unwrap(_b().create_dir, path)


def remove(path):
    """Removes a file, or a directory with everything under it."""
    unwrap(_b().remove, path)


def real_path(path):
    """The path with every symlink resolved."""
    return unwrap(_b().real_path, path)


def walk(root, globs=(), hidden=False, respect_ignore_files=True, max_entries=0, match_names=()):
    """The files under ``root`` (absolute paths), walked natively by the host."""
    b = _b()
    options = b.WalkOptions(root, list(globs), None, hidden, respect_ignore_files, False, max_entries,
                            list(match_names))
    return [e.path for e in unwrap(b.walk, options)]


def run(argv, cwd=None, env=None, timeout_ms=60_000):
    """Runs a program (needs the ``exec`` grant) and returns
    ``(exit_code, stdout, stderr)`` as text once it has ended."""
    b = _b()
    request = b.ExecRequest(list(argv), cwd, list((env or {}).items()), timeout_ms, 0)
    process = unwrap(b.spawn, request)
    out, err = [], []
    while (piece := process.next_output()) is not None:
        (out if isinstance(piece, b.OutputPiece_Stdout) else err).append(bytes(piece.value))
    status = process.wait()
    return status.code, b"".join(out).decode("utf-8", "replace"), b"".join(err).decode("utf-8", "replace")
