"""The AgentScope peer of tests/benches/large_diff.rs: AgentScope 2.0.11's
own Write and Edit tools (each builds its `diff` metadata with
`difflib.unified_diff`) on the scenarios that bench writes, called in
process through a `Toolkit` after a `Read` of the file, as an agent would.
Prints one line per scenario: its name and the median milliseconds of the
Write or Edit call alone.

Install: python3 -m venv /tmp/as-venv && /tmp/as-venv/bin/pip install agentscope==2.0.11
Run:     /tmp/as-venv/bin/python bench/agentscope_large_diff.py SCENARIOS.json RUNS [NAME]
(NAME: only the scenario of that name).
"""
import asyncio
import json
import shutil
import statistics
import sys
import time


async def call(toolkit, state, name: str, args: dict) -> str:
    from agentscope.message import ToolCallBlock

    last = None
    async for item in toolkit.call_tool(ToolCallBlock(id="1", name=name, input=json.dumps(args)), state):
        last = item
    return str(last)


async def main(path: str, runs: int, only: str | None) -> None:
    from agentscope.state import AgentState
    from agentscope.tool import Edit, Read, Toolkit, Write

    toolkit = Toolkit(tools=[Read(), Write(), Edit()])
    with open(path, encoding="utf-8") as f:
        scenarios = json.load(f)
    for s in scenarios:
        if only is not None and s["name"] != only:
            continue
        samples = []
        for _ in range(runs):
            shutil.copyfile(s["old"], s["file"])
            state = AgentState()
            await call(toolkit, state, "Read", {"file_path": s["file"]})
            if s["tool"] == "Write":
                with open(s["new"], encoding="utf-8") as f:
                    args = {"file_path": s["file"], "content": f.read()}
            else:
                args = {"file_path": s["file"], "old_string": s["old_string"],
                        "new_string": s["new_string"], "replace_all": s["replace_all"]}
            start = time.perf_counter()
            result = await call(toolkit, state, s["tool"], args)
            samples.append((time.perf_counter() - start) * 1e3)
            assert "successfully" in result.lower(), result[:300]
            with open(s["file"], encoding="utf-8") as f, open(s["new"], encoding="utf-8") as g:
                assert f.read() == g.read(), s["name"]
        print(f"{s['name']}\t{statistics.median(samples):.1f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3, sys.argv[3] if len(sys.argv) > 3 else None))
