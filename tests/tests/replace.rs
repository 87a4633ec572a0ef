//! Replacing and unloading loaded tools and middleware while calls run
//! (`Toolhost::replace`, `replace_middleware`, `unload_middleware`): calls
//! already running finish on the old version, calls started later use the
//! new one, no call ever sees "tool not found", and a replacement is loaded
//! like a fresh tool (it gets only what the settings grant it, and its own
//! permission exports decide).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use toolhost::capability::Policy;
use toolhost::function::FunctionTool;
use toolhost::middleware::{MiddlewareOutput, NativeMiddleware, Next};
use toolhost::response::{Chunk, ResultState, ToolResponse};
use toolhost::settings::Settings;
use toolhost::tool::ToolInfo;
use toolhost::{PermissionAnswer, ReplaceError, Replacement, ToolError, Toolhost};
use toolhost_e2e::{Scratch, call, guest};

/// Settings with no built-ins and `Swap` v1 loaded; `Swap` may read the
/// working directories and nothing more.
fn swap_settings(scratch: &Scratch) -> Settings {
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("swap-v1"));
    s.grants.insert("Swap".into(), Policy { fs_read: vec!["$WORKDIRS".into()], ..Policy::default() });
    s
}

/// Runs calls of `tool` on `workers` tasks until `stop`; returns every
/// response.
fn call_loop(
    host: &Toolhost,
    tool: &'static str,
    input: serde_json::Value,
    workers: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<ToolResponse>>> {
    (0..workers)
        .map(|_| {
            let (host, stop, input) = (host.clone(), stop.clone(), input.clone());
            tokio::spawn(async move {
                let mut responses = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    responses.push(call(&host, tool, input.clone(), PermissionAnswer::AllowOnce).await);
                }
                responses
            })
        })
        .collect()
}

async fn collect(tasks: Vec<tokio::task::JoinHandle<Vec<ToolResponse>>>) -> Vec<ToolResponse> {
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_a_plugin_under_running_calls_never_loses_a_call() {
    let scratch = Scratch::new();
    let host = scratch.host(swap_settings(&scratch)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = call_loop(&host, "Swap", json!({}), 3, &stop);
    for i in 0..20 {
        let version = if i % 2 == 0 { "swap-v2" } else { "swap-v1" };
        let info = host.replace("Swap", Replacement::File(guest(version))).await.unwrap();
        assert_eq!(info.name, "Swap");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let responses = collect(tasks).await;
    assert!(responses.len() >= 20, "only {} calls ran", responses.len());
    let (mut v1, mut v2) = (0, 0);
    for r in &responses {
        assert_eq!(r.state, ResultState::Success, "{r:?}");
        // Each response comes from one whole version, never a mix.
        match r.text().as_str() {
            "v1 v1 v1 " => v1 += 1,
            "v2 v2 v2 " => v2 += 1,
            other => panic!("a response mixing versions or failing: {other:?}"),
        }
    }
    assert!(v1 > 0 && v2 > 0, "both versions answered ({v1} v1, {v2} v2)");
    // The last replacement (v1) is what a new call gets.
    assert_eq!(call(&host, "Swap", json!({}), PermissionAnswer::Deny).await.text(), "v1 v1 v1 ");
}

/// The hostile replacement declares writing everywhere and asks before
/// every call; it gets what a fresh load of it would get: the settings
/// grant reading only, so its write is refused and the canary keeps its
/// content, and its own permission check (an ask) is what decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_gets_only_what_the_settings_grant() {
    let scratch = Scratch::new();
    let canary = scratch.work().join("canary.txt");
    std::fs::write(&canary, "canary").unwrap();
    let host = scratch.host(swap_settings(&scratch)).await;
    let input = json!({"canary": canary.display().to_string()});
    // v1 allows itself: no ask, even when every ask is denied.
    assert_eq!(call(&host, "Swap", json!({}), PermissionAnswer::Deny).await.text(), "v1 v1 v1 ");

    let info = host.replace("Swap", Replacement::File(guest("swap-v2"))).await.unwrap();
    assert_eq!(info.capabilities.fs_write, ["/"]);

    // v2's own check asks: a denied ask refuses the call.
    let r = call(&host, "Swap", input.clone(), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Denied, "{r:?}");
    // Allowed, it runs, and its write is refused: it was granted reading only.
    let r = call(&host, "Swap", input.clone(), PermissionAnswer::AllowOnce).await;
    assert!(r.text().starts_with("v2 v2 v2 write refused"), "{}", r.text());
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "canary");

    // The same component granted writing can write: the refusal above came
    // from the settings, not from the component.
    let granted = Scratch::new();
    let mut s = swap_settings(&granted);
    s.plugins = vec![guest("swap-v2")];
    s.grants.get_mut("Swap").unwrap().fs_write = vec!["$WORKDIRS".into()];
    let target = granted.work().join("target.txt");
    std::fs::write(&target, "canary").unwrap();
    let host = granted.host(s).await;
    let r = call(&host, "Swap", json!({"canary": target.display().to_string()}), PermissionAnswer::AllowOnce).await;
    assert!(r.text().ends_with("wrote the canary"), "{}", r.text());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "overwritten by Swap v2");
}

