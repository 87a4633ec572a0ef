"""The AgentScope peer of tests/benches/guest_languages.rs: the word-count
function of examples/python/word-count, as an AgentScope 2.0.11 function
tool called in-process (permission check + call), p50/p99 in microseconds.

Install: python3 -m venv /tmp/as-venv && /tmp/as-venv/bin/pip install agentscope==2.0.11
Run:     /tmp/as-venv/bin/python bench/agentscope_word_count.py FILE 2000
"""
import asyncio
import json
import statistics
import sys
import time


def counts(data: bytes):
    text = data.decode("utf-8", "replace")
    return data.count(b"\n"), len(text.split()), len(data)


def word_count(paths: list[str]) -> str:
    """Counts lines, words and bytes of text files (like `wc`). Pass absolute paths.

    Args:
        paths: Absolute paths of the files to count.
    """
    out = []
    for path in paths:
        with open(path, "rb") as f:
            lines, words, size = counts(f.read())
        out.append(f"{lines:>8} {words:>8} {size:>8} {path}\n")
    return "".join(out)


async def main(path: str, n: int) -> None:
    from agentscope.tool import Toolkit, FunctionTool
    from agentscope.permission import PermissionContext, PermissionEngine
    from agentscope.message import ToolCallBlock
    from agentscope.state import AgentState

    tool = FunctionTool(word_count, is_read_only=True)
    toolkit = Toolkit(tools=[tool])
    engine = PermissionEngine(PermissionContext())
    state = AgentState()
    args = {"paths": [path]}
    samples = []
    for i in range(n + 1):
        call = ToolCallBlock(id=str(i), name="word_count", input=json.dumps(args))
        start = time.perf_counter()
        assert await engine.check_permission(tool, args) is not None
        last = None
        async for item in toolkit.call_tool(call, state):
            last = item
        samples.append((time.perf_counter() - start) * 1e6)
    assert last is not None and path in str(last), last
    first, rest = samples[0], sorted(samples[1:])
    print(f"first_us {first:.1f}")
    print(f"p50_us {statistics.median(rest):.1f}")
    print(f"p99_us {rest[int(len(rest) * 0.99) - 1]:.1f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000))
