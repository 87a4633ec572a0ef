"""The AgentScope peer of host/benches/engine.rs: PermissionEngine.check_permission
for a tool whose own checks are trivial, with the same 60 rules and the same
four situations, p50/p99 in microseconds.

Run: /tmp/as-venv/bin/python bench/agentscope_engine.py 20000
"""
import asyncio
import sys
import time

from agentscope.permission import (PermissionBehavior, PermissionContext, PermissionDecision, PermissionEngine,
                                   PermissionRule)
from agentscope.tool import ToolBase


class Trivial(ToolBase):
    name = "Trivial"
    description = "trivial"
    input_schema = {"type": "object", "properties": {"command": {"type": "string"}}}
    is_concurrency_safe = True
    is_read_only = False

    async def check_read_only(self, tool_input):
        return tool_input.get("command", "").startswith("status")

    async def check_permissions(self, tool_input, context):
        return PermissionDecision(behavior=PermissionBehavior.PASSTHROUGH, message="")

    async def match_rule(self, rule_content, tool_input):
        c = tool_input.get("command", "")
        prefix = rule_content[:-2] if rule_content.endswith(":*") else rule_content
        return c == prefix or c.startswith(prefix + " ")

    async def call(self, **kwargs):
        raise NotImplementedError


def rules():
    out = []
    for i in range(40):
        out.append(("allow", f"cmd{i}:*"))
    for i in range(15):
        out.append(("deny", f"danger{i}:*"))
    for i in range(5):
        out.append(("ask", f"careful{i}:*"))
    return out


async def main(n: int) -> None:
    engine = PermissionEngine(PermissionContext())
    for behavior, content in rules():
        engine.add_rule(PermissionRule(tool_name="Trivial", rule_content=content,
                                       behavior=PermissionBehavior(behavior), source="bench"))
    tool = Trivial()
    cases = {"deny rule": "danger14 now", "allow rule": "cmd39 run", "fallback ask": "unknown thing",
             "read-only": "status"}
    for name, command in cases.items():
        samples = []
        for i in range(n + 500):
            start = time.perf_counter()
            await engine.check_permission(tool, {"command": command})
            if i >= 500:
                samples.append((time.perf_counter() - start) * 1e6)
        samples.sort()
        print(f"{name}\t{samples[len(samples) // 2]:.2f}\t{samples[int(len(samples) * 0.99)]:.2f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
