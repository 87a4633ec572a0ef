"""A real MCP client (the Python SDK, `mcp` 2.3.0) for the `toolhost serve`
end-to-end tests (tests/tests/mcp_serve.rs).

    python client.py (--http URL [--token T] | --stdio CMD ARG...) --mode auto|legacy SCENARIO JSON

prints one JSON object with what the client saw. Scenarios:

- list {}                              the listing
- call {tool, args, server_stops?}     a call with a progress callback (server_stops:
                                       the server may be gone once it answered)
- elicit {tool, args, answer}          a call whose asks are answered `answer`
                                       (a choice, or {"q0": ...} for AskUser)
- replay_across {tool, args, answer, others: [url, ...]}
                                       2026-07-28, HTTP: asks through this server, answers
                                       through others[0], replays the answer everywhere
- cancel {tool, args, after}           a call abandoned after `after` seconds
- together {tool, calls: [args, ...]}  the calls at once, each on its own client
- parallel {tool, calls: [args, ...]}  the calls at once on one client
- raw {body, headers}                  HTTP only: one POST as given, then a listing
- raw_stdio {line}                     stdio only: one raw line, then a listing
- list_changed {trigger, create_only?, seconds?}
                                       listens for tool-list changes while the
                                       fixture server (tests/src/bin/mcp_fixture.rs)
                                       adds a tool (trigger created) and unloads
                                       it (trigger removed); lists after each
                                       (create_only: only the first step; seconds:
                                       how long to wait for each change, 30)
- tasks {calls: [[tool, args], ...]}   the calls in order on one client
- listen_until_stop {ready}            2026-07-28: a tool-list subscription until the
                                       stream ends; how it ended
- stdio_stop {pid_file}                stdio: SIGTERM to the server during a call,
                                       then a new call, then the first call's answer
- sessions {create, list}              HTTP, legacy: two sessions at once (one
                                       creates a task, both list), then a session
                                       driven by hand and resumed on new connections
                                       (create, list), then ended with DELETE
- log_messages {level, ready, count, seconds?}
                                       legacy: sets the log level, creates `ready`, collects
                                       `count` log messages from the server (`seconds` at most)
- groups {tool, args, groups}          list, call `tool`, reset_tools(groups), list and call
                                       again on one client, noting list_changed notifications
- background_load {tool, args, timeout}
                                       lists while a plugin loads in the background, waits for
                                       tool-list changes until `tool` is listed (`timeout` seconds
                                       for each), calls it; legacy: notes the server's log messages
"""

import asyncio
import re
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult, ToolListChangedNotification


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

    out = None
    try:
        async with client(opts) as c:
            if p.get("server_stops"):
                # The SDK lists the tools after a call unless it has them.
                await c.list_tools()
            r = await c.call_tool(p["tool"], p["args"], progress_callback=on_progress)
            out = {**result_json(r), "progress": progress}
    except Exception:
        # With server_stops, the server may be gone when the client closes
        # its session: the answer is what counts.
        if out is None or not p.get("server_stops"):
            raise
    return out


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


async def scenario_replay_across(opts, p):
    """2026-07-28 with several servers of one deployment: asks through this
    one, answers (`answer`) through the first of `others`, then sends the
    same answered request state to this one and to every other: each of
    those uses must be refused."""
    async with client(opts, elicitation_callback=lambda ctx, params: None) as c:
        first = await c.session.call_tool(p["tool"], p["args"], allow_input_required=True)
        state = first.request_state
        key = next(iter(first.input_requests))
    answer = {key: {"action": "accept", "content": {"decision": p["answer"]}}}
    answered, replays = None, []
    for i, url in enumerate(p["others"] + [opts["http"]]):
        async with client({**opts, "http": url}, elicitation_callback=lambda ctx, params: None) as c:
            r = await c.session.call_tool(p["tool"], p["args"], input_responses=answer, request_state=state)
            if i == 0:
                answered = result_json(r)
            else:
                replays.append(result_json(r))
        if i == 0:
            # The first server again, right after the answer.
            async with client(opts, elicitation_callback=lambda ctx, params: None) as c:
                r = await c.session.call_tool(p["tool"], p["args"], input_responses=answer, request_state=state)
                replays.append(result_json(r))
    return {"answered": answered, "replays": replays}


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


