//! Lazy loading of the built-ins: nothing is loaded until something needs
//! it, each built-in loads under its registered name, and a name conflict
//! or a failed load touches no other tool.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::{Toolhost, builtin_entry};
use crate::catalog::builtin::{self, BUILTINS, Builtin, TOOL_NAMES};
use crate::catalog::function::FunctionTool;
use crate::catalog::tool::{LoadError, LookupError, Origin};
use crate::events::PermissionAnswer;
use crate::execution::component::load_builtin;
use crate::permission::Mode;
use crate::response::ResultState;
use crate::settings::Settings;
use crate::toolhost::CallRequest;

/// A host over a fresh working directory, sharing the tests' compile cache.
async fn host(builtins: bool) -> (Toolhost, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = Settings::default();
    settings.permissions.working_dirs = vec![dir.path().display().to_string()];
    settings.cache_dir = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-cache"));
    settings.builtins = builtins;
    let host = Toolhost::builder().settings(settings, None).build().await.expect("building the host");
    (host, dir)
}

fn registered_names() -> Vec<String> {
    let mut names: Vec<String> = TOOL_NAMES.iter().map(|(_, name)| name.to_string()).collect();
    names.sort();
    names
}

fn loaded(host: &Toolhost) -> Vec<String> {
    host.names().into_iter().filter(|n| host.is_loaded(n)).collect()
}

