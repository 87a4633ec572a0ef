//! The limits of `toolhost serve --http`, attacked from raw sockets: a body
//! over the limit is refused with 413, a client that sends its headers or
//! body too slowly (or nothing at all) loses its connection instead of
//! holding a worker, and the server keeps serving the real Python client
//! meanwhile. And the graceful stop: on SIGTERM no new call is taken,
//! running calls get the grace period, the rest are cancelled with their
//! process group killed, the session file is whole, and the exit code is 0.

use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_e2e::mcp::{HttpServer, Transport, client, client_command, raw, serve_args};
use toolhost_e2e::{Scratch, mcp_python, root, wait_for};

fn fixture(scratch: &Scratch, extra: &[&str]) -> HttpServer {
    let mut args = vec![
        env!("CARGO_BIN_EXE_mcp_fixture").to_string(),
        "--http".to_string(),
        "127.0.0.1:0".to_string(),
        "--cache-dir".to_string(),
        root().join("target/test-cache").display().to_string(),
        "--conformance".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    HttpServer::spawn(scratch, &args)
}

/// The head of a POST that declares `length` bytes of body.
fn post_head(addr: &str, length: usize) -> Vec<u8> {
    raw::head(addr, "POST", &[("Content-Length", &length.to_string())])
}

/// A `toolhost serve` still answers a call of the real client.
fn still_serves_toolhost(py: &std::path::Path, scratch: &Scratch, server: &HttpServer) {
    let r =
        client(py, scratch, &server.transport(None), "auto", "call", json!({"tool": "Glob", "args": {"pattern": "*"}}));
    assert_eq!(r["is_error"], false, "{r}");
}

fn still_serves(py: &std::path::Path, scratch: &Scratch, server: &HttpServer) {
    let r =
        client(py, scratch, &server.transport(None), "auto", "call", json!({"tool": "test_simple_text", "args": {}}));
    assert!(r["text"].as_str().unwrap().contains("simple text response"), "{r}");
}

#[test]
fn mcp_a_body_over_the_limit_is_refused_with_413() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = fixture(&scratch, &["--max-body-bytes", "2000"]);
    let addr = server.addr();
    let call = |pad: usize| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}, "_meta": {"pad": "x".repeat(pad)}}})
        .to_string();
        let mut request = post_head(&addr, body.len());
        request.extend_from_slice(body.as_bytes());
        raw::exchange(&addr, &request).0
    };
    let small = call(100);
    assert!(small.starts_with("HTTP/1.1 200"), "a body under the limit is served: {small}");
    let big = call(5000);
    assert!(big.starts_with("HTTP/1.1 413"), "{big}");
    assert!(big.contains("over 2000 bytes"), "{big}");
    // A body that claims a small length but streams on is cut at the limit too.
    let mut lying = post_head(&addr, 100_000);
    lying.extend(std::iter::repeat_n(b' ', 100_000));
    let (answer, _) = raw::exchange(&addr, &lying);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    still_serves(py, &scratch, &server);
}

/// A declared length over the limit is refused before the body is read:
/// the client is told 413 at once, not left to send 10 GB or time out.
#[test]
fn mcp_a_declared_length_over_the_limit_is_refused_at_once() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &[]);
    let addr = server.addr();
    // Ten bytes of the promised ten gigabytes, then nothing.
    let mut request = raw::request(&addr, "POST", &[("Content-Length", "10000000000")], "");
    request.extend_from_slice(b"{\"jsonrpc\"");
    let (answer, _) = raw::exchange(&addr, &request);
    assert_eq!(raw::status(&answer), 413, "{answer}");
    assert!(answer.contains("over 4194304 bytes"), "{answer}");
    assert_eq!(raw::header(&answer, "connection").as_deref(), Some("close"), "{answer}");
    // Chunked, with no length declared: the streamed bound still holds.
    let mut chunked = raw::head(&addr, "POST", &[("Transfer-Encoding", "chunked")]);
    for _ in 0..5 {
        chunked.extend_from_slice(format!("{:x}\r\n", 1 << 20).as_bytes());
        chunked.extend(std::iter::repeat_n(b' ', 1 << 20));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (answer, _) = raw::exchange(&addr, &chunked);
    assert_eq!(raw::status(&answer), 413, "{answer}");
    still_serves_toolhost(py, &scratch, &server);
}

#[test]
fn mcp_a_slow_or_dead_client_loses_its_connection() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = fixture(&scratch, &["--header-timeout-ms", "500", "--body-timeout-ms", "800"]);
    let addr = server.addr();
    // Dead clients: connected, silent, or stalled mid-headers; many at once.
    let silent: Vec<_> = (0..20)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let half = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n");
                raw::exchange(&addr, if i % 2 == 0 { b"" } else { half.as_bytes() })
            })
        })
        .collect();
    // Meanwhile a real client is served.
    still_serves(py, &scratch, &server);
    for t in silent {
        let (_, took) = t.join().unwrap();
        assert!(took < Duration::from_secs(10), "a silent client held its connection for {took:?}");
    }
    // A body that stops arriving: 408, then the connection is closed.
    let mut stalled = post_head(&addr, 1000);
    stalled.extend_from_slice(b"{\"jsonrpc\":");
    let (answer, took) = raw::exchange(&addr, &stalled);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    still_serves(py, &scratch, &server);
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn spawn_call(py: &std::path::Path, scratch: &Scratch, server: &HttpServer, command: &str) -> Child {
    let params = json!({"tool": "Bash", "args": {"command": command, "timeout": 120000}, "server_stops": true});
    client_command(py, scratch, &server.transport(None), "legacy", "call", &params)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the Python client")
}

