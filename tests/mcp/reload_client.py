"""Real MCP clients (the Python SDK, `mcp` 2.3.0) calling one tool in a loop
while its plugin file is replaced, for tests/tests/reload_serve.rs and the
reload bench:

    python reload_client.py URL CLIENTS SECONDS TOOL ARGS_JSON

runs CLIENTS clients at once, each on its own session, each calling TOOL
with ARGS_JSON back to back for SECONDS, and prints one JSON object:
{"results": [{"is_error": bool, "text": str}, ...], "calls_per_second": f}.
A call that raises is recorded as an error with the exception's text.
"""

import asyncio
import json
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def one_client(url, seconds, tool, args, results):
    server = streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=60))
    async with Client(server, mode="auto") as c:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                r = await c.call_tool(tool, args)
                text = "".join(getattr(part, "text", "") for part in r.content)
                results.append({"is_error": bool(r.is_error), "text": text})
            except Exception as e:  # noqa: BLE001 - every failure is counted
                results.append({"is_error": True, "text": f"raised: {e!r}"})


async def main(url, clients, seconds, tool, args):
    results = []
    started = time.monotonic()
    await asyncio.gather(*(one_client(url, seconds, tool, args, results) for _ in range(clients)))
    elapsed = time.monotonic() - started
    return {"results": results, "calls_per_second": len(results) / elapsed}


if __name__ == "__main__":
    url, clients, seconds, tool, args = sys.argv[1:6]
    out = asyncio.run(main(url, int(clients), float(seconds), tool, json.loads(args)))
    print(json.dumps(out))
