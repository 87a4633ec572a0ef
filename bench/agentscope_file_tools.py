"""The AgentScope peer of tests/benches/per_call.rs: AgentScope 2.0.11's own
Read, Glob and TaskList tools called in-process, each call a permission
check then `Toolkit.call_tool`, as `bench/agentscope_call.py` does for the
trivial function tool. Same fixture as the Rust side: DIR holds `s.txt`
(20 short lines) and `f0.rs` .. `f4.rs`; three tasks exist before TaskList.

Install: python3 -m venv /tmp/as-venv && /tmp/as-venv/bin/pip install agentscope==2.0.11
Run:     /tmp/as-venv/bin/python bench/agentscope_file_tools.py DIR 2000

Prints `TOOL p50_us X` and `TOOL p99_us Y` lines (TOOL: echo, Read, Glob,
TaskList).
"""
import asyncio
import json
import statistics
import sys
import time

WARMUP = 100


async def timed(engine, toolkit, state, tool, name: str, args: dict, n: int, expect: str) -> list:
    from agentscope.message import ToolCallBlock

    samples = []
    text = json.dumps(args)
    last = None
    for i in range(n + WARMUP):
        call = ToolCallBlock(id=f"{name}{i}", name=name, input=text)
        start = time.perf_counter()
        decision = await engine.check_permission(tool, args)
        assert decision is not None
        async for item in toolkit.call_tool(call, state):
            last = item
        elapsed = time.perf_counter() - start
        if i >= WARMUP:
            samples.append(elapsed * 1e6)
    assert expect in str(last), (name, last)
    return samples


def report(name: str, samples: list) -> None:
    samples.sort()
    print(f"{name} p50_us {statistics.median(samples):.1f}")
    print(f"{name} p99_us {samples[int(len(samples) * 0.99) - 1]:.1f}")


async def main(directory: str, n: int, glob_n: int) -> None:
    from agentscope.tool import Toolkit, FunctionTool, Read, Glob, TaskList, TaskCreate
    from agentscope.permission import PermissionContext, PermissionEngine
    from agentscope.message import ToolCallBlock
    from agentscope.state import AgentState

    def echo(text: str) -> str:
        """Returns its text.

        Args:
            text: the text
        """
        return text

    tools = {
        "echo": FunctionTool(echo, is_read_only=True),
        "Read": Read(),
        "Glob": Glob(),
        "TaskList": TaskList(),
        "TaskCreate": TaskCreate(),
    }
    toolkit = Toolkit(tools=list(tools.values()))
    engine = PermissionEngine(PermissionContext())
    state = AgentState()
    for i in range(3):
        call = ToolCallBlock(
            id=f"create{i}",
            name="TaskCreate",
            input=json.dumps({"subject": f"task {i}", "description": "something to do"}),
        )
        async for _ in toolkit.call_tool(call, state):
            pass

    runs = [
        ("echo", {"text": "hi"}, n, "hi"),
        ("Read", {"file_path": f"{directory}/s.txt"}, n, "line 20"),
        # AgentScope's Glob starts a Python helper process per call.
        ("Glob", {"pattern": "*.rs", "path": directory}, glob_n, "f4.rs"),
        ("TaskList", {}, n, "task 2"),
    ]
    for name, args, count, expect in runs:
        report(name, await timed(engine, toolkit, state, tools[name], name, args, count, expect))


if __name__ == "__main__":
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    asyncio.run(main(sys.argv[1], iterations, max(50, iterations // 20)))
