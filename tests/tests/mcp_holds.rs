//! Clients that try to hold `toolhost serve --http` (issue 29, item 7),
//! attacked from raw sockets over loopback while the real Python client
//! (`mcp` 2.3.0) must still be served: long-lived streams no one reads have
//! a bound of their own and take no connection slot; a client that stops
//! reading loses its connection after the write deadline; a flood of
//! `initialize` is bounded in sessions (unused ones evicted first) and in
//! time. Every flood is bounded in count, and everything it opens is closed
//! when its test ends.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;
use toolhost_e2e::mcp::{HttpServer, MODES, client, raw};
use toolhost_e2e::{Scratch, mcp_python, wait_for};

/// The streams the attacker opened: more than the 512 connection
/// slots.
const ATTACK_STREAMS: usize = 530;

/// Connects and sends `bytes`; reads nothing.
fn send_only(addr: &str, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connecting");
    stream.write_all(bytes).expect("writing");
    stream
}

/// Reads a response's head (up to the blank line) and nothing more.
fn read_head(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// A call of the real client, in `mode`, is served.
fn a_new_client_calls(py: &std::path::Path, scratch: &Scratch, server: &HttpServer, mode: &str) {
    let r =
        client(py, scratch, &server.transport(None), mode, "call", json!({"tool": "Glob", "args": {"pattern": "*"}}));
    assert_eq!(r["is_error"], false, "{mode}: {r}");
}

fn call_is_served(answer: &str) {
    let reply = raw::reply(answer).unwrap_or_else(|| panic!("no reply: {answer}"));
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
}

/// 530 `subscriptions/listen` streams and two GET streams whose bodies are
/// never read: before, each held one of the 512 connection slots for as long
/// as the attacker liked, and the next client got 503. Now streams are
/// bounded apart from the connection slots (32 per client address, 256 in
/// all): the rest are refused at once with `Retry-After`, and a new client's
/// calls are served in both generations.
#[test]
fn mcp_unread_streams_have_their_own_bound_and_leave_room_for_calls() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &[]);
    let addr = server.addr();
    // The two GET streams open first (the server serves a burst of
    // connections in no set order), then the flood: together they may hold
    // 32, so a GET stream takes a stream slot like any other stream.
    let mut held: Vec<TcpStream> = [raw::initialize(&addr), raw::initialize(&addr)]
        .iter()
        .map(|session| send_only(&addr, &raw::in_session(&addr, session, "GET", "")))
        .collect();
    let mut heads: Vec<String> = held.iter_mut().map(read_head).collect();
    for head in &heads {
        assert_eq!(raw::status(head), 200, "a GET stream: {head}");
    }
    let mut flood: Vec<TcpStream> = (0..ATTACK_STREAMS).map(|_| send_only(&addr, &raw::listen(&addr))).collect();
    heads.extend(flood.iter_mut().map(read_head));
    held.extend(flood);
    let open = heads.iter().filter(|h| raw::status(h) == 200).count();
    assert_eq!(
        open,
        32,
        "streams one address may hold, the two GET streams among them; first heads: {:?}",
        &heads[..3]
    );
    for refused in heads.iter().filter(|h| raw::status(h) != 200) {
        assert_eq!(raw::status(refused), 503, "{refused}");
        assert!(raw::header(refused, "retry-after").is_some(), "{refused}");
    }
    let mut body = String::new();
    let refused = held.iter_mut().zip(&heads).find(|(_, h)| raw::status(h) == 503).unwrap().0;
    let _ = refused.read_to_string(&mut body);
    assert!(body.contains("streams"), "the refusal says why: {body}");
    // Meanwhile a new client calls, sessionless and in a session.
    for mode in MODES {
        a_new_client_calls(py, &scratch, &server, mode);
    }
    // Streams whose client went away give their slots back (at the latest
    // when the next keep-alive comment, every 15 s, finds them gone).
    drop(held);
    let mut reopened = Vec::new();
    wait_for("the stream slots to be free again", Duration::from_secs(60), || {
        let mut stream = send_only(&addr, &raw::listen(&addr));
        if raw::status(&read_head(&mut stream)) == 200 {
            reopened.push(stream);
        } else {
            std::thread::sleep(Duration::from_millis(200));
        }
        reopened.len() == 32
    });
}

