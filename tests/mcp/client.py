"""A real MCP client (the Python SDK, `mcp` 2.3.0) for the `toolhost serve`
end-to-end tests (tests/tests/mcp_serve.rs).

    python client.py (--http URL [--token T] | --stdio CMD ARG...) --mode auto|legacy SCENARIO JSON

prints one JSON object with what the client saw. Scenarios:

- list {}                              the listing
- call {tool, args}                    a call with a progress callback
- elicit {tool, args, answer}          a call whose asks are answered `answer`
                                       (a choice, or {"q0": ...} for AskUser)
- cancel {tool, args, after}           a call abandoned after `after` seconds
- together {tool, calls: [args, ...]}  the calls at once, each on its own client
- parallel {tool, calls: [args, ...]}  the calls at once on one client
- raw {body, headers}                  HTTP only: one POST as given, then a listing
- raw_stdio {line}                     stdio only: one raw line, then a listing
- groups {tool, args, groups}          list, call `tool`, reset_tools(groups), list and call
                                       again on one client, noting list_changed notifications
"""

import asyncio
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult


def parse_args(argv):
    opts = {"token": None, "http": None, "stdio": None, "mode": "auto"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--http":
            opts["http"] = argv[i + 1]
            i += 2
        elif a == "--token":
            opts["token"] = argv[i + 1]
            i += 2
        elif a == "--mode":
            opts["mode"] = argv[i + 1]
            i += 2
        elif a == "--stdio":
            end = argv.index("--", i)
            opts["stdio"] = argv[i + 1 : end]
            i = end + 1
        else:
            break
    opts["scenario"] = argv[i]
    opts["params"] = json.loads(argv[i + 1])
    return opts


def server_of(opts):
    if opts["http"]:
        headers = {"Authorization": f"Bearer {opts['token']}"} if opts["token"] else {}
        return streamable_http_client(opts["http"], http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    cmd = opts["stdio"]
    return StdioServerParameters(command=cmd[0], args=cmd[1:], env=None)


def client(opts, **kw):
    return Client(server_of(opts), mode=opts["mode"], **kw)


def result_json(r):
    return {
        "is_error": bool(r.is_error),
        "text": "".join(getattr(c, "text", "") for c in r.content),
        "types": [c.type for c in r.content],
    }


async def scenario_list(opts, p):
    async with client(opts) as c:
        tools = (await c.list_tools()).tools
        return {
            "protocol": str(c.session.protocol_version) if hasattr(c.session, "protocol_version") else None,
            "tools": [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools],
        }


async def scenario_call(opts, p):
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "message": message})

    async with client(opts) as c:
        r = await c.call_tool(p["tool"], p["args"], progress_callback=on_progress)
        return {**result_json(r), "progress": progress}


async def scenario_elicit(opts, p):
    asked = []

    async def on_elicit(ctx, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        answer = p["answer"]
        if answer == "decline":
            return ElicitResult(action="decline")
        content = answer if isinstance(answer, dict) else {"decision": answer}
        return ElicitResult(action="accept", content=content)

    async with client(opts, elicitation_callback=on_elicit) as c:
        r = await c.call_tool(p["tool"], p["args"])
        out = {**result_json(r), "asked": asked}
        if p.get("then"):
            again = await c.call_tool(p["tool"], p["then"])
            out["then"] = result_json(again)
            out["asked_total"] = len(asked)
        return out


async def scenario_replay(opts, p):
    """Answers an ask by hand (2026-07-28), then sends the same answered
    request state again: the second use must be refused."""
    async with client(opts, elicitation_callback=lambda ctx, params: None) as c:
        first = await c.session.call_tool(p["tool"], p["args"], allow_input_required=True)
        state = first.request_state
        key = next(iter(first.input_requests))
        answer = {key: {"action": "accept", "content": {"decision": "allow_once"}}}
        one = await c.session.call_tool(p["tool"], p["args"], input_responses=answer, request_state=state)
        two = await c.session.call_tool(p["tool"], p["args"], input_responses=answer, request_state=state)
        other = await c.session.call_tool(p["tool"], p["other"], input_responses=answer, request_state=state)
        return {"first": result_json(one), "replayed": result_json(two), "other": result_json(other)}


async def scenario_cancel(opts, p):
    async with client(opts) as c:
        started = time.monotonic()
        try:
            await asyncio.wait_for(c.call_tool(p["tool"], p["args"]), timeout=p["after"])
            outcome = "finished"
        except asyncio.TimeoutError:
            outcome = "abandoned"
        # The server keeps serving this client after the cancel.
        after = await c.call_tool(p["tool"], p["next"]) if p.get("next") else None
        return {
            "outcome": outcome,
            "seconds": time.monotonic() - started,
            "after": result_json(after) if after else None,
        }


async def scenario_together(opts, p):
    async def one(args):
        async with client(opts) as c:
            return result_json(await c.call_tool(p["tool"], args))

    return {"results": await asyncio.gather(*(one(a) for a in p["calls"]))}


async def scenario_parallel(opts, p):
    async with client(opts) as c:
        calls = [c.call_tool(p["tool"], a) for a in p["calls"]]
        return {"results": [result_json(r) for r in await asyncio.gather(*calls)]}


def post(url, body, headers):
    req = urllib.request.Request(url, data=body.encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    for k, v in headers.items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


async def scenario_raw(opts, p):
    status, body = await asyncio.to_thread(post, opts["http"], p["body"], p.get("headers", {}))
    listed = await scenario_list(opts, {})
    return {"status": status, "body": body, "listed": len(listed["tools"])}


async def scenario_raw_stdio(opts, p):
    proc = subprocess.Popen(opts["stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(p["line"] + "\n")
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        proc.stdin.write(json.dumps(init) + "\n")
        proc.stdin.flush()
        lines = []
        while True:
            line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout=60)
            if not line:
                break
            lines.append(json.loads(line))
            if any(m.get("id") == 1 for m in lines):
                break
        return {"replies": lines, "alive": proc.poll() is None}
    finally:
        proc.kill()


async def scenario_groups(opts, p):
    seen = []

    async def on_message(message):
        seen.append(f"{type(message).__name__} {message!r}"[:500])

    async with client(opts, message_handler=on_message) as c:
        before = (await c.list_tools()).tools
        inactive = await c.call_tool(p["tool"], p["args"])
        reset = await c.call_tool("reset_tools", p["groups"])
        # A notification sent during the call arrives before its result;
        # give a slow transport a moment all the same.
        await asyncio.sleep(0.2)
        after = (await c.list_tools()).tools
        active = await c.call_tool(p["tool"], p["args"])
        return {
            "before": [t.name for t in before],
            "schema": next(
                (t.model_dump(by_alias=True, mode="json")["inputSchema"] for t in before if t.name == "reset_tools"),
                None,
            ),
            "inactive": result_json(inactive),
            "reset": result_json(reset),
            "after": [t.name for t in after],
            "active": result_json(active),
            "list_changed": sum(1 for s in seen if "list_changed" in s or "ListChanged" in s),
            "seen": seen,
        }


SCENARIOS = {
    "groups": scenario_groups,
    "list": scenario_list,
    "call": scenario_call,
    "elicit": scenario_elicit,
    "replay": scenario_replay,
    "cancel": scenario_cancel,
    "together": scenario_together,
    "parallel": scenario_parallel,
    "raw": scenario_raw,
    "raw_stdio": scenario_raw_stdio,
}


def main():
    opts = parse_args(sys.argv[1:])
    out = asyncio.run(SCENARIOS[opts["scenario"]](opts, opts["params"]))
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