#[test]
fn every_guest_crate_has_one_component_and_a_unique_name() {
    assert_eq!(BUILTINS.len(), TOOL_NAMES.len(), "one embedded component per TOOL_NAMES entry");
    let mut names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), BUILTINS.len(), "built-in names must be unique");
    for b in BUILTINS {
        assert_eq!(builtin::find(b.name).map(|f| f.crate_name), Some(b.crate_name));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_registers_every_builtin_and_loads_none() {
    let (host, _dir) = host(true).await;
    assert_eq!(host.names(), registered_names());
    assert!(registered_names().iter().all(|n| host.is_registered(n)));
    assert_eq!(loaded(&host), Vec::<String>::new(), "start-up must load no built-in");
    // Neither warning about rules nor settings lookups load anything.
    assert!(host.rules_for_unknown_tools().is_empty());
    let _ = host.permission_context("Bash", Mode::Default);
    assert_eq!(loaded(&host), Vec::<String>::new());
    assert!(!host.is_loaded("Nope") && !host.is_registered("Nope"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_use_loads_only_the_tool_it_needs() {
    let (host, _dir) = host(true).await;

    let info = host.describe("Read").await.expect("Read is a built-in");
    assert_eq!((info.name.as_str(), &info.origin), ("Read", &Origin::Builtin));
    assert_eq!(loaded(&host), ["Read"]);

    let ctx = host.permission_context("Bash", Mode::Default);
    let decision = host.check("Bash", &json!({"command": "ls"}), &ctx, &host.rules()).await.expect("a decision");
    assert_eq!(decision.behavior, crate::permission::Behavior::Allow);
    assert_eq!(loaded(&host), ["Bash", "Read"]);

    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    host.instantiate("Glob", None, tx).await.expect("a Glob instance");
    assert_eq!(loaded(&host), ["Bash", "Glob", "Read"]);

    let r = host.call(CallRequest::new("TaskList", "{}")).finish(PermissionAnswer::AllowOnce).await.into_response();
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert_eq!(loaded(&host), ["Bash", "Glob", "Read", "TaskList"]);

    // Unknown names load nothing and say so.
    let err = host.describe("Nope").await.expect_err("no such tool");
    assert!(matches!(err, LookupError::Unknown(_)) && err.to_string().contains("'Nope' doesn't exist"), "{err}");
    assert_eq!(loaded(&host).len(), 4);

    // Listing loads every one, in name order.
    let names: Vec<String> = host.list().await.expect("every built-in loads").into_iter().map(|t| t.name).collect();
    assert_eq!(names, registered_names());
    assert_eq!(loaded(&host), registered_names());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_loads_under_its_registered_name() {
    let (host, _dir) = host(true).await;
    for info in host.list().await.expect("every built-in loads") {
        let b = builtin::find(&info.name).unwrap_or_else(|| panic!("{} is not in TOOL_NAMES", info.name));
        assert_eq!(info.origin, Origin::Builtin);
        assert_eq!(info.sha256, b.sha256, "{}", info.name);
    }
    // And each one directly, through the loader that checks the name.
    for b in BUILTINS {
        let tool = load_builtin(host.runtime(), b).await.unwrap_or_else(|e| panic!("{}: {e}", b.name));
        assert_eq!(tool.info.name, b.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtin_reporting_another_name_is_a_load_error_that_spares_the_others() {
    let (host, _dir) = host(true).await;
    let bash = builtin::find("Bash").expect("Bash is a built-in");
    let misnamed = Builtin { name: "Shell", ..*bash };

    let err = load_builtin(host.runtime(), &misnamed).await.err().expect("the name must be checked");
    assert!(matches!(err, LoadError::BuiltinNameMismatch { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("built-in tool Shell") && text.contains("'Bash'") && text.contains("TOOL_NAMES"),
        "the error names the tool, the cause and the fix: {text}"
    );

    // Registered lazily, it fails when first needed, with the same error,
    // every time it is needed, and no other tool is affected.
    let leaked: &'static Builtin = Box::leak(Box::new(misnamed));
    host.register("Shell", builtin_entry(leaked), "test").expect("Shell is free");
    assert!(host.is_registered("Shell") && !host.is_loaded("Shell"));
    for _ in 0..2 {
        let err = host.describe("Shell").await.expect_err("Shell cannot load");
        assert!(matches!(err, LookupError::Load(LoadError::BuiltinNameMismatch { .. })), "{err}");
    }
    let r = host.call(CallRequest::new("Shell", "{\"command\":\"ls\"}")).finish(PermissionAnswer::Deny).await;
    let text = r.into_response().text();
    assert!(text.contains("could not load tool 'Shell'") && text.contains("reports the name 'Bash'"), "{text}");
    let err = host.list().await.expect_err("the listing names the tool that failed");
    assert!(err.to_string().contains("built-in tool Shell"), "{err}");
    assert!(!host.is_loaded("Shell"));
    // The listing loaded the others, and they work.
    assert!(host.names().iter().filter(|n| *n != "Shell").all(|n| host.is_loaded(n)));
    assert_eq!(host.describe("Bash").await.expect("Bash still loads").name, "Bash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_named_like_a_builtin_is_refused_without_loading_the_builtin() {
    let (host, dir) = host(true).await;

    let function = FunctionTool::new("Bash", "Not the real Bash.", json!({"type": "object"}), |_| async {
        Ok::<_, String>("fake")
    });
    let err = host.register_function(function).expect_err("the name is taken");
    assert!(
        matches!(&err, LoadError::NameTaken { name, existing, .. } if name == "Bash" && existing == "the built-in tools"),
        "{err}"
    );

    // A component plugin (the Bash component itself, as a file) likewise.
    let bash = builtin::find("Bash").expect("Bash is a built-in");
    let file = dir.path().join("bash.wasm");
    std::fs::write(&file, bash.bytes).expect("writing the plugin");
    let err = host.load_file(&file).await.expect_err("the name is taken");
    let err = err.downcast::<LoadError>().expect("a LoadError");
    assert!(matches!(&err, LoadError::NameTaken { name, .. } if name == "Bash"), "{err}");
    assert!(err.to_string().contains("already loaded from the built-in tools"), "{err}");

    assert_eq!(loaded(&host), Vec::<String>::new(), "a name conflict must not load the built-in");

    // Unloading a built-in that was never loaded frees its name.
    assert!(host.unload("Bash"));
    assert!(!host.is_registered("Bash") && !host.unload("Bash"));
    let info = host.load_file(&file).await.expect("the name is free now");
    assert_eq!(info.origin, Origin::File(file.clone()));
    assert!(host.is_loaded("Bash"));
    assert_eq!(loaded(&host), ["Bash"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_uses_load_a_builtin_once() {
    let (host, _dir) = host(true).await;
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let host = host.clone();
            tokio::spawn(async move { host.tool("Grep").await.expect("Grep loads") })
        })
        .collect();
    let mut tools = Vec::new();
    for task in tasks {
        tools.push(task.await.expect("the task ran"));
    }
    assert!(tools.iter().all(|t| Arc::ptr_eq(t, &tools[0])), "every first use must get the one loaded tool");
    assert_eq!(loaded(&host), ["Grep"]);
}

#[tokio::test(flavor = "current_thread")]
async fn listing_works_on_a_single_threaded_runtime() {
    let (host, _dir) = host(true).await;
    let names: Vec<String> = host.list().await.expect("every built-in loads").into_iter().map(|t| t.name).collect();
    assert_eq!(names, registered_names());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_builtins_nothing_is_registered() {
    let (host, _dir) = host(false).await;
    assert!(host.names().is_empty());
    assert!(host.list().await.expect("an empty listing").is_empty());
    assert!(matches!(host.describe("Bash").await, Err(LookupError::Unknown(_))));
}
