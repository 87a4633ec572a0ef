"""The AgentScope peer of tests/benches/foundation.rs: a trivial function
tool called in-process with a permission check, p50/p99 in microseconds.

Install: python3 -m venv /tmp/as-venv && /tmp/as-venv/bin/pip install agentscope==2.0.11
Run:     /tmp/as-venv/bin/python bench/agentscope_call.py 5000
"""
import asyncio
import statistics
import sys
import time


async def main(n: int) -> None:
    from agentscope.tool import Toolkit, FunctionTool  # noqa: F401
    from agentscope.permission import PermissionContext, PermissionEngine  # noqa: F401

    def echo(text: str) -> str:
        """Returns its text.

        Args:
            text: the text
        """
        return text

    tool = FunctionTool(echo, is_read_only=True)
    toolkit = Toolkit(tools=[tool])
    ctx = PermissionContext()
    engine = PermissionEngine(ctx)
    from agentscope.message import ToolCallBlock
    from agentscope.state import AgentState

    state = AgentState()

    samples = []
    for i in range(n + 200):
        call = ToolCallBlock(id=str(i), name="echo", input='{"text": "hi"}')
        start = time.perf_counter()
        decision = await engine.check_permission(tool, {"text": "hi"})
        assert decision is not None
        last = None
        async for item in toolkit.call_tool(call, state):
            last = item
        elapsed = time.perf_counter() - start
        if i >= 200:
            samples.append(elapsed * 1e6)
    assert last is not None and "hi" in str(last), last
    samples.sort()
    print(f"p50_us {statistics.median(samples):.1f}")
    print(f"p99_us {samples[int(len(samples) * 0.99) - 1]:.1f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000))
