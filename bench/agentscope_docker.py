"""The AgentScope peer of tests/benches/docker.rs: AgentScope 2.0.11's own
Docker workspace backend (`agentscope.workspace._docker.DockerBackend`) on an
aiodocker container of the same image and engine, with the same working
directory bound at its own path. p50 in milliseconds of the backend calls
AgentScope's tools make (the tools add their own Python on top, so these are
lower bounds of AgentScope's per-call cost):

- Bash `echo hi`: `exec_shell(["sh", "-c", "echo hi"])` (its Bash tool's call);
- Read of a 1 MB file: `read_file(path)` (get_archive, as its Read tool);
- Grep over a source tree: `exec_shell(["grep", "-rnE", pattern, path])`
  (its Grep tool runs `rg` through `exec_shell`; the busybox image has only
  busybox's grep, which does the same walk and match).

Install: python3 -m venv /tmp/as-venv-docker && /tmp/as-venv-docker/bin/pip install agentscope==2.0.11 aiodocker
Run:     /tmp/as-venv-docker/bin/python bench/agentscope_docker.py IMAGE WORKDIR ITERATIONS
"""
import asyncio
import statistics
import sys
import time


async def main(image: str, work: str, n: int) -> None:
    import aiodocker
    from agentscope.workspace._docker._docker_backend import DockerBackend

    docker = aiodocker.Docker()
    # As AgentScope's workspace makes it (create_or_replace): `sleep` as
    # PID 1, no init, root, the work folder bound read-write.
    container = await docker.containers.create_or_replace(
        name=f"as_ws_bench_{int(time.time())}",
        config={
            "Image": image,
            "Cmd": ["sleep", "1000000"],
            "WorkingDir": work,
            "HostConfig": {"Binds": [f"{work}:{work}:rw"]},
        },
    )
    await container.start()
    try:
        backend = DockerBackend(container, work)
        big = f"{work}/big.txt"
        src = f"{work}/src"
        ops = {
            "bash": lambda: backend.exec_shell(["sh", "-c", "echo hi"], timeout=30),
            "read": lambda: backend.read_file(big),
            "grep": lambda: backend.exec_shell(["grep", "-rnE", "fn [a-z_]+\\(", src], timeout=30),
        }
        checks = {
            "bash": lambda r: r.stdout == b"hi\n",
            "read": lambda r: len(r) > 1_000_000,
            "grep": lambda r: b"fn " in r.stdout,
        }
        samples = {k: [] for k in ops}
        for i in range(n + 10):
            for name, op in ops.items():
                start = time.perf_counter()
                result = await op()
                took = time.perf_counter() - start
                assert checks[name](result), (name, str(result)[:200])
                if i >= 10:
                    samples[name].append(took * 1e3)
        for name, s in samples.items():
            s.sort()
            print(f"{name}_p50_ms {statistics.median(s):.3f}")
            print(f"{name}_p99_ms {s[int(len(s) * 0.99) - 1]:.3f}")
    finally:
        await container.delete(force=True)
        await docker.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
