//! MCP across `serve` replicas on one Redis (issue #31): a replica's
//! tool-set changes and reload errors reach the listeners of the others; a
//! 2025-11-25 session is taken by any replica and deleted through any; a
//! stream cut on one resumes on another; an answer posted through another
//! replica reaches the call that asked; three replicas behind a
//! round-robin proxy serve the Python SDK as one server; and a load of
//! 1 000 calls through them has no wrong outcome.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_e2e::mcp::Transport;
use toolhost_e2e::mcp::{HttpServer, client};
use toolhost_e2e::proxy::RoundRobin;
use toolhost_e2e::redis::RedisServer;
use toolhost_e2e::{Scratch, mcp_python, text, wait_for};

/// Tool-list changes and reload errors across replicas (issue #31): a
/// plugin added to C's watched folder reaches the clients listening on A
/// (both protocol generations: their next request may reach C), and C's
/// reload error reaches a 2025-11-25 session held on A as a log message,
/// once. A has no plugin folder of its own.
#[test]
fn a_change_of_one_replicas_tools_reaches_the_listeners_of_another() {
    use toolhost_e2e::mcp::client_command;
    let Some(py) = mcp_python() else { return };
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "fanout");
    let plugins = scratch.outside("c-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let a = HttpServer::start_with(&scratch, &["--config", config.to_str().unwrap()], &["--replica-id", "a"]);
    let c_global = ["--config", config.to_str().unwrap(), "--plugins", plugins.to_str().unwrap()];
    let _c = HttpServer::start_with(&scratch, &c_global, &["--replica-id", "c", "--watch"]);
    // Two tools of their own names: a second copy of one would clash.
    for (mode, guest) in [("legacy", "echo"), ("auto", "counter")] {
        let ready = scratch.outside(&format!("listening-{mode}"));
        let logs = if mode == "legacy" { 1 } else { 0 };
        let params = json!({"ready": ready, "logs": logs, "level": "error"});
        let listener = client_command(py, &scratch, &a.transport(None), mode, "notified", &params)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for("the client to listen on A", Duration::from_secs(60), || ready.exists());
        std::fs::copy(toolhost_e2e::guest(guest), plugins.join(format!("{guest}.wasm"))).unwrap();
        if mode == "legacy" {
            std::fs::write(plugins.join("broken.wasm"), b"\0asm not a component").unwrap();
        }
        let out = listener.wait_with_output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{mode}: the listener on A was not told: {stdout}\n{stderr}");
        let got: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(got["changed"], 1, "{mode}: {got}");
        if mode == "legacy" {
            let logs = got["logs"].as_array().unwrap();
            assert_eq!(logs.len(), 1, "the reload error once: {got}");
            assert_eq!(logs[0]["logger"], "toolhost.reload", "{got}");
            assert!(logs[0]["data"]["file"].as_str().unwrap().ends_with("broken.wasm"), "{got}");
        }
    }
}

/// 2025-11-25 sessions on any replica (issue #31): a session initialised
/// on A takes its next request on B (restored from the shared record, in
/// the same agent state), two sessions never see each other's tasks, and a
/// DELETE through B ends the session on A too, its keys gone.
#[test]
fn a_session_begun_on_one_replica_is_taken_by_another_and_deleted_through_any() {
    use toolhost_e2e::mcp::raw;
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "sessions");
    let global = ["--config", config.to_str().unwrap(), "--allow", "TaskCreate", "--allow", "TaskList"];
    let a = HttpServer::start_with(&scratch, &global, &["--replica-id", "a"]);
    let b = HttpServer::start_with(&scratch, &global, &["--replica-id", "b"]);
    let (a, b) = (a.addr(), b.addr());
    let call = |addr: &str, session: &str, tool: &str, args: Value| -> (u16, String) {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": args}})
        .to_string();
        let (answer, _) = raw::exchange(addr, &raw::in_session(addr, session, "POST", &body));
        let reply = raw::reply(&answer).unwrap_or_default();
        assert!(reply["result"]["isError"] != true, "{tool} on {addr}: {answer}");
        (raw::status(&answer), reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string())
    };

    let session = raw::initialize(&a);
    let made = json!({"subject": "made on B", "description": "d"});
    assert_eq!(call(&b, &session, "TaskCreate", made).0, 200, "B takes a session it never saw");
    let (status, listed) = call(&a, &session, "TaskList", json!({}));
    assert_eq!(status, 200);
    assert!(listed.contains("made on B"), "A lists what B made in the session: {listed}");
    let other = raw::initialize(&b);
    let (_, listed) = call(&a, &other, "TaskList", json!({}));
    assert!(!listed.contains("made on B"), "another session's tasks: {listed}");

    let (answer, _) = raw::exchange(&b, &raw::in_session(&b, &session, "DELETE", ""));
    assert!(raw::status(&answer) < 300, "DELETE through B: {answer}");
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}).to_string();
    wait_for("A to end the deleted session", Duration::from_secs(10), || {
        let (answer, _) = raw::exchange(&a, &raw::in_session(&a, &session, "POST", &body));
        raw::status(&answer) == 404
    });
    let (answer, _) = raw::exchange(&b, &raw::in_session(&b, &session, "POST", &body));
    assert_eq!(raw::status(&answer), 404, "B too: {answer}");
    let state = format!("sessions:state:{}:*", toolhost::state::StateKey::of_session(&session));
    assert!(server.keys(&state).is_empty(), "the session's state is gone: {:?}", server.keys("sessions:*"));
    assert_eq!(server.keys("sessions:record:mcp-session:*").len(), 1, "the other session's record stays");
}

