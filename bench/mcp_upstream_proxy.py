#!/usr/bin/env python3
"""The added cost of a call proxied through toolhost to an upstream MCP server.

The same client (a thin JSON-RPC client over stdio, below) calls the same tool
(`lookup` of tests/mcp/upstream_server.py, read-only, so toolhost's
permission engine allows it on its fast path) two ways in one run,
alternating rounds so drift on a loaded machine hits both alike:

- direct: the client starts the upstream server itself over stdio;
- proxied: the client starts `toolhost serve` over stdio, configured with
  `[mcp_servers.up]` starting the same server over stdio; the call is
  `mcp__up__lookup` (schema check, permission engine, the rmcp client, the
  upstream's answer read into a chunk, back out as an MCP result).

Reports p50 and p99 of each, and the added p50 and p99 (proxied - direct).

    target/mcp-venv/bin/python bench/mcp_upstream_proxy.py --toolhost /tmp/upstream-toolhost \\
        [--calls 2000] [--rounds 4] [--json OUT]
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "mcp" / "upstream_server.py"
ARGS = {"word": "bench"}
EXPECT = "bench: found upstream"


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


class RawStdio:
    """A thin JSON-RPC client over a server's stdin/stdout (2025-11-25,
    `initialize`), the same for both servers, so that no SDK work (such as
    validating structured content against an output schema the proxied
    tool does not carry) differs between the two."""

    def __init__(self, argv, cwd, env):
        self.argv, self.cwd, self.env, self.next_id = argv, cwd, env, 0

    async def __aenter__(self):
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env=self.env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 24,
        )
        await self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc):
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()

    async def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()

    async def request(self, method, params):
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                sys.exit(f"{self.argv[0]} closed its stdout")
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    sys.exit(f"{method}: {message['error']}")
                return message["result"]


async def measure(client, tool, calls):
    async with client as c:
        for _ in range(50):  # warm-up: the server started, caches filled
            await c.request("tools/call", {"name": tool, "arguments": ARGS})
        out = []
        for _ in range(calls):
            t = time.perf_counter()
            r = await c.request("tools/call", {"name": tool, "arguments": ARGS})
            out.append((time.perf_counter() - t) * 1e3)
            text = "".join(b.get("text", "") for b in r.get("content", []))
            if r.get("isError") or text != EXPECT:
                sys.exit(f"{tool}: unexpected answer {text!r}")
        return out


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolhost", required=True)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--json")
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="upstream-bench-"))
    (work / "toolhost.toml").write_text(
        "[mcp_servers.up]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(SERVER), 'stdio'])}\n"
        f"env = {{ UPSTREAM_NOTES = {json.dumps(str(work / 'notes'))} }}\n"
    )
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    direct = lambda: RawStdio(  # noqa: E731
        [sys.executable, str(SERVER), "stdio"], str(work), {**env, "UPSTREAM_NOTES": str(work / "notes")}
    )
    proxied = lambda: RawStdio(  # noqa: E731
        [
            str(Path(opts.toolhost).resolve()),
            "--config",
            str(work / "toolhost.toml"),
            "--cache-dir",
            str(work / "cache"),
            "serve",
        ],
        str(work),
        env,
    )
    direct_ms, proxied_ms = [], []
    per_round = max(opts.calls // opts.rounds, 1)
    for _ in range(opts.rounds):
        direct_ms += await measure(direct(), "lookup", per_round)
        proxied_ms += await measure(proxied(), "mcp__up__lookup", per_round)
    direct, proxied = direct_ms, proxied_ms
    result = {
        "calls_each": len(direct),
        "direct_p50_ms": pct(direct, 50),
        "direct_p99_ms": pct(direct, 99),
        "proxied_p50_ms": pct(proxied, 50),
        "proxied_p99_ms": pct(proxied, 99),
        "direct_mean_ms": statistics.mean(direct),
        "proxied_mean_ms": statistics.mean(proxied),
    }
    result["added_p50_ms"] = result["proxied_p50_ms"] - result["direct_p50_ms"]
    result["added_p99_ms"] = result["proxied_p99_ms"] - result["direct_p99_ms"]
    print(json.dumps(result, indent=2))
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
