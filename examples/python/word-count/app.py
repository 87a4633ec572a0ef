"""`word_count`: counts the lines, words and bytes of text files, like `wc`
(the Python twin of examples/components/word-count).

It streams one line per file as it goes, reads through the backend (the
user grants `--grant word_count=fs-read`), and with `remember=true` adds the
totals to a running count kept in the agent state (`--grant
word_count=state`, `toolhost call --session NAME`).
"""

from toolhost_sdk import Chunk, ToolError, backend, export, state, tool


def counts(data: bytes):
    text = data.decode("utf-8", "replace")
    return data.count(b"\n"), len(text.split()), len(data)


@tool(
    read_only=lambda paths, remember=False: not remember,
    concurrency_safe=True,
    reads=["$WORKDIRS"],
    state=True,
)
def word_count(paths: list[str], remember: bool = False):
    """Counts lines, words and bytes of text files (like `wc`). Pass absolute paths.

    Args:
        paths: Absolute paths of the files to count.
        remember: Add the totals to the running count kept for this session.
    """
    if not paths:
        raise ToolError.invalid_input("pass at least one path")
    total = [0, 0, 0]
    rows = []
    for path in paths:
        lines, words, size = counts(backend.read_file(path))
        yield f"{lines:>8} {words:>8} {size:>8} {path}\n"
        rows.append({"path": path, "lines": lines, "words": words, "bytes": size})
        total = [total[0] + lines, total[1] + words, total[2] + size]
    if len(paths) > 1:
        yield f"{total[0]:>8} {total[1]:>8} {total[2]:>8} total\n"
    if remember:
        seen = state.get("word_count.words", 0) + total[1]
        state.set("word_count.words", seen)
        yield f"{seen} words counted in this session\n"
    yield Chunk(metadata={"files": rows})


Tool = export(word_count)
