//! Function tools: a guest one made of one annotated Rust function
//! (examples/components/greet), and native ones registered from Rust
//! (`FunctionTool`), both through the whole pipeline: validation,
//! permissions (AgentScope's non-immune ask) and middleware.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use toolhost::function::{FUNCTION_TOOL_ASK, FunctionTool};
use toolhost::permission::{Behavior, Mode, RuleSet};
use toolhost::response::{Chunk, ResultState};
use toolhost::{CallRequest, PermissionAnswer};
use toolhost_e2e::{Scratch, call, example, guest, text};

#[test]
fn greet_runs_from_the_cli() {
    let scratch = Scratch::new();
    let greet = example("greet");
    let greet = greet.to_str().unwrap();
    let out =
        scratch.cli(&["--no-builtins", "--plugin", greet, "--allow", "Greet", "call", "Greet", r#"{"name":"x"}"#]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "Hello, x!");

    let out = scratch.cli(&[
        "--no-builtins",
        "--plugin",
        greet,
        "--allow",
        "Greet",
        "call",
        "Greet",
        r#"{"name":"x","times":2,"shout":true}"#,
    ]);
    assert_eq!(text(&out).0.trim(), "HELLO, X!\nHELLO, X!");

    // The function's Err is the call's error.
    let out =
        scratch.cli(&["--no-builtins", "--plugin", greet, "--allow", "Greet", "call", "Greet", r#"{"name":" "}"#]);
    assert!(!out.status.success());
    assert!(text(&out).0.contains("Error: the name is empty"), "{:?}", text(&out));

    // Without an allow rule the default check asks (and a non-interactive CLI refuses).
    let out = scratch.cli(&["--no-builtins", "--plugin", greet, "call", "Greet", r#"{"name":"x"}"#]);
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greet_schema_and_metadata_come_from_the_function() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(example("greet"));
    let host = scratch.host(s).await;
    let info = host.describe("Greet").await.unwrap();
    assert_eq!(info.description, "Greets someone by name.");
    assert!(info.concurrency_safe && !info.read_only);
    assert_eq!(
        info.input_schema,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Who to greet."},
                "times": {"type": "integer", "minimum": 0, "description": "How many times to say it.", "default": 1},
                "shout": {"type": "boolean", "description": "Shout the greeting (upper case)."}
            },
            "required": ["name"]
        })
    );
    // Validation uses the derived schema.
    let r = call(&host, "Greet", json!({"times": 1}), PermissionAnswer::AllowOnce).await;
    assert!(r.text().contains("Input validation failed for tool 'Greet'") && r.text().contains("name"), "{}", r.text());
    // The default permission check is AgentScope's non-immune ask.
    let ctx = host.permission_context("Greet", Mode::Default);
    let d = host.check("Greet", &json!({"name": "x"}), &ctx, &RuleSet::default()).await.unwrap();
    assert_eq!(
        (d.behavior, d.message.as_str(), d.bypass_immune),
        (Behavior::Ask, "Permission required for Greet", false)
    );
    assert_eq!(d.tool_check.as_ref().map(|v| v.message.as_str()), Some(FUNCTION_TOOL_ASK));
}

fn add_tool(calls: Arc<AtomicU32>) -> FunctionTool {
    FunctionTool::new(
        "Add",
        "Adds two numbers.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        move |input: serde_json::Value| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let (a, b) = (input["a"].as_f64().unwrap_or(0.0), input["b"].as_f64().unwrap_or(0.0));
                if a < 0.0 {
                    return Err("negative numbers are not supported".to_string());
                }
                Ok(vec![Chunk::text(format!("{}", a + b), ResultState::Running)])
            }
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_function_tools_go_through_the_whole_pipeline() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.middleware.files.push(guest("mw-mark-a"));
    let host = scratch.host(s).await;
    let calls = Arc::new(AtomicU32::new(0));
    let info = host.register_function(add_tool(calls.clone())).unwrap();
    assert_eq!(info.name, "Add");
    assert!(host.list().await.unwrap().iter().any(|t| t.name == "Add"));

    // Default mode: asks; denying never runs it.
    let r = call(&host, "Add", json!({"a": 1, "b": 2}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Denied);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // Allowed: runs.
    let r = call(&host, "Add", json!({"a": 1, "b": 2}), PermissionAnswer::AllowOnce).await;
    assert_eq!((r.state, r.text().as_str()), (ResultState::Success, "3"));
    // Invalid input never reaches the function.
    let r = call(&host, "Add", json!({"a": "one"}), PermissionAnswer::AllowOnce).await;
    assert!(r.text().contains("Input validation failed for tool 'Add'"), "{}", r.text());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The function's error ends the call in state error.
    let r = call(&host, "Add", json!({"a": -1, "b": 2}), PermissionAnswer::AllowOnce).await;
    assert_eq!((r.state, r.text().as_str()), (ResultState::Error, "Error: negative numbers are not supported"));

    // Bypass allows, dont-ask and explore deny (it is not read-only).
    for (mode, expected) in [
        (Mode::Bypass, ResultState::Success),
        (Mode::DontAsk, ResultState::Denied),
        (Mode::Explore, ResultState::Denied),
    ] {
        let r = host
            .call(CallRequest::new("Add", json!({"a": 1, "b": 1}).to_string()).mode(mode))
            .finish(PermissionAnswer::Deny)
            .await
            .into_response();
        assert_eq!(r.state, expected, "{mode}");
    }

    // Middleware wraps it like any tool.
    host.attach("Add", ["mw-mark-a"]).unwrap();
    let r = call(&host, "Add", json!({"a": 2, "b": 2}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.text(), "<a>4</a>");

    // Names are unique across tools.
    let err = host.register_function(add_tool(calls)).unwrap_err().to_string();
    assert!(err.contains("already loaded"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_function_tool_rules_are_tool_level_and_read_only_is_honoured() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.permissions.allow = vec!["Add".into()];
    let host = scratch.host(s).await;
    host.register_function(add_tool(Arc::new(AtomicU32::new(0)))).unwrap();
    let r = call(&host, "Add", json!({"a": 1, "b": 1}), PermissionAnswer::Deny).await;
    assert_eq!(r.text(), "2");

    host.register_function(
        FunctionTool::new("Now", "Says hello.", json!({"type": "object"}), |_v: serde_json::Value| async {
            Ok::<_, String>("hi")
        })
        .read_only(true),
    )
    .unwrap();
    let r = host
        .call(CallRequest::new("Now", "{}").mode(Mode::Explore))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response();
    assert_eq!((r.state, r.text().as_str()), (ResultState::Success, "hi"));

    let err = host
        .register_function(FunctionTool::new("Bad", "x", json!({"type": "array"}), |_v: serde_json::Value| async {
            Ok::<_, String>("")
        }))
        .unwrap_err();
    assert!(err.to_string().contains("must have \"type\": \"object\""), "{err}");
}
