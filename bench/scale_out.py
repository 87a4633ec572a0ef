#!/usr/bin/env python3
"""`toolhost serve --http` replicas sharing their state in Redis, against one
process keeping it in memory, side by side in one run.

Rows: 1 replica with `[state] store = "local"`, 1 replica with `redis`, 3
replicas with `redis` behind the tests' round-robin proxy (every HTTP
request to the next replica: `target/<profile>/round_robin`). Each row calls
TaskCreate and Read (a small file) with 1 and 32 calls in flight through
the thin JSON-RPC client of `mcp_serve_vs_fastmcp.py --client raw`, each
call in flight in a 2025-11-25 session of its own and a new session every
50 calls, so that no task list grows past 50 (with 3 replicas a session's
requests land on all three, each restoring it from Redis). Reports calls/s, p50/p99, the CPU time
per call summed over the replicas and redis-server, and the Redis commands
per call: round trips (what a process sends: a script counts once; counted
with `MONITOR` over a separate pass of 200 calls, one in flight) and all
commands (`INFO commandstats`, those inside scripts included).

    target/mcp-venv/bin/python bench/scale_out.py --toolhost target/release/toolhost \\
        [--proxy target/release/round_robin] [--calls 2000] [--inflight 1,32] [--json OUT]

The machine's cores go to the replicas, the proxy, Redis and the client
alike: on 2 cores three replicas share them, so the third row shows the
cost of the coordination, not the gain of more machines.
"""

import argparse
import asyncio
import base64
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_serve_vs_fastmcp import RawHttpClient, cpu_seconds, free_port  # noqa: E402

TOOLS = ["TaskCreate", "Read"]
SESSION_CALLS = 50


def redis_cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True)
    return out.stdout