/// A stream cut on one replica resumes on another (issue #31): a call's
/// response stream is cut on A after its first event, and a `GET` with
/// `Last-Event-ID` on B (which never saw the session) gets the rest, the
/// call's result included; the events in Redis are sealed (no output in
/// clear there).
#[test]
fn a_stream_cut_on_one_replica_resumes_on_another_with_the_result() {
    use std::io::Write as _;
    use toolhost_e2e::mcp::raw;
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "resume");
    let global = ["--config", config.to_str().unwrap(), "--allow", "Bash"];
    let a = HttpServer::start_with(&scratch, &global, &["--replica-id", "a"]);
    let b = HttpServer::start_with(&scratch, &global, &["--replica-id", "b"]);
    let (a, b) = (a.addr(), b.addr());
    let session = raw::initialize(&a);
    let body = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": "Bash", "arguments": {"command": "sleep 2; echo secret-output-$((6*7))"}}})
    .to_string();
    let mut cut = std::net::TcpStream::connect(&a).unwrap();
    cut.write_all(&raw::in_session(&a, &session, "POST", &body)).unwrap();
    let first = raw::read_until(&mut cut, |got| got.lines().any(|l| l.starts_with("id:")));
    let last_id =
        first.lines().find_map(|l| l.strip_prefix("id:")).expect("a first event with an id").trim().to_string();
    assert!(!first.contains("secret-output"), "cut before the answer: {first}");
    drop(cut);

    let get = raw::head(
        &b,
        "GET",
        &[("Mcp-Session-Id", &session), ("MCP-Protocol-Version", raw::LEGACY), ("Last-Event-ID", &last_id)],
    );
    let mut resumed = std::net::TcpStream::connect(&b).unwrap();
    resumed.write_all(&get).unwrap();
    let rest = raw::read_until(&mut resumed, |got| got.contains("secret-output-42"));
    assert!(rest.contains("secret-output-42"), "B resumed A's stream with the result: {rest}");
    assert!(rest.contains("\"id\":41"), "{rest}");

    let logs = server.keys("resume:events:*");
    assert!(!logs.is_empty(), "the events are kept in Redis");
    let dump = server.cli(&["XRANGE", &logs[0], "-", "+"]);
    assert!(!dump.contains("secret-output") && !dump.contains("sleep 2"), "sealed: {dump}");
}