/// A 2025-11-25 client that can elicit starts calls that ask (Bash in the
/// default mode) and never answers: before, each question held its
/// connection slot for as long as it went unanswered, and with as many
/// questions as slots the next client got 503. Now a request waiting for
/// the user's answer gives its connection slot back and waits on a stream
/// slot (32 per address); past that a question is not asked and its call
/// is denied, saying why; and a new client's calls are served.
#[test]
fn mcp_unanswered_questions_leave_room_for_calls() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &["--max-connections", "4"]);
    let addr = server.addr();
    let session = raw::initialize_with(&addr, json!({"elicitation": {"form": {}}}));
    let call = |i: usize| {
        let body = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
            "params": {"name": "Bash", "arguments": {"command": format!("touch asked-{i}")}}});
        raw::in_session(&addr, &session, "POST", &body.to_string())
    };
    let mut waiting = Vec::new();
    for i in 0..32 {
        let mut stream = send_only(&addr, &call(i));
        let seen = raw::read_until(&mut stream, |got| got.contains("elicitation/create"));
        assert!(seen.contains("elicitation/create"), "question {i} is asked: {seen}");
        waiting.push(stream);
    }
    let (answer, _) = raw::exchange(&addr, &call(32));
    let reply = raw::reply(&answer).unwrap_or_else(|| panic!("no reply: {answer}"));
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("could not ask the user") && text.contains("questions waiting"), "{text}");
    for mode in MODES {
        a_new_client_calls(py, &scratch, &server, mode);
    }
    let ran: Vec<_> = std::fs::read_dir(scratch.work()).unwrap().filter_map(|e| e.ok()).collect();
    assert!(ran.iter().all(|e| !e.file_name().to_string_lossy().starts_with("asked-")), "an unanswered call ran");
    drop(waiting);
}

/// Two clients ask for an answer of 8 MiB (more than the socket buffers
/// hold) and never read it, holding both connection slots of a server
/// started with two: after the write deadline their connections are
/// dropped, so a new client's calls are served, and the stalled clients get
/// the answer cut short.
#[test]
fn mcp_a_client_that_stops_reading_is_dropped_after_the_write_deadline() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let work = scratch.work();
    std::fs::write(work.join("toolhost.toml"), "[tools.Read]\nmax_line_characters = 1000000\n").unwrap();
    let big = work.join("big.txt");
    std::fs::write(&big, format!("{}\n", "x".repeat(999_999)).repeat(10)).unwrap();
    let server = HttpServer::start(&scratch, &["--max-connections", "2", "--write-timeout", "1"]);
    let addr = server.addr();
    let read_big = raw::modern_call(&addr, "Read", json!({"file_path": big.display().to_string()}));
    let stalled: Vec<TcpStream> = (0..2)
        .map(|_| {
            // A client that reads nothing keeps its receive window small
            // (Linux starts it at 128 KiB): the 8 MiB overfill it and the server's send
            // buffer (at most 4 MiB).
            send_only(&addr, &read_big)
        })
        .collect();
    for mode in MODES {
        a_new_client_calls(py, &scratch, &server, mode);
    }
    for mut stream in stalled {
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got);
        assert!(got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got[..got.len().min(200)]));
        assert!(got.len() < 8_000_000, "the whole answer ({} bytes) waited for a client that did not read", got.len());
    }
}

/// 100 bare `initialize` requests against a server that keeps 20 sessions:
/// each is served, but by taking the place of the session idle longest
/// among those that never made a request; a session in use is kept, and a
/// new client still gets a session of its own.
#[test]
fn mcp_a_flood_of_sessions_is_bounded_evicting_unused_ones_first() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &["--max-sessions", "20"]);
    let addr = server.addr();
    let working = raw::initialize(&addr);
    call_is_served(&raw::legacy_call(&addr, &working, "Glob", json!({"pattern": "*"})));
    let flood: Vec<String> = (0..100).map(|_| raw::initialize(&addr)).collect();
    let live: Vec<bool> = flood.iter().map(|s| raw::session_is_live(&addr, s)).collect();
    assert!(live[..81].iter().all(|l| !l), "the oldest unused sessions were evicted: {live:?}");
    assert!(live[81..].iter().all(|l| *l), "the newest ones are kept: {live:?}");
    call_is_served(&raw::legacy_call(&addr, &working, "Glob", json!({"pattern": "*"})));
    a_new_client_calls(py, &scratch, &server, "legacy");
}

/// A session that makes no request after `initialize` is closed after the
/// unused-session timeout (it was kept 300 s); one that does is kept.
#[test]
fn mcp_a_session_that_makes_no_request_is_closed_after_its_timeout() {
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &["--unused-session-timeout", "1"]);
    let addr = server.addr();
    let (unused, used) = (raw::initialize(&addr), raw::initialize(&addr));
    call_is_served(&raw::legacy_call(&addr, &used, "Glob", json!({"pattern": "*"})));
    wait_for("the unused session to be closed", Duration::from_secs(30), || !raw::session_is_live(&addr, &unused));
    assert!(raw::session_is_live(&addr, &used));
    call_is_served(&raw::legacy_call(&addr, &used, "Glob", json!({"pattern": "*"})));
}
