//! Per-session agent state over MCP, end to end with the Python client:
//! two sessions do not see each other's tasks, a resumed 2025-11-25 session
//! keeps its state, the state is dropped when the session ends (the server
//! is `toolhost_mcp` embedded here over a `MemoryStore` the test can
//! look into), and `toolhost serve --session NAME` shares one named state
//! between clients and server processes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::state::MemoryStore;
use toolhost::state::SessionStates;
use toolhost_e2e::mcp::{HttpServer, Transport, client, serve_args};
use toolhost_e2e::{Scratch, mcp_python};
use toolhost_mcp::{HttpOptions, McpFront};

fn create(subject: &str) -> Value {
    json!(["TaskCreate", {"subject": subject, "description": "d"}])
}

const LIST: &str = r#"["TaskList", {}]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_sessions_are_separate_kept_when_resumed_and_dropped_when_they_end() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let mut settings = scratch.settings();
    settings.permissions.allow = vec!["TaskCreate".into(), "TaskList".into()];
    let host = scratch.host(settings).await;
    let store = Arc::new(MemoryStore::default());
    let front = McpFront::new(host, SessionStates::per_session(store.clone())).unwrap();
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(toolhost_mcp::serve_http(
        front,
        HttpOptions::new("127.0.0.1:0".parse().unwrap()),
        move |addr| bound_tx.send(addr).unwrap(),
        async {
            let _ = stop_rx.await;
        },
    ));
    let addr = tokio::task::spawn_blocking(move || bound_rx.recv().unwrap()).await.unwrap();
    let transport = Transport::Http { url: format!("http://{addr}/mcp"), token: None };

    let params = json!({"create": create("Mine"), "list": serde_json::from_str::<Value>(LIST).unwrap()});
    let r = tokio::task::spawn_blocking(move || client(py, &scratch, &transport, "legacy", "sessions", params))
        .await
        .unwrap();
    assert_eq!(r["a_create"]["is_error"], false, "{r}");
    assert!(r["a_list"]["text"].as_str().unwrap().contains("Mine"), "the session sees its task: {r}");
    assert!(!r["b_list"]["text"].as_str().unwrap().contains("Mine"), "another session sees it: {r}");
    let by_hand = &r["by_hand"];
    assert_eq!(by_hand["session"], true, "{r}");
    assert!(by_hand["resumed_list"].as_str().unwrap().contains("Mine"), "resumed, the state is gone: {r}");
    assert!((200..300).contains(&by_hand["deleted"].as_u64().unwrap()), "{r}");

    // Every session ended (the SDK's clients and the DELETE): no state is kept.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !store.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(store.len(), 0, "the state of ended sessions is still held");
    stop_tx.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[test]
fn mcp_a_named_session_is_shared_by_every_client() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let extra = ["--session", "shared", "--allow", "TaskCreate", "--allow", "TaskList"];
    let list: Value = serde_json::from_str(LIST).unwrap();
    // Two HTTP clients of one server, in both generations.
    let server = HttpServer::start(&scratch, &extra);
    let t = server.transport(None);
    let made = client(py, &scratch, &t, "legacy", "tasks", json!({"calls": [create("FromLegacy")]}));
    assert_eq!(made["results"][0]["is_error"], false, "{made}");
    let seen = client(py, &scratch, &t, "auto", "tasks", json!({"calls": [list]}));
    assert!(seen["results"][0]["text"].as_str().unwrap().contains("FromLegacy"), "{seen}");
    drop(server);
    // A stdio server started later reads the same saved state.
    let stdio = Transport::Stdio(serve_args(&extra));
    let seen = client(py, &scratch, &stdio, "legacy", "tasks", json!({"calls": [create("FromStdio"), list]}));
    let text = seen["results"][1]["text"].as_str().unwrap();
    assert!(text.contains("FromLegacy") && text.contains("FromStdio"), "{seen}");
    let saved = scratch.cli_sessions().join("shared.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert!(file.to_string().contains("FromStdio"), "{file}");
}
