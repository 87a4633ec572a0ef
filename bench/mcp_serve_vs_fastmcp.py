#!/usr/bin/env python3
"""`toolhost serve` against the Python SDK's FastMCP server, side by side.

The same trivial tool (Greet: the `greet` example component in toolhost,
sandboxed, with the permission engine deciding every call through an
allow rule; a Python function in FastMCP) is called by the same Python
client (`mcp` 2.3.0) over stdio and streamable HTTP, with 1 and 32 calls
in flight on one client session. Reports calls/s, p50/p99 latency, the
server's CPU time per call and peak resident memory (VmHWM), and the ratio
toolhost/FastMCP of calls/s. The Python client takes a core of its own: where
it is the bound, calls/s say more about the client than the server, and the
server's CPU per call is the fairer comparison.

    target/mcp-venv/bin/python bench/mcp_serve_vs_fastmcp.py --toolhost target/release/toolhost \\
        [--plugin greet.wasm] [--calls 2000] [--inflight 1,32] [--transports stdio,http] [--clients N]
        [--client sdk|raw] [--json OUT]

`--client raw` drives the HTTP servers with a thin JSON-RPC client instead of
the SDK's (the same one for both), for when the SDK client is the bound.

Run it with the venv the MCP tests make (target/mcp-venv, mcp==2.3.0).
"""

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "bench" / "mcp_fastmcp_server.py"
ARGS = {"name": "bench"}
EXPECT = "Hello, bench!"


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid):
    """User + system CPU time of `pid` so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids():
    """Processes whose parent is this one (the stdio server the SDK started)."""
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                out.append(int(d))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def toolhost_cmd(opts):
    return [
        opts.toolhost,
        "--cache-dir",
        opts.cache_dir,
        "--no-builtins",
        "--plugin",
        opts.plugin,
        "--allow",
        "Greet",
        "serve",
    ]


def fastmcp_cmd():
    return [sys.executable, str(PEER)]


def start_http(server, opts):
    """Starts an HTTP server process; returns (process, url)."""
    if server == "toolhost":
        proc = subprocess.Popen(
            toolhost_cmd(opts) + ["--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True
        )
        for line in proc.stderr:
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].strip()
                break
        else:
            raise RuntimeError("toolhost serve exited before listening")
        return proc, url
    port = free_port()
    proc = subprocess.Popen(fastmcp_cmd() + ["http", str(port)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the FastMCP server did not listen")


class RawHttpClient:
    """A thin MCP client for the HTTP figures (`--client raw`): JSON-RPC over
    streamable HTTP with a 2025-11-25 session (initialize, initialized, then
    `tools/call` POSTs), no schema validation or SDK machinery, so that the
    client is not what bounds the calls per second. The same client drives
    both servers."""

    PROTOCOL = "2025-11-25"

    class Result:
        def __init__(self, reply):
            result = reply.get("result") or {}
            self.is_error = "error" in reply or bool(result.get("isError"))
            self.content = [type("Text", (), {"text": c.get("text", "")})() for c in result.get("content", [])]

    def __init__(self, url):
        self.url = url
        self.http = httpx2.AsyncClient(timeout=120, limits=httpx2.Limits(max_connections=64, max_keepalive_connections=64))
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                        "MCP-Protocol-Version": self.PROTOCOL}
        self.next_id = 0

    async def _post(self, body):
        r = await self.http.post(self.url, content=json.dumps(body), headers=self.headers)
        r.raise_for_status()
        if "id" not in body:
            return r, None
        text = r.text
        if text.lstrip().startswith("{"):
            return r, json.loads(text)
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message = json.loads(line[5:])
                if message.get("id") == body["id"]:
                    return r, message
        raise RuntimeError(f"no reply to request {body['id']}: {text[:200]}")

    def _id(self):
        self.next_id += 1
        return self.next_id

    async def __aenter__(self):
        init = {"jsonrpc": "2.0", "id": self._id(), "method": "initialize",
                "params": {"protocolVersion": self.PROTOCOL, "capabilities": {},
                           "clientInfo": {"name": "bench-raw", "version": "0"}}}
        r, _ = await self._post(init)
        if r.headers.get("Mcp-Session-Id"):
            self.headers["Mcp-Session-Id"] = r.headers["Mcp-Session-Id"]
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc):
        await self.http.aclose()

    async def list_tools(self):
        await self._post({"jsonrpc": "2.0", "id": self._id(), "method": "tools/list"})

    async def call_tool(self, name, args):
        body = {"jsonrpc": "2.0", "id": self._id(), "method": "tools/call", "params": {"name": name, "arguments": args}}
        _, reply = await self._post(body)
        return self.Result(reply)


async def measure(client, calls, inflight, warmup, server_pid):
    for _ in range(warmup):
        await client.call_tool("Greet", ARGS)
    latencies = []
    cpu_before = cpu_seconds(server_pid())

    async def worker(n):
        for _ in range(n):
            t = time.perf_counter()
            r = await client.call_tool("Greet", ARGS)
            latencies.append(time.perf_counter() - t)
            text = "".join(getattr(c, "text", "") for c in r.content)
            if r.is_error or EXPECT not in text:
                raise RuntimeError(f"unexpected result: {r}")

    share = [calls // inflight + (1 if i < calls % inflight else 0) for i in range(inflight)]
    started = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in share))
    wall = time.perf_counter() - started
    cpu = cpu_seconds(server_pid()) - cpu_before
    latencies.sort()
    return {
        "calls": calls,
        "server_cpu_us_per_call": cpu / calls * 1e6,
        "calls_per_s": calls / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


async def worker_main(url, calls, inflight, warmup, mode):
    """One of several client processes (--clients): connects, warms up,
    says "ready", waits for "go" on stdin, runs its calls and prints its
    latencies."""
    http = httpx2.AsyncClient(timeout=120, limits=httpx2.Limits(max_connections=64, max_keepalive_connections=64))
    async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
        await c.list_tools()
        for _ in range(warmup):
            await c.call_tool("Greet", ARGS)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        latencies = []

        async def one(n):
            for _ in range(n):
                t = time.perf_counter()
                r = await c.call_tool("Greet", ARGS)
                latencies.append(time.perf_counter() - t)
                if r.is_error:
                    raise RuntimeError(f"unexpected result: {r}")

        share = [calls // inflight + (1 if i < calls % inflight else 0) for i in range(inflight)]
        await asyncio.gather(*(one(n) for n in share))
        print(json.dumps(latencies), flush=True)


def run_clients(url, server_pid, inflight, opts):
    """--clients N over HTTP: the calls and the calls in flight split over N
    client processes, started together."""
    n = opts.clients
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", url, str(opts.calls // n), str(max(inflight // n, 1)),
             str(opts.warmup), opts.mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for _ in range(n)
    ]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError("a client process failed to start")
    cpu_before = cpu_seconds(server_pid)
    started = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    latencies = []
    for p in procs:
        latencies += json.loads(p.stdout.readline())
        p.wait()
    wall = time.perf_counter() - started
    cpu = cpu_seconds(server_pid) - cpu_before
    latencies.sort()
    calls = len(latencies)
    return {
        "calls": calls,
        "server_cpu_us_per_call": cpu / calls * 1e6,
        "calls_per_s": calls / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(calls - 1, int(calls * 0.99))] * 1000,
        "peak_rss_mib": peak_rss_mib(server_pid),
    }


async def run_one(server, transport, inflight, opts):
    if transport == "stdio":
        cmd = toolhost_cmd(opts) if server == "toolhost" else fastmcp_cmd() + ["stdio"]
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
        async with Client(params, mode=opts.mode) as c:
            await c.list_tools()
            pids = child_pids()
            if len(pids) != 1:
                raise RuntimeError(f"expected one stdio server process, found {pids}")
            figures = await measure(c, opts.calls, inflight, opts.warmup, lambda: pids[0])
            figures["peak_rss_mib"] = peak_rss_mib(pids[0])
        return figures
    proc, url = start_http(server, opts)
    if opts.clients > 1:
        try:
            return run_clients(url, proc.pid, inflight, opts)
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    try:
        if opts.client == "raw":
            client = RawHttpClient(url)
        else:
            http = httpx2.AsyncClient(timeout=120, limits=httpx2.Limits(max_connections=64, max_keepalive_connections=64))
            client = Client(streamable_http_client(url, http_client=http), mode=opts.mode)
        async with client as c:
            await c.list_tools()
            figures = await measure(c, opts.calls, inflight, opts.warmup, lambda: proc.pid)
            figures["peak_rss_mib"] = peak_rss_mib(proc.pid)
        return figures
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    if sys.argv[1:2] == ["--worker"]:
        url, calls, inflight, warmup, mode = sys.argv[2:7]
        asyncio.run(worker_main(url, int(calls), int(inflight), int(warmup), mode))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--toolhost", required=True, help="the toolhost binary (a release build for figures)")
    ap.add_argument(
        "--plugin",
        default=str(ROOT / "target/test-components/examples/wasm32-wasip2/release/greet.wasm"),
        help="the greet example component (cargo test -p toolhost-e2e builds it)",
    )
    ap.add_argument("--calls", type=int, default=2000, help="timed calls per configuration")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--inflight", default="1,32")
    ap.add_argument("--transports", default="stdio,http")
    ap.add_argument("--mode", default="auto", help="auto (2026-07-28) or legacy (2025-11-25)")
    ap.add_argument("--cache-dir", default=None, help="toolhost's compile cache (default: a temporary one)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument(
        "--clients",
        type=int,
        default=1,
        help="HTTP only: split the calls in flight over this many client processes (1: one client session)",
    )
    ap.add_argument(
        "--client",
        choices=["sdk", "raw"],
        default="sdk",
        help="HTTP only: the MCP SDK's client (sdk), or a thin JSON-RPC client (raw, a 2025-11-25 session) "
        "light enough not to be the bound",
    )
    opts = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    opts.cache_dir = opts.cache_dir or tmp.name
    rows = []
    for transport in opts.transports.split(","):
        for inflight in [int(n) for n in opts.inflight.split(",")]:
            pair = {}
            for server in ["fastmcp", "toolhost"]:
                pair[server] = asyncio.run(run_one(server, transport, inflight, opts))
                rows.append({"server": server, "transport": transport, "inflight": inflight, **pair[server]})
            ratio = pair["toolhost"]["calls_per_s"] / pair["fastmcp"]["calls_per_s"]
            rows[-1]["ratio_vs_fastmcp"] = ratio
    print(
        "| transport | in flight | server | calls/s | p50 ms | p99 ms | server CPU µs/call | peak RSS MiB "
        "| toolhost/FastMCP calls/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['ratio_vs_fastmcp']:.2f}×" if "ratio_vs_fastmcp" in r else ""
        print(
            f"| {r['transport']} | {r['inflight']} | {r['server']} | {r['calls_per_s']:.0f} | {r['p50_ms']:.2f} "
            f"| {r['p99_ms']:.2f} | {r['server_cpu_us_per_call']:.0f} | {r['peak_rss_mib']:.0f} | {ratio} |"
        )
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
