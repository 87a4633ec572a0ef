#!/usr/bin/env python3
"""Bash permission checks: toolhost vs AgentScope 2.0.11, side by side.

Measures decisions per second over the same corpus of 1,000+ varied Bash
commands, on the same machine, in the same run:

* toolhost: `toolhost check --batch` (JSONL in, JSONL out; one process for
  the whole batch). Reported as the whole batch including start-up, and as
  the steady rate with start-up removed: time(the corpus `--steady-copies`
  times over) - time(1 request). When
  the CLI answers line by line, a lock-step pass (write one request, read its
  answer) also gives per-decision latency percentiles.
* AgentScope 2.0.11, in-process (a venv, `--venv`), two levels:
  `Bash().check_permissions(input, ctx)` (the tool's own check, the
  figure the issue asks for) and `PermissionEngine(ctx).check_permission`
  (rules, read-only fast path, tool check, mode: the same work as one
  `toolhost check` answer minus the suggestions).

Every figure is the best of `--repeat` runs. The corpus is the commands of
guest-tools/lib/bash-analysis/tests/corpus.tsv plus generated ones
(seeded, reproducible); `--dump-corpus FILE` writes it out.

Usage:
    bench/bash_check_vs_agentscope.py [--toolhost target/release/toolhost]
        [--venv /tmp/as-venv] [--repeat 5] [--json results.json]

Set-up it does on its own: creates the venv and installs
`agentscope==2.0.11` when `--venv` has no python; builds
`cargo build --release -p toolhost` when the binary is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS_TSV = ROOT / "guest-tools/lib/bash-analysis/tests/corpus.tsv"
AGENTSCOPE = "agentscope==2.0.11"

# --------------------------------------------------------------------------
# Corpus


def corpus_commands() -> list[str]:
    """Unique commands of the analysis corpus (`⏎` is a newline there)."""
    seen: dict[str, None] = {}
    for line in CORPUS_TSV.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 2:
            continue
        cmd = cols[1].replace("⏎", "\n").replace("\\t", "\t")
        if cmd.strip():
            seen.setdefault(cmd, None)
    return list(seen)


PROGRAMS = [
    "ls", "ls -la", "cat", "head -n 20", "tail -f", "wc -l", "grep -rn TODO", "rg -n fn", "find . -name",
    "git status", "git log --oneline -5", "git diff", "git add", "git commit -m 'wip'", "git push origin main",
    "git checkout -b feature", "git reset --hard HEAD~1", "npm install", "npm run build", "npm test",
    "cargo build --release", "cargo test", "python3 -m pytest", "pip install -r", "make", "make -j4",
    "rm", "rm -rf", "rm -fr", "mv", "cp -r", "touch", "mkdir -p", "rmdir", "chmod 644", "chmod 777",
    "chown -R me", "sed -i 's/a/b/'", "sed -n '1,5p'", "tee", "curl -sSL", "wget -q", "docker ps",
    "docker run --rm alpine", "kubectl get pods", "tar czf out.tgz", "unzip -o", "ln -s", "sort", "uniq -c",
    "awk '{print $1}'", "xargs -0 rm", "echo hello", "printf '%s\\n'", "env FOO=1 node", "sudo apt-get install",
    "dd if=/dev/zero of=disk.img bs=1M count=1", "kill -9", "stat", "file", "which", "tree -L 2", "jq .",
]
TARGETS = [
    "src/main.rs", "README.md", "./build", "node_modules", "/tmp/x", "~/.bashrc", ".env", ".git/config",
    "/etc/passwd", "\"a b.txt\"", "'quoted file'", "$HOME/notes.txt", "*.log", "dist/", "../sibling/f",
    "/usr", "~", "/", "docs/*.md", "package.json", "Cargo.toml", ".ssh/id_rsa", "/work/p/out.txt", "",
]
JOINERS = [" && ", " | ", "; ", " || ", " & ", "\n"]
SUFFIXES = ["", "", "", " > out.txt", " 2>/dev/null", " >> log.txt", " 2>&1", " | head -5", " &> all.log"]
WRAPPERS = ["", "", "", "", "sudo ", "LANG=C ", "NODE_ENV=prod ", "env ", "nohup ", "time "]
DYNAMIC = ["$(pwd)", "`whoami`", "${HOME}", "$(date +%s)", "<(ls)"]


def generated_commands(n: int, seed: int = 20251129) -> list[str]:
    """`n` distinct commands from the templates above (reproducible)."""
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        parts = []
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
            words = [rng.choice(WRAPPERS) + rng.choice(PROGRAMS)]
            for _ in range(rng.choice([0, 1, 1, 2])):
                words.append(rng.choice(TARGETS))
            if rng.random() < 0.05:
                words.append(rng.choice(DYNAMIC))
            parts.append(" ".join(w for w in words if w) + rng.choice(SUFFIXES))
        cmd = parts[0]
        for p in parts[1:]:
            cmd += rng.choice(JOINERS) + p
        out.setdefault(cmd, None)
    return list(out)


def build_corpus(extra: int) -> list[str]:
    base = corpus_commands()
    seen = dict.fromkeys(base)
    for c in generated_commands(extra):
        seen.setdefault(c, None)
    return list(seen)


# --------------------------------------------------------------------------
# toolhost


def toolhost_binary(path: str | None) -> Path:
    exe = Path(path) if path else ROOT / "target/release/toolhost"
    if not exe.exists():
        print(f"building {exe} (cargo build --release -p toolhost) ...", file=sys.stderr)
        subprocess.run(["cargo", "build", "--release", "-p", "toolhost"], cwd=ROOT, check=True)
    if not exe.exists():
        sys.exit(f"toolhost binary not found at {exe}; pass --toolhost PATH")
    return exe


def requests(commands: list[str], ctx: dict) -> str:
    lines = []
    for i, c in enumerate(commands):
        req = {"id": i, "tool": "Bash", "input": {"command": c}, "mode": "default"}
        req.update(ctx)
        lines.append(json.dumps(req))
    return "\n".join(lines) + "\n"


def run_batch(exe: Path, payload: str) -> tuple[float, list[dict]]:
    t0 = time.perf_counter()
    p = subprocess.run([str(exe), "check", "--batch"], input=payload.encode(), capture_output=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"toolhost check --batch failed ({p.returncode}):\n{p.stderr.decode(errors='replace')[-2000:]}")
    answers = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    return dt, answers


def lockstep_latencies(exe: Path, lines: list[str], timeout: float = 3.0) -> list[float] | None:
    """Per-request round trips, or None when the CLI does not answer line by line."""
    import select

    p = subprocess.Popen([str(exe), "check", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdin and p.stdout
    lat = []
    try:
        # The first request also pays start-up: send it untimed.
        for i, line in enumerate(lines):
            t0 = time.perf_counter()
            p.stdin.write(line.encode() + b"\n")
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], timeout)
            if not ready:
                return None
            if not p.stdout.readline():
                return None
            if i > 0:
                lat.append(time.perf_counter() - t0)
    finally:
        p.kill()
        p.wait()
    return lat


# --------------------------------------------------------------------------
# AgentScope (runs inside the venv: `--agentscope-worker`)


def agentscope_worker(corpus_file: str, repeat: int, workdir: str) -> None:
    import asyncio

    from agentscope.permission import PermissionContext, PermissionEngine, PermissionMode
    from agentscope.tool import Bash

    commands = json.loads(Path(corpus_file).read_text(encoding="utf-8"))
    os.chdir(workdir)
    bash = Bash()
    ctx = PermissionContext(mode=PermissionMode.DEFAULT)
    engine = PermissionEngine(PermissionContext(mode=PermissionMode.DEFAULT))

    async def tool_pass() -> tuple[float, list[float], list[str]]:
        lat, out = [], []
        t_all = time.perf_counter()
        for c in commands:
            t0 = time.perf_counter()
            d = await bash.check_permissions({"command": c}, ctx)
            lat.append(time.perf_counter() - t0)
            out.append(d.behavior.value if hasattr(d.behavior, "value") else str(d.behavior))
        return time.perf_counter() - t_all, lat, out

    async def engine_pass() -> tuple[float, list[float], list[str]]:
        lat, out = [], []
        t_all = time.perf_counter()
        for c in commands:
            t0 = time.perf_counter()
            d = await engine.check_permission(bash, {"command": c})
            lat.append(time.perf_counter() - t0)
            out.append(d.behavior.value if hasattr(d.behavior, "value") else str(d.behavior))
        return time.perf_counter() - t_all, lat, out

    async def main() -> dict:
        await tool_pass()  # warm-up (parser, caches)
        res = {}
        for name, fn in [("tool", tool_pass), ("engine", engine_pass)]:
            best = None
            for _ in range(repeat):
                total, lat, out = await fn()
                if best is None or total < best[0]:
                    best = (total, lat, out)
            total, lat, out = best
            res[name] = {"total_s": total, "p50_s": statistics.median(lat), "p99_s": sorted(lat)[int(len(lat) * 0.99) - 1],
                         "behaviors": out}
        return res

    print(json.dumps(asyncio.run(main())))


def ensure_venv(venv: Path) -> Path:
    py = venv / "bin/python"
    if not py.exists():
        print(f"creating {venv} and installing {AGENTSCOPE} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin/pip"), "install", "-q", AGENTSCOPE], check=True)
    v = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('agentscope'))"],
                       capture_output=True, text=True)
    if v.stdout.strip() != "2.0.11":
        sys.exit(f"{venv} has agentscope {v.stdout.strip() or '(none)'}; want 2.0.11: "
                 f"{venv}/bin/pip install {AGENTSCOPE}")
    return py


# --------------------------------------------------------------------------


def fmt_rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}/s" if seconds > 0 else "inf"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--toolhost", help="the toolhost binary (default target/release/toolhost)")
    ap.add_argument("--venv", default="/tmp/as-venv", help="venv with agentscope 2.0.11 (created if missing)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best is kept")
    ap.add_argument("--steady-copies", type=int, default=5,
                    help="corpus copies in the batch the steady rate is taken from (default 5)")
    ap.add_argument("--generated", type=int, default=1000, help="generated commands added to the corpus")
    ap.add_argument("--dump-corpus", help="write the corpus (JSON list) here and exit")
    ap.add_argument("--json", help="also write the figures here as JSON")
    ap.add_argument("--agentscope-worker", nargs=3, metavar=("CORPUS", "REPEAT", "WORKDIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.agentscope_worker:
        c, r, w = args.agentscope_worker
        agentscope_worker(c, int(r), w)
        return

    commands = build_corpus(args.generated)
    if args.dump_corpus:
        Path(args.dump_corpus).write_text(json.dumps(commands, indent=0, ensure_ascii=False), encoding="utf-8")
        print(f"{len(commands)} commands written to {args.dump_corpus}")
        return
    n = len(commands)

    work = Path(tempfile.mkdtemp(prefix="bash-bench-"))
    proj = work / "project"
    proj.mkdir()
    home = os.path.expanduser("~")
    ctx = {"working_dirs": [str(proj)], "cwd": str(proj), "home": home}

    exe = toolhost_binary(args.toolhost)
    payload = requests(commands, ctx)
    one = requests(commands[:1], ctx)
    run_batch(exe, payload)  # warm-up: page cache, compile cache
    best_all, answers = min((run_batch(exe, payload) for _ in range(args.repeat)), key=lambda r: r[0])
    best_one = min(run_batch(exe, one)[0] for _ in range(args.repeat))
    if len(answers) != n:
        sys.exit(f"toolhost answered {len(answers)} of {n} requests")
    # Steady rate: the corpus several times over in one process, minus the
    # one-request run (start-up), so start-up noise is small against it.
    many = payload * args.steady_copies
    best_many = min(run_batch(exe, many)[0] for _ in range(args.repeat))
    steady_n = n * args.steady_copies - 1
    steady = best_many - best_one
    if steady <= 0:
        sys.exit("the steady measurement is meaningless (the long batch ran no slower than one request): "
                 "is the machine overloaded? try again, or raise --steady-copies")
    lat = lockstep_latencies(exe, payload.splitlines())

    py = ensure_venv(Path(args.venv))
    corpus_file = work / "corpus.json"
    corpus_file.write_text(json.dumps(commands), encoding="utf-8")
    p = subprocess.run([str(py), __file__, "--agentscope-worker", str(corpus_file), str(args.repeat), str(proj)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"AgentScope worker failed:\n{p.stderr[-3000:]}")
    ag = json.loads(p.stdout.strip().splitlines()[-1])

    # The read-only fast path answers before the tool is consulted; the
    # tool's own layer 1 would have said allow.
    th_tool = [(a.get("tool_check") or {}).get("behavior") or ("allow" if a.get("read_only") else None)
               for a in answers]
    th_final = [a.get("behavior") for a in answers]
    agree_tool = sum(1 for a, b in zip(th_tool, ag["tool"]["behaviors"]) if a == b)
    agree_final = sum(1 for a, b in zip(th_final, ag["engine"]["behaviors"]) if a == b)

    th_rate_all = n / best_all
    th_rate_steady = steady_n / steady
    ag_tool_rate = n / ag["tool"]["total_s"]
    ag_engine_rate = n / ag["engine"]["total_s"]
    rows = [
        ("toolhost check --batch, whole batch incl. start-up", fmt_rate(n, best_all), "-"),
        (f"toolhost check --batch, steady ({args.steady_copies}x corpus minus 1 request)", fmt_rate(steady_n, steady), "-"),
    ]
    if lat:
        rows.append(("toolhost lock-step round trip (p50 / p99)", "-",
                     f"{statistics.median(lat) * 1e6:,.0f} µs / {sorted(lat)[int(len(lat) * 0.99) - 1] * 1e6:,.0f} µs"))
    for key, label in [("tool", "AgentScope Bash().check_permissions"), ("engine", "AgentScope PermissionEngine.check_permission")]:
        rows.append((label, fmt_rate(n, ag[key]["total_s"]),
                     f"{ag[key]['p50_s'] * 1e6:,.0f} µs / {ag[key]['p99_s'] * 1e6:,.0f} µs"))

    print(f"\nBash permission checks: {n} commands, mode default, best of {args.repeat}\n")
    w = max(len(r[0]) for r in rows)
    print(f"{'':{w}}  {'decisions/s':>14}  latency p50 / p99")
    for label, rate, l in rows:
        print(f"{label:{w}}  {rate:>14}  {l}")
    print()
    print(f"ratio toolhost (whole batch) / AgentScope tool check  : {th_rate_all / ag_tool_rate:.2f}x")
    print(f"ratio toolhost (steady)      / AgentScope tool check  : {th_rate_steady / ag_tool_rate:.2f}x")
    print(f"ratio toolhost (steady)      / AgentScope engine      : {th_rate_steady / ag_engine_rate:.2f}x")
    if lat:
        print(f"ratio AgentScope tool p50 / toolhost lock-step p50    : {ag['tool']['p50_s'] / statistics.median(lat):.2f}x")
    print(f"tool-level behaviour agreement: {agree_tool}/{n}; final decision agreement: {agree_final}/{n} "
          f"(differences are deliberate, docs/bash-deviations.md)")

    if args.json:
        Path(args.json).write_text(json.dumps({
            "commands": n, "repeat": args.repeat,
            "toolhost": {"batch_s": best_all, "one_request_s": best_one,
                         "rate_batch": th_rate_all, "rate_steady": th_rate_steady,
                         "lockstep_p50_s": statistics.median(lat) if lat else None},
            "agentscope": {k: {kk: vv for kk, vv in v.items() if kk != "behaviors"} for k, v in ag.items()},
            "agreement": {"tool": agree_tool, "final": agree_final},
        }, indent=2))


if __name__ == "__main__":
    main()
