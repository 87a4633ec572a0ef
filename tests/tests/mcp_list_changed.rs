//! `notifications/tools/list_changed` end to end: the fixture server
//! (`tests/src/bin/mcp_fixture.rs`, `toolhost_mcp` as a library) changes its
//! tool set through the library (`register_function`, then `unload`) while
//! the real Python client listens, over stdio and HTTP, in both protocol
//! generations: on 2026-07-28 through `subscriptions/listen`, on 2025-11-25
//! as a notification on the session.

use serde_json::json;
use toolhost_e2e::mcp::{HttpServer, MODES, Transport, client};
use toolhost_e2e::{Scratch, mcp_python, root};

fn fixture(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        env!("CARGO_BIN_EXE_mcp_fixture").to_string(),
        "--cache-dir".to_string(),
        root().join("target/test-cache").display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

#[test]
fn mcp_every_change_of_the_tool_set_reaches_a_listening_client() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let mut n = 0;
    let check = |transport: &Transport, trigger: &std::path::Path, mode: &str, how: &str| {
        let r = client(py, &scratch, transport, mode, "list_changed", json!({"trigger": trigger}));
        assert_eq!(r["before"], json!([]), "{how}/{mode}: {r}");
        assert_eq!(r["after"], json!([["Added"], []]), "{how}/{mode}: added, then unloaded: {r}");
        if mode == "auto" {
            assert_eq!(r["honored"], true, "{how}/{mode}: {r}");
        }
    };
    for mode in MODES {
        n += 1;
        let trigger = scratch.work().join(format!("add-{n}"));
        let stdio = Transport::Stdio(fixture(&["--stdio", "--add-when", &trigger.display().to_string()]));
        check(&stdio, &trigger, mode, "stdio");
    }
    for mode in MODES {
        n += 1;
        let trigger = scratch.work().join(format!("add-{n}"));
        let server = HttpServer::spawn(
            &scratch,
            &fixture(&["--http", "127.0.0.1:0", "--add-when", &trigger.display().to_string()]),
        );
        check(&server.transport(None), &trigger, mode, "http");
    }
}

/// The capability is advertised, so clients know to listen.
#[test]
fn mcp_advertises_tool_list_changes() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::spawn(&scratch, &fixture(&["--http", "127.0.0.1:0"]));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let r = client(py, &scratch, &server.transport(None), "legacy", "raw", json!({"body": init}));
    assert_eq!(r["status"], 200, "{r}");
    let body = r["body"].as_str().unwrap();
    assert!(body.contains(r#""tools":{"listChanged":true}"#), "{body}");
}