async def names(c):
    return sorted(t.name for t in (await c.list_tools()).tools)


def list_changes():
    """A queue of the server's tools/list_changed notifications, and the
    message handler (legacy sessions) that fills it."""
    changes = asyncio.Queue()

    async def on_message(m):
        if isinstance(m, ToolListChangedNotification):
            changes.put_nowait(m)

    return changes, on_message


async def scenario_list_changed(opts, p):
    """Each change of the server's tool set is one notification to a listening
    client (2026-07-28: on its subscriptions/listen stream; 2025-11-25: a
    notification on the session), after which the listing shows it."""
    trigger = p["trigger"]
    steps = [lambda: open(trigger, "w").close(), lambda: os.remove(trigger)]
    if p.get("create_only"):
        steps = steps[:1]
    seconds = p.get("seconds", 30)
    out = {"before": None, "after": []}
    if opts["mode"] == "legacy":
        changes, on_message = list_changes()

        async with client(opts, message_handler=on_message) as c:
            out["before"] = await names(c)
            for step in steps:
                step()
                await asyncio.wait_for(changes.get(), timeout=seconds)
                out["after"].append(await names(c))
    else:
        async with client(opts) as c:
            out["before"] = await names(c)
            async with c.listen(tools_list_changed=True) as sub:
                out["honored"] = bool(sub.honored.tools_list_changed)
                events = sub.__aiter__()
                for step in steps:
                    step()
                    await asyncio.wait_for(events.__anext__(), timeout=seconds)
                    out["after"].append(await names(c))
    return out


async def scenario_notified(opts, p):
    """Listens on one server while something happens elsewhere: creates
    `ready` once listening, then waits (`seconds`, 30 by default) for one
    tools/list_changed and, legacy only, for `logs` log messages at level
    `level`."""
    out = {"changed": 0, "logs": []}
    seconds = p.get("seconds", 30)
    enough_logs = asyncio.Event()
    if p.get("logs", 0) == 0:
        enough_logs.set()

    async def on_log(params):
        out["logs"].append({"level": str(params.level), "logger": params.logger, "data": params.data})
        if len(out["logs"]) >= p["logs"]:
            enough_logs.set()

    if opts["mode"] == "legacy":
        changes, on_message = list_changes()

        async with client(opts, message_handler=on_message, logging_callback=on_log) as c:
            if "level" in p:
                await c.set_logging_level(p["level"])
            open(p["ready"], "w").close()
            await asyncio.wait_for(changes.get(), timeout=seconds)
            out["changed"] += 1
            await asyncio.wait_for(enough_logs.wait(), timeout=seconds)
    else:
        async with client(opts) as c:
            async with c.listen(tools_list_changed=True) as sub:
                events = sub.__aiter__()
                open(p["ready"], "w").close()
                await asyncio.wait_for(events.__anext__(), timeout=seconds)
                out["changed"] += 1
    return out