def round_trips(port, run):
    """Commands the clients send Redis while `run()` runs (MONITOR: a
    script's own commands, marked `lua`, are not round trips)."""
    log = tempfile.NamedTemporaryFile(mode="w+", suffix=".monitor")
    monitor = subprocess.Popen(["redis-cli", "-p", str(port), "MONITOR"], stdout=log, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    run()
    time.sleep(0.3)
    monitor.terminate()
    monitor.wait(timeout=5)
    log.seek(0)
    lines = [line for line in log if line[:1].isdigit()]
    return sum(1 for line in lines if " lua]" not in line and '"INFO"' not in line.upper())


def redis_commands(port):
    """Commands Redis has run so far, all kinds (INFO commandstats)."""
    total = 0
    for line in redis_cli(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            total += int(line.split("calls=", 1)[1].split(",", 1)[0])
    return total


def start_redis(folder):
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", folder, "--save", "",
         "--appendonly", "yes", "--appendfsync", "everysec"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if redis_cli(port, "PING").strip() == "PONG":
                return proc, port
        except subprocess.CalledProcessError:
            pass
        time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def settings_file(folder, redis_port, prefix):
    keyring = Path(folder) / "keyring"
    keyring.write_text(f"k1 {base64.b64encode(secrets.token_bytes(32)).decode()}\n")
    path = Path(folder) / f"{prefix}.toml"
    state = "[state]\nstore = \"local\"\n"
    if redis_port:
        state = (
            f"[state]\nstore = \"redis\"\nallow_unconfined = true\nkeyring_file = \"{keyring}\"\n"
            f"[state.redis]\nurl = \"redis://127.0.0.1:{redis_port}/0\"\nkey_prefix = \"{prefix}\"\n"
        )
    path.write_text(state)
    return path


def start_replica(opts, config, workdir, replica):
    cmd = [opts.toolhost, "--cache-dir", opts.cache_dir, "--config", str(config), "--workdir", workdir,
           "--allow", "TaskCreate", "--allow", "Read", "serve", "--http", "127.0.0.1:0", "--replica-id", replica]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].strip()
            break
    else:
        raise RuntimeError(f"replica {replica} exited before listening")
    return proc, url


def start_proxy(opts, urls):
    backends = [u.removeprefix("http://").removesuffix("/mcp") for u in urls]
    proc = subprocess.Popen([opts.proxy, *backends], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, f"http://{proc.stdout.readline().strip()}/mcp"


async def measure(url, tool, args, calls, inflight, warmup, pids, redis_port):
    """`calls` calls of `tool`, `inflight` at once, each in flight in a
    2025-11-25 session of its own (one session's task list is one
    compare-and-set loop: 32 writers on one list measure its contention, not
    the deployment)."""
    # A session holds at most SESSION_CALLS of the calls: a task list that
    # grew to thousands of tasks would measure its own size.
    share = [calls // inflight + (1 if i < calls % inflight else 0) for i in range(inflight)]
    sessions = [[RawHttpClient(url) for _ in range(max(1, -(-n // SESSION_CALLS)))] for n in share]
    clients = [c for per_worker in sessions for c in per_worker]
    for client in clients:
        await client.__aenter__()
    try:
        for i in range(warmup):
            await clients[i % len(clients)].call_tool(tool, args())
        latencies = []
        cpu_before = sum(cpu_seconds(p) for p in pids)
        commands_before = redis_commands(redis_port) if redis_port else 0

        async def worker(mine, n):
            for k in range(n):
                t = time.perf_counter()
                r = await mine[k // SESSION_CALLS].call_tool(tool, args())
                latencies.append(time.perf_counter() - t)
                if r.is_error:
                    raise RuntimeError(f"{tool} failed: {[c.text for c in r.content]}")

        started = time.perf_counter()
        await asyncio.gather(*(worker(mine, n) for mine, n in zip(sessions, share)))
        wall = time.perf_counter() - started
    finally:
        for client in clients:
            await client.__aexit__(None, None, None)
    cpu = sum(cpu_seconds(p) for p in pids) - cpu_before
    # The commands of the measured calls only (the INFO before counts itself).
    commands = (redis_commands(redis_port) - commands_before - 1) if redis_port else 0
    latencies.sort()
    return {
        "calls_per_s": calls / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(calls - 1, int(calls * 0.99))] * 1000,
        "cpu_us_per_call": cpu / calls * 1e6,
        "redis_commands_per_call": commands / calls if redis_port else 0.0,
    }


def run_row(opts, label, replicas, store, folder, inflights):
    redis_proc, redis_port = (None, None)
    if store == "redis":
        redis_proc, redis_port = start_redis(folder)
    config = settings_file(folder, redis_port, f"bench-{label.replace(' ', '-')}")
    workdir = Path(folder) / "work"
    workdir.mkdir(exist_ok=True)
    small = workdir / "small.txt"
    small.write_text("".join(f"line {i}\n" for i in range(40)))
    procs, urls = [], []
    proxy = None
    try:
        for i in range(replicas):
            proc, url = start_replica(opts, config, str(workdir), f"r{i + 1}")
            procs.append(proc)
            urls.append(url)
        url = urls[0]
        if replicas > 1:
            proxy, url = start_proxy(opts, urls)
        pids = [p.pid for p in procs] + ([redis_proc.pid] if redis_proc else [])
        rows = []
        counter = iter(range(10**9))
        args = {
            "TaskCreate": lambda: {"subject": f"task {next(counter)}", "description": "bench"},
            "Read": lambda: {"file_path": str(small)},
        }
        for tool in TOOLS:
            trips = 0.0
            if redis_port:
                counted = 200
                run = lambda: asyncio.run(measure(url, tool, args[tool], counted, 1, 0, pids, None))  # noqa: E731
                trips = round_trips(redis_port, run) / counted
            for inflight in inflights:
                figures = asyncio.run(
                    measure(url, tool, args[tool], opts.calls, inflight, opts.warmup, pids, redis_port)
                )
                rows.append({"setup": label, "tool": tool, "inflight": inflight, "round_trips_per_call": trips,
                             **figures})
        return rows
    finally:
        if proxy:
            proxy.stdin.close()
            proxy.wait(timeout=10)
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        if redis_proc:
            redis_proc.terminate()
            redis_proc.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--toolhost", required=True, help="the toolhost binary (a release build for figures)")
    ap.add_argument("--proxy", default=None, help="the round_robin binary (default: beside --toolhost)")
    ap.add_argument("--calls", type=int, default=2000, help="timed calls per row")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--inflight", default="1,32")
    ap.add_argument("--cache-dir", default=None, help="toolhost's compile cache (default: a temporary one)")
    ap.add_argument("--json", help="also write the figures here")
    opts = ap.parse_args()
    opts.proxy = opts.proxy or str(Path(opts.toolhost).with_name("round_robin"))
    if not shutil.which("redis-server"):
        sys.exit("redis-server is not installed (.ci/redis.sh installs it)")
    tmp = tempfile.TemporaryDirectory()
    opts.cache_dir = opts.cache_dir or os.path.join(tmp.name, "cache")
    inflights = [int(n) for n in opts.inflight.split(",")]
    rows = []
    for label, replicas, store in [("1 local", 1, "local"), ("1 redis", 1, "redis"), ("3 redis", 3, "redis")]:
        folder = tempfile.mkdtemp(dir=tmp.name)
        rows += run_row(opts, label, replicas, store, folder, inflights)
    base = {(r["tool"], r["inflight"]): r for r in rows if r["setup"] == "1 local"}
    print(f"{os.cpu_count()} cores")
    print("| setup | tool | in flight | calls/s | × 1 local | p50 ms | p99 ms | CPU µs/call (replicas + Redis) "
          "| Redis round trips/call | Redis commands/call (in scripts too) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["calls_per_s"] / base[(r["tool"], r["inflight"])]["calls_per_s"]
        print(f"| {r['setup']} | {r['tool']} | {r['inflight']} | {r['calls_per_s']:.0f} | {ratio:.2f} "
              f"| {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['cpu_us_per_call']:.0f} "
              f"| {r['round_trips_per_call']:.1f} | {r['redis_commands_per_call']:.1f} |")
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