/// A 2025-11-25 answer reaches the waiting call across replicas (issue
/// #31): a call on A asks (`elicitation/create`, its id the deployment's:
/// `a~N`), the client posts the answer through B, and the call on A runs
/// once with it; an answer to an id no replica gave changes nothing.
#[test]
fn an_answer_posted_through_another_replica_reaches_the_call_that_asked() {
    use std::io::Write as _;
    use toolhost_e2e::mcp::raw;
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "answers");
    let global = ["--config", config.to_str().unwrap()];
    let a = HttpServer::start_with(&scratch, &global, &["--replica-id", "a"]);
    let b = HttpServer::start_with(&scratch, &global, &["--replica-id", "b"]);
    let (a, b) = (a.addr(), b.addr());
    let session = raw::initialize_with(&a, json!({"elicitation": {}}));
    let made = scratch.work().join("made-through-b");
    let body = json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call",
        "params": {"name": "Bash", "arguments": {"command": format!("touch {}", made.display())}}})
    .to_string();
    let mut call = std::net::TcpStream::connect(&a).unwrap();
    call.write_all(&raw::in_session(&a, &session, "POST", &body)).unwrap();
    let asked = raw::read_until(&mut call, |got| got.contains("elicitation/create"));
    let request: Value = asked
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("A asked: {asked}"));
    let id = request["id"].as_str().unwrap_or_else(|| panic!("a deployment id: {request}")).to_string();
    assert!(id.starts_with("a~"), "{id}");

    // An answer to an id no replica gave: dropped, nothing runs.
    let stray = json!({"jsonrpc": "2.0", "id": "c~1", "result": {"action": "accept",
        "content": {"decision": "allow_once"}}})
    .to_string();
    let (answer, _) = raw::exchange(&b, &raw::in_session(&b, &session, "POST", &stray));
    assert!(raw::status(&answer) < 300, "{answer}");
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept",
        "content": {"decision": "allow_once"}}})
    .to_string();
    let (posted, _) = raw::exchange(&b, &raw::in_session(&b, &session, "POST", &answer));
    assert_eq!(raw::status(&posted), 202, "B takes the answer: {posted}");
    let rest = raw::read_until(&mut call, |got| got.contains("\"id\":51"));
    assert!(rest.contains("\"id\":51") && !rest.contains("\"isError\":true"), "the call on A ran: {rest}");
    assert!(made.exists(), "ran once with the answer given through B");
}

/// Three replicas `r1`…`r3` (`toolhost <global…> serve --http`) behind a
/// round-robin proxy, and the transport to the proxy.
fn three_behind_a_proxy(
    scratch: &Scratch,
    global: &[&str],
    extra: &[&str],
) -> (Vec<HttpServer>, RoundRobin, Transport) {
    let replicas: Vec<HttpServer> = ["r1", "r2", "r3"]
        .iter()
        .map(|id| HttpServer::start_with(scratch, global, &[&["--replica-id", id], extra].concat()))
        .collect();
    let proxy = RoundRobin::start(replicas.iter().map(HttpServer::addr).collect());
    let transport = Transport::Http { url: proxy.url(), token: None };
    (replicas, proxy, transport)
}

/// Three replicas behind a round-robin proxy (every HTTP request to the
/// next replica), driven by the Python SDK in both protocol generations
/// (issue #31): a session's tasks are its own and all there whichever
/// replica took each call, a deleted session is gone on all, and a
/// question asked on one replica is answered through another — a
/// 2025-11-25 elicitation and a 2026-07-28 round — the command running once.
#[test]
fn three_replicas_behind_a_round_robin_proxy_serve_one_client_as_one_server() {
    let Some(py) = mcp_python() else { return };
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "proxied");
    let global = ["--config", config.to_str().unwrap(), "--allow", "TaskCreate", "--allow", "TaskList"];
    let (_replicas, proxy, transport) = three_behind_a_proxy(&scratch, &global, &[]);

    let params = json!({"create": ["TaskCreate", {"subject": "mine", "description": "d"}], "list": ["TaskList", {}]});
    let r = client(py, &scratch, &transport, "legacy", "sessions", params);
    assert!(r["a_list"]["text"].as_str().unwrap().contains("mine"), "{r}");
    assert!(!r["b_list"]["text"].as_str().unwrap().contains("mine"), "another session's: {r}");
    assert!(r["by_hand"]["resumed_list"].as_str().unwrap().contains("mine"), "{r}");
    assert!(r["by_hand"]["deleted"].as_u64().unwrap() < 300, "{r}");

    for (n, mode) in ["legacy", "auto"].into_iter().enumerate() {
        let made = scratch.work().join(format!("asked-{n}"));
        let params = json!({"tool": "Bash", "args": {"command": format!("touch {}", made.display())},
            "answer": "allow_once"});
        let r = client(py, &scratch, &transport, mode, "elicit", params);
        assert_eq!(r["is_error"], false, "{mode}: {r}");
        assert_eq!(r["asked"].as_array().unwrap().len(), 1, "{mode}: asked once: {r}");
        assert!(made.exists(), "{mode}: ran with the answer");
    }
    let spread: Vec<usize> = proxy.counts.iter().map(|c| c.load(std::sync::atomic::Ordering::Relaxed)).collect();
    assert!(spread.iter().all(|&n| n > 2), "every replica took requests: {spread:?}");
}