async def scenario_load(opts, p):
    """One client of a load test: `calls` calls, `inflight` at once, each by
    its index: TaskCreate (subject `TAG-i`), TaskUpdate of a task it made,
    TaskList, Read then Edit of its own file (`file`, holding `v0`, one
    edit at a time), and Bash asks answered allow once or deny (`touch
    DIR/TAG-allowed-i` / `-denied-i`). Returns what it saw; `wrong` lists
    every outcome that was not the one expected.

    `kinds` limits the calls to those kinds (the index modulo 6 above);
    `until` (a path) keeps calling past `calls` until that file exists;
    `started` (a path) is written once `calls` calls are done;
    `progress` (a path) holds the number of calls done so far;
    `outage` (true while the state store may be down) takes a call that
    ends with the store's error as refused, not wrong, and lists the
    subjects of refused creations in `refused_subjects`."""
    tag, folder, own = p["tag"], p["dir"], p["file"]
    kinds = p.get("kinds", list(range(6)))
    out = {"created": [], "wrong": [], "asked": 0, "refused": 0, "refused_subjects": []}
    edit_lock = asyncio.Lock()
    version = {"n": 0}

    async def on_elicit(ctx, params):
        out["asked"] += 1
        decision = "deny" if "-denied-" in params.message else "allow_once"
        return ElicitResult(action="accept", content={"decision": decision})

    def text_of(r):
        return "".join(getattr(c, "text", "") for c in r.content)

    # The SDK (2.3.0) can fail while it closes (a response stream still
    # forwarding into the closed session: anyio.ClosedResourceError) after
    # every call returned. What the calls saw is the result then; a failure
    # before the last list is not hidden.
    try:
        async with client(opts, elicitation_callback=on_elicit) as c:

            def refused(r):
                if p.get("outage") and r.is_error and "state store is unavailable" in text_of(r):
                    out["refused"] += 1
                    return True
                return False

            async def one(i):
                kind = kinds[i % len(kinds)]
                if kind == 0 or not out["created"]:
                    r = await c.call_tool("TaskCreate", {"subject": f"{tag}-{i}", "description": "load"})
                    t = text_of(r)
                    m = re.match(r"Task \(id=(\d+)\) created successfully: (.*)", t)
                    if refused(r):
                        out["refused_subjects"].append(f"{tag}-{i}")
                    elif r.is_error or not m or m.group(2) != f"{tag}-{i}":
                        out["wrong"].append(f"TaskCreate {i}: {t}")
                    else:
                        out["created"].append(int(m.group(1)))
                elif kind == 1:
                    task = out["created"][i % len(out["created"])]
                    r = await c.call_tool("TaskUpdate", {"task_id": str(task), "owner": tag})
                    if r.is_error and not refused(r):
                        out["wrong"].append(f"TaskUpdate {i}: {text_of(r)}")
                elif kind == 2:
                    r = await c.call_tool("TaskList", {})
                    t = text_of(r)
                    mine = [line for line in t.splitlines() if f" {tag}-" in line]
                    foreign = [line for line in t.splitlines() if line.strip() and not any(
                        f" {other}-" in line for other in p["sharing"])]
                    if refused(r):
                        return
                    if r.is_error or foreign:
                        out["wrong"].append(f"TaskList {i}: {foreign or t}")
                    out["listed"] = len(mine)
                elif kind == 3:
                    async with edit_lock:
                        r = await c.call_tool("Read", {"file_path": own})
                        if r.is_error or f"v{version['n']}" not in text_of(r):
                            out["wrong"].append(f"Read {i}: {text_of(r)}")
                        n = version["n"]
                        r = await c.call_tool("Edit", {"file_path": own, "old_string": f"v{n}", "new_string": f"v{n + 1}"})
                        if r.is_error:
                            out["wrong"].append(f"Edit {i}: {text_of(r)}")
                        else:
                            version["n"] = n + 1
                else:
                    which = "allowed" if kind == 4 else "denied"
                    target = os.path.join(folder, f"{tag}-{which}-{i}")
                    r = await c.call_tool("Bash", {"command": f"touch {target}"})
                    if (which == "allowed") == bool(r.is_error):
                        out["wrong"].append(f"Bash {which} {i}: {text_of(r)}")

            queue = list(range(p["calls"]))
            until = p.get("until")
            after = {"next": p["calls"], "done": 0}

            async def worker():
                while queue or (until and not os.path.exists(until)):
                    if queue:
                        i = queue.pop(0)
                    else:
                        i = after["next"]
                        after["next"] += 1
                    try:
                        await one(i)
                    except Exception as e:  # noqa: BLE001
                        if not p.get("outage"):
                            raise
                        out["wrong"].append(f"call {i} raised {e!r}: {getattr(e, 'data', None)}")
                    after["done"] += 1
                    if p.get("progress"):
                        # Replaced whole, so a reader never sees a half-written count.
                        partial = p["progress"] + ".tmp"
                        with open(partial, "w") as f:
                            f.write(str(after["done"]))
                        os.replace(partial, p["progress"])
                    if p.get("started") and after["done"] == p["calls"]:
                        open(p["started"], "w").close()

            await asyncio.gather(*(worker() for _ in range(p["inflight"])))
            final = text_of(await c.call_tool("TaskList", {}))
            out["final_list"] = final
            out["edits"] = version["n"]
    except BaseException as e:
        if "final_list" not in out:
            raise
        out["closing_error"] = repr(e)
    return out