fn lookup(answer: &'static str) -> FunctionTool {
    FunctionTool::new("Lookup", "Looks up.", json!({"type": "object"}), move |_| async move {
        Ok::<_, String>(answer.to_string())
    })
    .read_only(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_tools_are_replaced_and_unloaded() {
    let scratch = Scratch::new();
    let host = scratch.host(swap_settings(&scratch)).await;
    host.register_function(lookup("old")).unwrap();
    assert_eq!(call(&host, "Lookup", json!({}), PermissionAnswer::Deny).await.text(), "old");
    host.replace("Lookup", Replacement::Function(lookup("new"))).await.unwrap();
    assert_eq!(call(&host, "Lookup", json!({}), PermissionAnswer::Deny).await.text(), "new");

    // A replacement must keep the name, and the name must be registered;
    // a refused replacement changes nothing.
    let renamed = FunctionTool::new("Other", "x", json!({"type": "object"}), |_| async { Ok::<_, String>("x") });
    let err = host.replace("Lookup", Replacement::Function(renamed)).await.unwrap_err();
    assert!(matches!(&err, ReplaceError::Renamed { reported, .. } if reported == "Other"), "{err}");
    let err = err.to_string();
    assert!(err.contains("reports the name 'Other'") && err.contains("keeps the name"), "{err}");
    let err = host.replace("Missing", Replacement::Function(lookup("x"))).await.unwrap_err();
    assert!(matches!(err, ReplaceError::UnknownTool(_)), "{err}");
    assert!(err.to_string().contains("doesn't exist"), "{err}");
    let err = host.replace("Swap", Replacement::Function(lookup("x"))).await.unwrap_err().to_string();
    assert!(err.contains("reports the name 'Lookup'"), "{err}");
    assert_eq!(call(&host, "Lookup", json!({}), PermissionAnswer::Deny).await.text(), "new");
    assert_eq!(call(&host, "Swap", json!({}), PermissionAnswer::Deny).await.text(), "v1 v1 v1 ");

    assert!(host.unload("Lookup"));
    let r = call(&host, "Lookup", json!({}), PermissionAnswer::Deny).await;
    assert!(r.text().contains("ToolNotFoundError"), "{}", r.text());
    assert!(!host.unload("Lookup"));
}

/// A native middleware that brackets the output with `[n` and `n]`, named
/// like the component it replaces.
struct NativeMark;

#[toolhost::async_trait]
impl NativeMiddleware for NativeMark {
    fn name(&self) -> &str {
        "mw-mark-a"
    }

    async fn on_tool_call(
        &self,
        _tool: &ToolInfo,
        input: String,
        next: Next,
        out: &mut MiddlewareOutput,
    ) -> Result<(), ToolError> {
        out.emit(Chunk::text("[n", ResultState::Running)).await;
        let mut inner = next.run(input).await?;
        while let Some(chunk) = inner.next().await {
            out.emit(chunk).await;
        }
        out.emit(Chunk::text("n]", ResultState::Running)).await;
        inner.outcome().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn middleware_is_replaced_under_running_calls_and_unloaded() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("echo"));
    s.middleware.files.push(guest("mw-mark-a"));
    s.middleware.attach.insert("Echo".into(), vec!["mw-mark-a".into()]);
    let host = scratch.host(s).await;
    let input = json!({"text": "x"});
    assert_eq!(call(&host, "Echo", input.clone(), PermissionAnswer::Deny).await.text(), "<a>x</a>");

    let stop = Arc::new(AtomicBool::new(false));
    let tasks = call_loop(&host, "Echo", input.clone(), 3, &stop);
    for i in 0..20 {
        let new = if i % 2 == 0 {
            Replacement::Middleware(Arc::new(NativeMark))
        } else {
            Replacement::File(guest("mw-mark-a"))
        };
        host.replace_middleware("mw-mark-a", new).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let responses = collect(tasks).await;
    assert!(responses.len() >= 20, "only {} calls ran", responses.len());
    let native = responses.iter().filter(|r| r.text() == "[nxn]").count();
    for r in &responses {
        assert_eq!(r.state, ResultState::Success, "{r:?}");
        assert!(r.text() == "<a>x</a>" || r.text() == "[nxn]", "a response mixing versions: {:?}", r.text());
    }
    assert!(native > 0 && native < responses.len(), "both versions answered ({native} of {})", responses.len());

    // A replacement keeps the name.
    let err = host.replace_middleware("mw-mark-a", Replacement::File(guest("mw-mark-b"))).await.unwrap_err();
    assert!(err.to_string().contains("reports the name 'mw-mark-b'"), "{err}");
    let err = host.replace_middleware("mw-mark-a", Replacement::Function(lookup("x"))).await.unwrap_err();
    assert!(matches!(err, ReplaceError::WrongKind { other: "tool", method: "replace", .. }), "{err}");
    let err = host.replace_middleware("absent", Replacement::File(guest("mw-mark-b"))).await.unwrap_err();
    assert!(matches!(err, ReplaceError::UnknownMiddleware(_)), "{err}");

    // Unloaded while attached: calls fail closed, naming it, until detached.
    assert!(host.unload_middleware("mw-mark-a"));
    assert!(host.middleware().is_empty());
    let r = call(&host, "Echo", input.clone(), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    assert!(r.text().contains("middleware 'mw-mark-a' is attached to 'Echo' but not loaded"), "{}", r.text());
    host.detach_all("Echo");
    assert_eq!(call(&host, "Echo", input, PermissionAnswer::Deny).await.text(), "x");
    assert!(!host.unload_middleware("mw-mark-a"));
}