/// Load (issue #31): three replicas behind the round-robin proxy (every
/// request to the next replica), eight 2025-11-25 sessions and two
/// sessionless (2026-07-28) clients, 1 000 calls in all, 32 in flight:
/// task creations, updates and listings, Read then Edit of each client's
/// own file, and commands asked about (allowed once or denied). No wrong
/// outcome: every call reported as done took effect exactly once, every
/// denied command ran nothing, every session's task list is exactly its
/// own with unique ids, every file holds exactly its edits.
#[test]
fn a_thousand_calls_through_three_replicas_have_no_wrong_outcome() {
    use toolhost_e2e::mcp::client_command;
    let Some(py) = mcp_python() else { return };
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "load");
    let mut global = vec!["--config", config.to_str().unwrap()];
    for tool in ["TaskCreate", "TaskUpdate", "TaskList", "Read", "Edit"] {
        global.extend(["--allow", tool]);
    }
    let (replicas, proxy, transport) = three_behind_a_proxy(&scratch, &global, &["--metrics", "127.0.0.1:0"]);
    let outputs = scratch.work().join("out");
    std::fs::create_dir_all(&outputs).unwrap();

    let clients: Vec<(String, &str)> =
        (0..10).map(|n| (format!("c{n}"), if n < 8 { "legacy" } else { "auto" })).collect();
    let sessionless: Vec<&str> = clients.iter().filter(|(_, m)| *m == "auto").map(|(t, _)| t.as_str()).collect();
    let running: Vec<_> = clients
        .iter()
        .map(|(tag, mode)| {
            let file = scratch.work().join(format!("{tag}.txt"));
            std::fs::write(&file, "version v0 of the file\n").unwrap();
            // A sessionless client shares the one sessionless state with the other.
            let sharing: Vec<&str> = if *mode == "auto" { sessionless.clone() } else { vec![tag.as_str()] };
            let params = json!({"tag": tag, "dir": outputs, "file": file, "calls": 100, "inflight": 3,
                "sharing": sharing});
            let child = client_command(py, &scratch, &transport, mode, "load", &params)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (tag.clone(), *mode, file, child)
        })
        .collect();
    let mut creations = 0;
    for (tag, mode, file, child) in running {
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{tag} ({mode}): {stdout}\n{stderr}");
        let got: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(got["wrong"], json!([]), "{tag} ({mode}): wrong outcomes");
        let created: Vec<u64> = got["created"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let mut unique = created.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), created.len(), "{tag}: a task id given twice: {created:?}");
        creations += created.len();
        let listed: Vec<&str> =
            got["final_list"].as_str().unwrap().lines().filter(|l| l.contains(&format!(" {tag}-"))).collect();
        assert_eq!(listed.len(), created.len(), "{tag}: every task made is listed once: {listed:?}");
        let edits = got["edits"].as_u64().unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("version v{edits} of the file\n"), "{tag}");
        assert!(got["asked"].as_u64().unwrap() > 0, "{tag}: {got}");
        for i in 0..100 {
            let allowed = outputs.join(format!("{tag}-allowed-{i}"));
            assert_eq!(allowed.exists(), i % 6 == 4, "{tag}: {}", allowed.display());
            assert!(!outputs.join(format!("{tag}-denied-{i}")).exists(), "{tag}: a denied command ran");
        }
    }
    let spread: Vec<usize> = proxy.counts.iter().map(|c| c.load(std::sync::atomic::Ordering::Relaxed)).collect();
    assert!(spread.iter().all(|&n| n > 200), "the load went to every replica: {spread:?}");
    let conflicts: u64 =
        replicas.iter().map(|r| metric(r, r#"toolhost_state_conflicts_total{tool="TaskCreate"}"#)).sum();
    eprintln!(
        "1000 calls, {creations} tasks made, {conflicts} compare-and-set conflicts in TaskCreate ({:.3} a TaskCreate); \
         requests per replica: {spread:?}",
        conflicts as f64 / creations as f64
    );
}

/// The value of the series `series` (its name and labels) in the metrics of
/// `replica`.
fn metric(replica: &HttpServer, series: &str) -> u64 {
    let (status, text) = toolhost_e2e::mcp::http_get(&replica.metrics_addr(), "/metrics", None);
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in the metrics of a replica:\n{text}"))
}

/// `toolhost <global…> serve --http 127.0.0.1:PORT --replica-id ID`.
fn replica_on(scratch: &Scratch, global: &[&str], port: u16, id: &str) -> HttpServer {
    let mut args = toolhost_e2e::mcp::serve_args(&[]);
    args.pop(); // `serve`, which goes after the global flags
    args.extend(global.iter().map(|s| s.to_string()));
    args.extend(["serve", "--http", &format!("127.0.0.1:{port}"), "--replica-id", id].map(String::from));
    HttpServer::spawn(scratch, &args)
}

/// A `tools/call` of `tool` with `args` in the 2025-11-25 session
/// `session` at `addr`: the HTTP status and the result (`null` without one).
fn session_call(addr: &str, session: &str, tool: &str, args: Value) -> (u16, Value) {
    use toolhost_e2e::mcp::raw;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        .to_string();
    let (answer, _) = raw::exchange(addr, &raw::in_session(addr, session, "POST", &body));
    (raw::status(&answer), raw::reply(&answer).map(|r| r["result"].clone()).unwrap_or(Value::Null))
}

/// Faults (issue #31). A replica killed (SIGKILL) in the middle of a call
/// loses that call only: the client's next requests go through the other
/// replica in the same session, and the killed one, started again on its
/// port, takes the session too. Redis restarted (append-only file on): a
/// call in the outage ends within the command timeout with the store's
/// error and changes nothing, a tool that keeps no state still runs (its
/// events unkept, a resumption after them an empty stream), and the replicas carry
/// on afterwards without a restart, every task made before or after there
/// once.
#[test]
fn a_replica_killed_mid_call_or_a_redis_restart_loses_only_what_was_running() {
    use toolhost_e2e::mcp::raw;
    let Some(mut server) = RedisServer::start_persistent() else { return };
    let scratch = Scratch::new();
    let config = quick_timeout(server.deployment_settings(&scratch, "faults"));
    let global =
        ["--config", config.to_str().unwrap(), "--allow", "TaskCreate", "--allow", "TaskList", "--allow", "Bash"];
    let port_a = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut a = replica_on(&scratch, &global, port_a, "a");
    let b = HttpServer::start_with(&scratch, &global, &["--replica-id", "b"]);
    let (addr_a, addr_b) = (a.addr(), b.addr());
    let session = toolhost_e2e::mcp::raw::initialize(&addr_a);
    let task = |subject: &str| json!({"subject": subject, "description": "d"});
    assert_eq!(session_call(&addr_a, &session, "TaskCreate", task("before")).0, 200);

    // A call running on A when A is killed. (Its command, in a process
    // group of its own, is not killed with A: it runs to its end.)
    let late = scratch.work().join("finished-late");
    let (slow_addr, slow_session) = (addr_a.clone(), session.clone());
    let command = format!("sleep 5; touch {}", late.display());
    let slow = std::thread::spawn(move || session_call(&slow_addr, &slow_session, "Bash", json!({"command": command})));
    std::thread::sleep(Duration::from_millis(800));
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let (status, result) = slow.join().unwrap();
    assert!(status != 200 || result.is_null(), "the killed call did not complete: {status} {result}");
    let (status, result) = session_call(&addr_b, &session, "TaskCreate", task("after the kill"));
    assert_eq!((status, &result["isError"]), (200, &json!(false)), "B takes the session: {result}");
    let a = replica_on(&scratch, &global, port_a, "a");
    let (_, listed) = session_call(&a.addr(), &session, "TaskList", json!({}));
    let listed = listed["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(listed.contains("before") && listed.contains("after the kill"), "A, started again: {listed}");

    // Redis restarted: what it acknowledged is there after.
    server.stop();
    let started = std::time::Instant::now();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "TaskCreate", "arguments": task("in the outage")}})
    .to_string();
    let (answer, _) = raw::exchange(&addr_b, &raw::in_session(&addr_b, &session, "POST", &body));
    assert!(started.elapsed() < Duration::from_secs(10), "the store's error came within the timeout");
    // The answer still reaches the client (only its resumption is lost).
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("state store is unavailable") && answer.contains("nothing was changed"),
        "the store's error: {answer}"
    );
    // A tool that keeps no state still runs; its events are not kept, so a
    // resumption after them gets nothing.
    let (status, result) = session_call(&addr_b, &session, "Bash", json!({"command": "echo still-served"}));
    assert_eq!((status, &result["isError"]), (200, &json!(false)), "{result}");
    assert!(result.to_string().contains("still-served"), "{result}");
    let body = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "Bash", "arguments": {"command": "echo again"}}})
    .to_string();
    let (answer, _) = raw::exchange(&addr_b, &raw::in_session(&addr_b, &session, "POST", &body));
    let unkept =
        answer.lines().filter_map(|l| l.strip_prefix("id:")).next_back().expect("an event id").trim().to_string();
    assert!(unkept.ends_with(".unlogged"), "{answer}");
    let get = raw::head(
        &addr_b,
        "GET",
        &[("Mcp-Session-Id", &session), ("MCP-Protocol-Version", raw::LEGACY), ("Last-Event-ID", &unkept)],
    );
    // An empty stream that ends at once (an HTTP error would make an
    // EventSource retry for ever), not one waiting for events never kept.
    let (refused, took) = raw::exchange(&addr_b, &get);
    assert!(refused.starts_with("HTTP/1.1 200") && !refused.contains("data:"), "{refused}");
    assert!(took < Duration::from_secs(5), "it ended at once: {took:?}");
    server.restart();
    wait_for("B to reach Redis again", Duration::from_secs(20), || {
        session_call(&addr_b, &session, "TaskCreate", task("after the restart")).1["isError"] == false
    });
    let (_, listed) = session_call(&a.addr(), &session, "TaskList", json!({}));
    let listed = listed["content"][0]["text"].as_str().unwrap_or_default().to_string();
    for subject in ["before", "after the kill", "after the restart"] {
        assert_eq!(listed.matches(subject).count(), 1, "{subject} once: {listed}");
    }
    assert!(!listed.contains("in the outage"), "the call in the outage changed nothing: {listed}");
}