async def scenario_tasks(opts, p):
    async with client(opts) as c:
        return {"results": [result_json(await c.call_tool(tool, args)) for tool, args in p["calls"]]}


def raw_session(url, method, body=None, session=None):
    """One HTTP request of a hand-driven legacy session; returns (status,
    session id, the JSON-RPC reply or None)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    req.add_header("MCP-Protocol-Version", "2025-11-25")
    if session:
        req.add_header("Mcp-Session-Id", session)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, sid, text = resp.status, resp.headers.get("Mcp-Session-Id"), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, None, None
    reply = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data:") and line[5:].strip():
            msg = json.loads(line[5:])
            if "id" in msg:
                reply = msg
        elif line.startswith("{"):
            reply = json.loads(line)
    return status, sid or session, reply


async def scenario_sessions(opts, p):
    create, lister = p["create"], p["list"]
    out = {}
    async with client(opts) as a, client(opts) as b:
        out["a_create"] = result_json(await a.call_tool(create[0], create[1]))
        out["a_list"] = result_json(await a.call_tool(lister[0], lister[1]))
        out["b_list"] = result_json(await b.call_tool(lister[0], lister[1]))
    url = opts["http"]

    def by_hand():
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        }
        _, sid, _ = raw_session(url, "POST", init)
        raw_session(url, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)

        def call(i, tool):
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool[0], "arguments": tool[1]}}
            _, _, reply = raw_session(url, "POST", body, sid)
            return "".join(c.get("text", "") for c in reply["result"]["content"])

        made = call(2, create)
        resumed = call(3, lister)  # a new connection with the same session id
        deleted, _, _ = raw_session(url, "DELETE", None, sid)
        return {"session": bool(sid), "created": made, "resumed_list": resumed, "deleted": deleted}

    out["by_hand"] = await asyncio.to_thread(by_hand)
    return out


async def scenario_stdio_stop(opts, p):
    """stdio: a slow call reports the server's pid (its shell's parent), the
    client sends the server SIGTERM, then a new call (refused: stopping),
    then collects the slow call's answer (inside the grace period)."""
    import signal

    pid_file = p["pid_file"]
    async with client(opts) as c:
        await c.list_tools()
        slow = asyncio.ensure_future(c.call_tool("Bash", {"command": f"echo $PPID > {pid_file}; sleep 2; echo slow-ok"}))
        while not (os.path.exists(pid_file) and open(pid_file).read().strip()):
            await asyncio.sleep(0.05)
        pid = int(open(pid_file).read())
        cmdline = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
        os.kill(pid, signal.SIGTERM)
        await asyncio.sleep(0.3)
        new = result_json(await c.call_tool("Bash", {"command": "echo new"}))
        return {"server": cmdline, "new": new, "slow": result_json(await slow)}