#[test]
fn mcp_sigterm_stops_gracefully() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &["--grace", "3", "--allow", "Bash", "--session", "graceful"]);
    let work = scratch.work();
    let (quick_started, quick_done) = (work.join("quick-started"), work.join("quick-done"));
    let (slow_pid, slow_late) = (work.join("slow-pid"), work.join("slow-late"));
    // One call that ends inside the grace period, one that would not.
    let quick = spawn_call(
        py,
        &scratch,
        &server,
        &format!(
            "touch {}; sleep 1.5; echo finished > {}; echo quick-ok",
            quick_started.display(),
            quick_done.display()
        ),
    );
    let slow = spawn_call(
        py,
        &scratch,
        &server,
        &format!("echo $$ > {}; sleep 60; touch {}", slow_pid.display(), slow_late.display()),
    );
    wait_for("both calls to start", Duration::from_secs(60), || {
        quick_started.exists() && std::fs::read_to_string(&slow_pid).is_ok_and(|s| s.trim().parse::<i32>().is_ok())
    });
    let pid: i32 = std::fs::read_to_string(&slow_pid).unwrap().trim().parse().unwrap();
    let stopped_at = Instant::now();
    // SAFETY: sends SIGTERM to the server this test started.
    assert_eq!(unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) }, 0);

    // No new calls: the listener is closed at once.
    wait_for("the listener to close", Duration::from_secs(2), || TcpStream::connect(server.addr()).is_err());
    // The quick call finishes and its client gets the answer.
    let out = quick.wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("quick call: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["is_error"], false, "{r}");
    assert!(r["text"].as_str().unwrap().contains("quick-ok"), "{r}");
    assert_eq!(std::fs::read_to_string(&quick_done).unwrap(), "finished\n");
    // The slow one is cancelled after the grace period: its process group is
    // killed, and the server exits 0.
    let mut server = server;
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(stopped_at.elapsed() < Duration::from_secs(20), "the server did not exit after the grace period");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(stopped_at.elapsed() >= Duration::from_secs(2), "the slow call got no grace period");
    assert_eq!(status.code(), Some(0), "a graceful stop exits 0");
    wait_for("the cancelled command to die", Duration::from_secs(5), || !alive(pid));
    let mut slow = slow;
    let _ = slow.kill();
    let _ = slow.wait();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!slow_late.exists(), "the cancelled command ran on");
    // The named session (held by the server, saved at each change; these
    // Bash calls change nothing) is whole if it exists, and no temporary
    // file is left.
    let sessions = scratch.cli_sessions();
    if let Ok(saved) = std::fs::read_to_string(sessions.join("graceful.json")) {
        serde_json::from_str::<Value>(&saved).expect("the session file is whole JSON");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "graceful.json" && n != "graceful.json.lock")
        .collect();
    assert!(leftovers.is_empty(), "half-written files: {leftovers:?}");
}

#[test]
fn mcp_sigterm_on_stdio_refuses_new_calls_and_finishes_the_running_one() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let stdio = Transport::Stdio(serve_args(&["--grace", "10", "--allow", "Bash"]));
    let pid_file = scratch.work().join("server-pid");
    let r = client(py, &scratch, &stdio, "legacy", "stdio_stop", json!({"pid_file": pid_file}));
    assert!(r["server"].as_str().unwrap().contains("serve"), "signalled the server: {r}");
    assert_eq!(r["new"]["is_error"], true, "{r}");
    assert!(r["new"]["text"].as_str().unwrap().contains("stopping"), "{r}");
    assert_eq!(r["slow"]["is_error"], false, "{r}");
    assert!(r["slow"]["text"].as_str().unwrap().contains("slow-ok"), "{r}");
}

/// 2026-07-28: a `subscriptions/listen` stream ends with its final result
/// when the server stops (it would otherwise hold the stop for ever).
#[test]
fn mcp_sigterm_ends_listen_streams_gracefully() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &["--grace", "30"]);
    let ready = scratch.work().join("listening");
    let listener =
        client_command(py, &scratch, &server.transport(None), "auto", "listen_until_stop", &json!({"ready": ready}))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    wait_for("the subscription", Duration::from_secs(60), || ready.exists());
    let stopped_at = Instant::now();
    // SAFETY: sends SIGTERM to the server this test started.
    assert_eq!(unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) }, 0);
    let out = listener.wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("listener: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["ended"], "graceful", "{r}");
    let mut server = server;
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(stopped_at.elapsed() < Duration::from_secs(20), "a listener held the stop");
    };
    assert_eq!(status.code(), Some(0));
}