/// `config` (a deployment's settings, ending with `[state.redis]`) with a
/// store command timeout of 500 ms.
fn quick_timeout(config: std::path::PathBuf) -> std::path::PathBuf {
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("command_timeout_ms = 500\n");
    std::fs::write(&config, text).unwrap();
    config
}

/// Redis restarted during the load (issue #31): four 2025-11-25 clients
/// make, update and list tasks through three replicas behind the proxy
/// while Redis is killed and started again (append-only file, fsync always),
/// once their sessions are on every replica.
/// A call in the outage ends with the store's error; no call reported as
/// done is lost or applied twice (each task made is listed exactly once, no
/// subject twice, a refused one at most once); every list parses; and the
/// load goes on after it through the same replicas.
#[test]
fn a_redis_restart_during_the_load_loses_no_call_reported_done() {
    use toolhost_e2e::mcp::client_command;
    let Some(py) = mcp_python() else { return };
    let Some(mut server) = RedisServer::start_persistent() else { return };
    let scratch = Scratch::new();
    let config = quick_timeout(server.deployment_settings(&scratch, "outage"));
    let mut global = vec!["--config", config.to_str().unwrap()];
    for tool in ["TaskCreate", "TaskUpdate", "TaskList"] {
        global.extend(["--allow", tool]);
    }
    let (_replicas, _proxy, transport) = three_behind_a_proxy(&scratch, &global, &[]);
    let until = scratch.work().join("stop-the-load");
    let running: Vec<_> = (0..4)
        .map(|n| {
            let tag = format!("o{n}");
            let started = scratch.work().join(format!("{tag}-started"));
            let progress = scratch.work().join(format!("{tag}-progress"));
            let params = json!({"tag": tag, "dir": scratch.work(), "file": "", "calls": 30, "inflight": 3,
                "sharing": [tag], "kinds": [0, 1, 2], "outage": true, "until": until, "started": started,
                "progress": progress});
            let child = client_command(py, &scratch, &transport, "legacy", "load", &params)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (tag, child)
        })
        .collect();
    // Every session began, and was taken by every replica (its 30 calls went
    // round them), before the outage: a session cannot begin, nor move to
    // a replica that never had it, while Redis is down.
    wait_for("every client to make its first calls", Duration::from_secs(60), || {
        (0..4).all(|n| scratch.work().join(format!("o{n}-started")).exists())
    });
    server.stop();
    std::thread::sleep(Duration::from_secs(2));
    server.restart();
    // The load goes on after the restart: every client makes 30 more calls
    // (10 of them creates) through the same replicas, however fast the
    // machine is.
    let done = |n: usize| {
        let text = std::fs::read_to_string(scratch.work().join(format!("o{n}-progress"))).unwrap_or_default();
        text.trim().parse::<u64>().unwrap_or(0)
    };
    let at_restart: Vec<u64> = (0..4).map(done).collect();
    wait_for("every client to make 30 calls after the restart", Duration::from_secs(90), || {
        (0..4).all(|n| done(n) >= at_restart[n] + 30)
    });
    std::fs::write(&until, "").unwrap();

    let mut refused = 0;
    for (tag, child) in running {
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{tag}: {stdout}\n{stderr}");
        let got: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(got["wrong"], json!([]), "{tag}: wrong outcomes");
        refused += got["refused"].as_u64().unwrap();
        if let Some(closing) = got.get("closing_error") {
            eprintln!("{tag}: the client failed while closing, after its last call: {closing}");
        }
        let final_list = got["final_list"].as_str().unwrap();
        // Lines of `ID [STATUS] SUBJECT(OWNER)`.
        let subject_of = |line: &str| {
            let word = line.split_whitespace().find(|w| w.starts_with(&format!("{tag}-")))?;
            Some(word.split('(').next().unwrap_or(word).to_string())
        };
        let subjects: Vec<String> = final_list.lines().filter_map(subject_of).collect();
        let listed_once = |subject: &str| subjects.iter().filter(|s| **s == subject).count();
        let created = got["created"].as_array().unwrap();
        assert!(created.len() >= 15, "{tag}: the calls before and after the restart made tasks: {got}");
        for id in created {
            let line = final_list
                .lines()
                .find(|l| l.starts_with(&format!("{id} [")))
                .unwrap_or_else(|| panic!("{tag}: task {id}, reported made, is listed: {final_list}"));
            let subject = subject_of(line).unwrap_or_else(|| panic!("{tag}: a line that does not parse: {line}"));
            assert_eq!(listed_once(&subject), 1, "{tag}: {subject} once: {final_list}");
        }
        for subject in got["refused_subjects"].as_array().unwrap() {
            assert!(listed_once(subject.as_str().unwrap()) <= 1, "{tag}: {subject} at most once: {final_list}");
        }
    }
    assert!(refused > 0, "calls were made during the outage and refused");
}