async def scenario_listen_until_stop(opts, p):
    """2026-07-28: listens for tool-list changes (creating `ready` once the
    subscription is acknowledged) until the stream ends, and says how it
    ended: "graceful" (the server's final result) or "lost"."""
    from mcp.client.subscriptions import SubscriptionLost

    out = {"ended": None}
    try:
        async with client(opts) as c:
            async with c.listen(tools_list_changed=True) as sub:
                open(p["ready"], "w").close()
                try:
                    async for _ in sub:
                        pass
                    out["ended"] = "graceful"
                except SubscriptionLost as e:
                    out.update(ended="lost", error=str(e))
    except Exception as e:
        # The server may be gone when the client closes: how the stream
        # ended was seen before.
        if out["ended"] is None:
            out.update(ended="error", error=repr(e))
    return out


async def scenario_groups(opts, p):
    seen = []

    async def on_message(message):
        seen.append(f"{type(message).__name__} {message!r}"[:500])

    async with client(opts, message_handler=on_message) as c:
        listening = None
        if opts["mode"] != "legacy":
            # 2026-07-28: changes come on a subscriptions/listen stream.
            listening = c.listen(tools_list_changed=True)
            sub = await listening.__aenter__()

            async def count():
                async for m in sub:
                    seen.append(f"listen {type(m).__name__}"[:500])

            counter = asyncio.create_task(count())
        before = (await c.list_tools()).tools
        inactive = await c.call_tool(p["tool"], p["args"])
        reset = await c.call_tool("reset_tools", p["groups"])
        # A notification sent during the call arrives before its result;
        # give a slow transport (or a listen stream) a moment all the same.
        await asyncio.sleep(0.5)
        after = (await c.list_tools()).tools
        active = await c.call_tool(p["tool"], p["args"])
        if listening is not None:
            counter.cancel()
            try:
                await listening.__aexit__(None, None, None)
            except Exception:
                pass
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


async def scenario_log_messages(opts, p):
    """Legacy: sets the log level `level`, creates `ready`, then collects
    the server's log messages until `count` have come (`seconds`, 30 by
    default, at most)."""
    messages = []
    arrived = asyncio.Event()

    async def on_log(params):
        messages.append({"level": str(params.level), "logger": params.logger, "data": params.data})
        if len(messages) >= p["count"]:
            arrived.set()

    async with client(opts, logging_callback=on_log) as c:
        await c.set_logging_level(p["level"])
        open(p["ready"], "w").close()
        try:
            await asyncio.wait_for(arrived.wait(), timeout=p.get("seconds", 30))
        except asyncio.TimeoutError:
            pass
        return {"messages": messages}


async def scenario_background_load(opts, p):
    out = {"before": None, "notified": 0, "after": None, "call": None, "logs": []}
    tool, timeout = p["tool"], p["timeout"]

    async def on_log(params):
        out["logs"].append({"level": str(params.level), "logger": params.logger, "data": params.data})

    async def until_listed(c, next_change):
        listed = await names(c)
        while tool not in listed:
            await asyncio.wait_for(next_change(), timeout=timeout)
            out["notified"] += 1
            listed = await names(c)
        out["after"] = listed
        out["call"] = result_json(await c.call_tool(tool, p["args"]))

    if opts["mode"] == "legacy":
        changes, on_message = list_changes()

        async with client(opts, message_handler=on_message, logging_callback=on_log) as c:
            out["before"] = await names(c)
            await until_listed(c, changes.get)
    else:
        async with client(opts) as c:
            out["before"] = await names(c)
            async with c.listen(tools_list_changed=True) as sub:
                events = sub.__aiter__()
                # Listed again once listening: no change falls between the two.
                await until_listed(c, events.__anext__)
    return out


SCENARIOS = {
    "background_load": scenario_background_load,
    "listen_until_stop": scenario_listen_until_stop,
    "stdio_stop": scenario_stdio_stop,
    "sessions": scenario_sessions,
    "list_changed": scenario_list_changed,
    "notified": scenario_notified,
    "tasks": scenario_tasks,
    "load": scenario_load,
    "groups": scenario_groups,
    "log_messages": scenario_log_messages,
    "list": scenario_list,
    "call": scenario_call,
    "elicit": scenario_elicit,
    "replay": scenario_replay,
    "replay_across": scenario_replay_across,
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