/// Redis without persistence restarted (issue #31): what `docs/deploy.md`
/// says happens. The tasks are gone; the replica holding a 2025-11-25
/// session serves it on with an empty list, and one that never saw it
/// cannot restore it (404: the client initialises again).
#[test]
fn a_redis_without_persistence_restarted_loses_the_state_as_documented() {
    let Some(mut server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = quick_timeout(server.deployment_settings(&scratch, "volatile"));
    let global = ["--config", config.to_str().unwrap(), "--allow", "TaskCreate", "--allow", "TaskList"];
    let a = HttpServer::start_with(&scratch, &global, &["--replica-id", "a"]);
    let b = HttpServer::start_with(&scratch, &global, &["--replica-id", "b"]);
    let (addr_a, addr_b) = (a.addr(), b.addr());
    let session = toolhost_e2e::mcp::raw::initialize(&addr_a);
    let made = session_call(&addr_a, &session, "TaskCreate", json!({"subject": "kept?", "description": "d"}));
    assert_eq!((made.0, &made.1["isError"]), (200, &json!(false)), "{made:?}");

    server.stop();
    server.restart();
    wait_for("A to reach Redis again", Duration::from_secs(20), || {
        session_call(&addr_a, &session, "TaskList", json!({})).1["isError"] == false
    });
    let (_, listed) = session_call(&addr_a, &session, "TaskList", json!({}));
    assert!(!listed.to_string().contains("kept?"), "the task is gone: {listed}");
    let (status, _) = session_call(&addr_b, &session, "TaskList", json!({}));
    assert_eq!(status, 404, "a replica that never saw the session cannot restore it");
}
