//! Lazy loading of the built-ins: nothing is loaded until something needs
//! it, each built-in loads under its registered name, and a name conflict
//! or a failed load touches no other tool.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::Toolhost;
use super::catalog::builtin_entry;
use crate::catalog::builtin::{self, BUILTINS, Builtin, TOOL_NAMES};
use crate::catalog::function::FunctionTool;
use crate::catalog::tool::{LoadError, LookupError, Origin};
use crate::events::PermissionAnswer;
use crate::execution::component::{load_builtin, load_builtin_unchecked};
use crate::permission::Mode;
use crate::response::ResultState;
use crate::runtime::{CompileObserver, Phase, Tier};
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
        assert_eq!(builtin::named(b.name).map(|f| f.crate_name), Some(b.crate_name));
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

    // Describing and listing answer from the embedded metadata.
    let info = host.describe("Read").await.expect("Read is a built-in");
    assert_eq!((info.name.as_str(), &info.origin), ("Read", &Origin::Builtin));
    let names: Vec<String> = host.list().await.expect("every built-in lists").into_iter().map(|t| t.name).collect();
    assert_eq!(names, registered_names());
    assert_eq!(loaded(&host), Vec::<String>::new(), "describe and list load nothing");

    let ctx = host.permission_context("Bash", Mode::Default);
    let decision = host.check("Bash", &json!({"command": "ls"}), &ctx, &host.rules()).await.expect("a decision");
    assert_eq!(decision.behavior, crate::permission::Behavior::Allow);
    assert_eq!(loaded(&host), ["Bash"]);

    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    host.instantiate("Glob", None, tx).await.expect("a Glob instance");
    assert_eq!(loaded(&host), ["Bash", "Glob"]);

    let r = host.call(CallRequest::new("TaskList", "{}")).finish(PermissionAnswer::AllowOnce).await.into_response();
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert_eq!(loaded(&host), ["Bash", "Glob", "TaskList"]);

    // Unknown names load nothing and say so.
    let err = host.describe("Nope").await.expect_err("no such tool");
    assert!(matches!(err, LookupError::Unknown(_)) && err.to_string().contains("'Nope' doesn't exist"), "{err}");
    assert_eq!(loaded(&host).len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_loads_under_its_registered_name() {
    let (host, _dir) = host(true).await;
    for info in host.list().await.expect("every built-in loads") {
        let b = builtin::named(&info.name).unwrap_or_else(|| panic!("{} is not in TOOL_NAMES", info.name));
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
    let bash = builtin::named("Bash").expect("Bash is a built-in");
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
    host.catalog().register("Shell", builtin_entry(leaked, std::sync::Weak::new()), "test").expect("Shell is free");
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
    // No other tool is affected.
    assert_eq!(host.describe("Bash").await.expect("Bash still describes").name, "Bash");
    let r = host.call(CallRequest::new("TaskList", "{}")).finish(PermissionAnswer::AllowOnce).await.into_response();
    assert_eq!(r.state, ResultState::Success, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_named_like_a_builtin_is_refused_without_loading_the_builtin() {
    let (host, _dir) = host(true).await;

    let function = FunctionTool::new("Bash", "Not the real Bash.", json!({"type": "object"}), |_| async {
        Ok::<_, String>("fake")
    });
    let err = host.register_function(function).expect_err("the name is taken");
    assert!(
        matches!(&err, LoadError::NameTaken { name, existing, .. } if name == "Bash" && existing == "the built-in tools"),
        "{err}"
    );

    // A component plugin (the Bash component itself, as a file) likewise.
    let bash = builtin::named("Bash").expect("Bash is a built-in");
    // Outside the working directory, where a plugin needs no pin.
    let plugins = tempfile::tempdir().expect("tempdir");
    let file = plugins.path().join("bash.wasm");
    std::fs::write(&file, bash.bytes).expect("writing the plugin");
    let err = host.load_file(&file).await.expect_err("the name is taken");
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
            tokio::spawn(async move { host.catalog().tool("Grep").await.expect("Grep loads") })
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

/// A host over an empty compile cache of its own, telling `events` of every
/// compile; `cache` must outlive it. It optimises built-ins in the
/// background when `tier_up` (a long-running host), not otherwise (a
/// one-shot command).
async fn host_on_cache(
    cache: &std::path::Path,
    events: Arc<std::sync::Mutex<Vec<(String, Tier, bool)>>>,
    tier_up: bool,
) -> (Toolhost, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = Settings::default();
    settings.permissions.working_dirs = vec![dir.path().display().to_string()];
    settings.cache_dir = Some(cache.to_path_buf());
    let observer = CompileObserver::new(move |e| {
        let finished = matches!(e.phase, Phase::Finished(_));
        events.lock().unwrap().push((e.label.clone(), e.tier, finished));
    });
    let builder = Toolhost::builder().settings(settings, None).compile_observer(observer);
    let host = builder.optimise_builtins_in_background(tier_up).build().await.expect("a host");
    (host, dir)
}

fn cached_artifacts(cache: &std::path::Path) -> usize {
    std::fs::read_dir(cache)
        .map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "cwasm")).count())
        .unwrap_or(0)
}

/// `TOOLHOST_BLESS_METADATA=1` rewrites the files from the components
/// (after a deliberate change of a built-in's metadata), then fails so that
/// the host is rebuilt with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_metadata_files_match_the_components() {
    let (host, _dir) = host(true).await;
    let bless = std::env::var_os("TOOLHOST_BLESS_METADATA").is_some();
    for b in BUILTINS {
        let tool = load_builtin_unchecked(host.runtime(), b).await.unwrap_or_else(|e| panic!("{}: {e}", b.name));
        let from_component = crate::types::ToolMetadata::from(&tool.info);
        if bless {
            let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../guest-tools/tools")
                .join(b.crate_name)
                .join("metadata.json");
            let text = serde_json::to_string_pretty(&from_component).expect("metadata as JSON") + "\n";
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            continue;
        }
        let embedded = b.info().unwrap_or_else(|e| panic!("{}: {e}", b.name));
        assert!(b.metadata_matches(&tool.info).unwrap(), "{}: metadata.json drifted", b.name);
        let as_json = |m: crate::types::ToolMetadata| serde_json::to_value(m).unwrap();
        assert_eq!(as_json((&embedded).into()), as_json(from_component), "{}: metadata.json drifted", b.name);
        // Everything `describe` shows is the same, loaded or not.
        assert_eq!(serde_json::to_value(&embedded).unwrap(), serde_json::to_value(&tool.info).unwrap(), "{}", b.name);
    }
    assert!(!bless, "metadata.json files rewritten: rebuild toolhost (touch host/build.rs) and run the tests again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtin_whose_metadata_file_drifted_is_refused_when_loaded() {
    let (host, _dir) = host(true).await;
    let bash = builtin::named("Bash").expect("Bash is a built-in");
    let mut metadata: serde_json::Value = serde_json::from_str(bash.metadata).expect("Bash's metadata.json");
    metadata["read_only"] = json!(true);
    let drifted = Builtin { metadata: Box::leak(metadata.to_string().into_boxed_str()), ..*bash };
    assert!(drifted.info().expect("still valid metadata").read_only);
    let err = load_builtin(host.runtime(), &drifted).await.err().expect("the drift must be caught");
    assert!(matches!(err, LoadError::BuiltinMetadataDrift { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("guest-tools/tools/bash/metadata.json") && text.contains("TOOLHOST_BLESS_METADATA"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_and_describing_on_an_empty_cache_compile_nothing() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let events = Arc::default();
    let (host, _dir) = host_on_cache(cache.path(), Arc::clone(&events), true).await;
    let infos = host.list().await.expect("every built-in lists");
    assert_eq!(infos.iter().map(|t| t.name.clone()).collect::<Vec<_>>(), registered_names());
    for info in &infos {
        let b = builtin::named(&info.name).expect("a built-in");
        assert_eq!(serde_json::to_value(info).unwrap(), serde_json::to_value(b.info().unwrap()).unwrap());
        host.describe(&info.name).await.expect("describes");
    }
    assert_eq!(*events.lock().unwrap(), Vec::new(), "list and describe compile nothing");
    assert_eq!(cached_artifacts(cache.path()), 0);
    assert_eq!(loaded(&host), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_use_runs_baseline_code_and_later_hosts_run_the_optimised_code_it_caches() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let events = Arc::default();
    let (host, _dir) = host_on_cache(cache.path(), Arc::clone(&events), false).await;
    let call = |host: &Toolhost| {
        let host = host.clone();
        async move {
            let r = host.call(CallRequest::new("TaskList", "{}")).finish(PermissionAnswer::AllowOnce).await;
            let r = r.into_response();
            assert_eq!(r.state, ResultState::Success, "{r:?}");
        }
    };
    let label = "built-in tool TaskList".to_string();

    call(&host).await;
    let baseline = vec![(label.clone(), Tier::Baseline, false), (label.clone(), Tier::Baseline, true)];
    assert_eq!(*events.lock().unwrap(), baseline, "the first use compiles baseline code only");
    assert_eq!(host.builtins_to_optimise(), ["TaskList"]);
    assert_eq!(host.code_tier("TaskList"), Some(Tier::Baseline));

    let task_list = builtin::named("TaskList").expect("a built-in");
    builtin::optimise(host.runtime(), task_list).expect("the optimised compile");
    let optimised = vec![(label.clone(), Tier::Optimised, false), (label.clone(), Tier::Optimised, true)];
    assert_eq!(events.lock().unwrap()[2..], optimised);
    assert_eq!(host.builtins_to_optimise(), Vec::<&str>::new());
    assert_eq!(cached_artifacts(cache.path()), 2, "baseline and optimised code, one entry each");
    // Optimising again compiles nothing.
    builtin::optimise(host.runtime(), task_list).expect("a cache hit");
    assert_eq!(events.lock().unwrap().len(), 4);

    // A new host (a later process) loads the optimised code without
    // compiling: with the baseline entry gone, no compile means it did.
    let optimised_entry =
        crate::runtime::CompileCache::open(cache.path(), host.runtime().engine()).unwrap().entry_path(task_list.bytes);
    for entry in std::fs::read_dir(cache.path()).unwrap().filter_map(Result::ok) {
        if entry.path() != optimised_entry {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let later = Arc::default();
    let (host, _dir) = host_on_cache(cache.path(), Arc::clone(&later), false).await;
    call(&host).await;
    assert_eq!(*later.lock().unwrap(), Vec::new(), "the later host compiles nothing");
    assert_eq!(host.builtins_to_optimise(), Vec::<&str>::new(), "it runs the optimised code");
    assert_eq!(host.code_tier("TaskList"), Some(Tier::Optimised));
}

/// A host that keeps running does not stay on a first use's baseline code:
/// the optimised compile runs in the background and is swapped in, calls
/// go on meanwhile and after, and no client is told the tool list changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_running_host_moves_a_builtin_from_baseline_to_optimised_code() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let events = Arc::default();
    let (host, _dir) = host_on_cache(cache.path(), Arc::clone(&events), true).await;
    let mut list_changes = host.tool_list_changes();
    list_changes.borrow_and_update();
    let label = "built-in tool TaskList".to_string();
    let call = || async {
        let r = host.call(CallRequest::new("TaskList", "{}")).finish(PermissionAnswer::AllowOnce).await;
        assert_eq!(r.into_response().state, ResultState::Success);
    };
    call().await;
    assert_eq!(
        events.lock().unwrap()[..2],
        [(label.clone(), Tier::Baseline, false), (label.clone(), Tier::Baseline, true)]
    );
    let optimised_done = || events.lock().unwrap().contains(&(label.clone(), Tier::Optimised, true));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while host.code_tier("TaskList") != Some(Tier::Optimised) {
        assert!(
            std::time::Instant::now() < deadline,
            "TaskList still on baseline code; compiles: {:?}",
            events.lock().unwrap()
        );
        call().await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(optimised_done(), "the swap follows the optimised compile");
    assert_eq!(host.builtins_to_optimise(), Vec::<&str>::new(), "its optimised code is in the cache for later hosts");
    call().await;
    assert!(!list_changes.has_changed().unwrap(), "the tool list did not change");
    let compiles = events.lock().unwrap().len();
    assert_eq!(compiles, 4, "one baseline and one optimised compile: {:?}", events.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_to_the_set_of_tools_is_announced_and_nothing_else_is() {
    let (host, _dir) = host(false).await;
    let mut changes = host.tool_list_changes();
    let generation = *changes.borrow_and_update();
    let echo = |text: &'static str| {
        FunctionTool::new("Echo", "Echoes.", json!({"type": "object"}), move |_| async move { Ok::<_, String>(text) })
    };

    host.register_function(echo("v1")).expect("registering");
    assert!(changes.has_changed().unwrap(), "a registration is a change");
    changes.borrow_and_update();

    host.register_function(echo("again")).expect_err("the name is taken");
    host.list().await.expect("listing");
    let _ = host.call(CallRequest::new("Echo", "{}")).finish(PermissionAnswer::Deny).await;
    assert!(!changes.has_changed().unwrap(), "a refused registration, a listing or a call changes nothing");

    host.replace("Echo", super::Replacement::Function(echo("v2"))).await.expect("replacing");
    assert!(changes.has_changed().unwrap(), "a replacement is a change");
    changes.borrow_and_update();

    assert!(host.unload("Echo") && !host.unload("Echo"));
    assert!(changes.has_changed().unwrap(), "an unload is a change");
    assert_eq!(*changes.borrow_and_update(), generation + 3, "one generation per change");
}

/// `[state] store = "redis"` keeps remembered rules in the deployment's
/// store: a host given none is refused, naming the builder method, rather
/// than keep "allow and remember" in this process behind the others' back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_state_store_without_a_rule_store_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = Settings::default();
    settings.permissions.working_dirs = vec![dir.path().display().to_string()];
    settings.state.store = crate::settings::StoreKind::Redis;
    let err = Toolhost::builder().settings(settings, None).build().await.err().expect("refused");
    assert!(matches!(err, crate::toolhost::BuildError::Settings(_)), "{err:?}");
    let err = err.to_string();
    assert!(err.contains("[state] store = \"redis\"") && err.contains("ToolhostBuilder::rule_store"), "{err}");
}

/// Why a host was not built is a type: a bad setting, the backend, a
/// plugin that did not load (with its own [`LoadError`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_failure_says_which_part_failed_in_a_type() {
    use crate::toolhost::BuildError;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let base = || {
        let mut settings = Settings::default();
        settings.permissions.working_dirs = vec![dir.path().display().to_string()];
        settings.builtins = false;
        settings
    };
    let build = |settings| async { Toolhost::builder().settings(settings, None).build().await.err().expect("refused") };

    let mut settings = base();
    settings.permissions.allow.push("Bash(".into());
    assert!(matches!(build(settings).await, BuildError::Settings(e) if e.contains("[permissions]")));
    let mut settings = base();
    settings.backend.kind = "e2b".into();
    assert!(matches!(build(settings).await, BuildError::Backend(e) if e.contains("unknown backend kind")));
    let mut settings = base();
    let missing = dir.path().join("missing.wasm");
    settings.plugins.push(missing.clone());
    let err = build(settings).await;
    assert!(matches!(&err, BuildError::Load(LoadError::Read { path, .. }) if *path == missing), "{err}");
    let mut settings = base();
    settings.middleware.attach.insert("Echo".into(), vec!["nowhere".into()]);
    assert!(matches!(build(settings).await, BuildError::Settings(e) if e.contains("[middleware.attach] Echo")));
}

/// Why a load failed is a type an embedder can match on, not only text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_failure_says_why_in_a_type_an_embedder_can_match() {
    let (host, dir) = host(false).await;
    let missing = dir.path().join("missing.wasm");
    let err = host.load_file(&missing).await.expect_err("no such file");
    assert!(matches!(&err, LoadError::Read { what: "plugin", path, .. } if *path == missing), "{err}");
    let err = host.load_dir(&dir.path().join("no-such-folder")).await.expect_err("no such folder");
    assert!(matches!(err, LoadError::Dir { .. }), "{err}");
    // A component file where tools write loads only when pinned.
    let file = dir.path().join("bash.wasm");
    std::fs::write(&file, builtin::named("Bash").expect("a built-in").bytes).expect("writing the plugin");
    let err = host.load_file(&file).await.expect_err("not pinned");
    assert!(matches!(&err, LoadError::UnpinnedWhereToolsWrite { sha256, .. } if sha256.len() == 64), "{err}");
    assert!(err.to_string().contains("toolhost lock"), "{err}");
    let err = host.load_middleware(&file).await.expect_err("not pinned");
    assert!(matches!(err, LoadError::UnpinnedWhereToolsWrite { .. }), "{err}");
    assert!(host.names().is_empty(), "nothing loaded");
}

/// Why a check, a remembered rule or a watch failed is a type an embedder
/// can match on, with the same words as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_a_remembered_rule_and_a_watch_fail_with_types() {
    use crate::toolhost::{InstanceError, RememberError, WatchError};
    let (host, dir) = host(true).await;
    let rules = host.rules();
    let ctx = host.permission_context("Read", crate::permission::Mode::Default);
    let err = host.check("NoSuchTool", &json!({}), &ctx, &rules).await.expect_err("unknown");
    assert!(matches!(err, InstanceError::Lookup(LookupError::Unknown(ref name)) if name == "NoSuchTool"), "{err}");
    let err = host.check("Read", &json!({"no_such_field": 1}), &ctx, &rules).await.expect_err("bad input");
    assert!(matches!(err, InstanceError::InvalidInput(ref why) if why.contains("file_path")), "{err}");
    assert!(host.check("Read", &json!({"file_path": "/etc/hostname"}), &ctx, &rules).await.is_ok());

    // A settings path that cannot be written: the rule holds here all the same.
    let blocker = dir.path().join("not-a-folder");
    std::fs::write(&blocker, "").unwrap();
    let mut settings = Settings::default();
    settings.permissions.working_dirs = vec![dir.path().display().to_string()];
    settings.builtins = false;
    let unsaved = blocker.join("toolhost.toml");
    let host = Toolhost::builder().settings(settings.clone(), Some(unsaved.clone())).build().await.unwrap();
    let rule = crate::permission::Rule::parse("Lookup", crate::permission::Behavior::Allow).unwrap();
    let err = host.remember_rule(rule).expect_err("the file cannot be written");
    assert!(matches!(&err, RememberError::Save { path, rule, .. } if *path == unsaved && rule == "Lookup"), "{err}");
    assert!(err.to_string().contains("add it by hand under [permissions]"), "{err}");
    assert_eq!(host.rules().rules("Lookup", crate::permission::Behavior::Allow).len(), 1);

    // A plugin folder that went away after the host was built.
    let plugins = dir.path().join("no-such-folder");
    std::fs::create_dir(&plugins).unwrap();
    settings.plugin_dirs = vec![plugins.clone()];
    let host = Toolhost::builder().settings(settings, None).build().await.unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir(&plugins).unwrap();
    let err = host.watch(crate::reload::WatchOptions::default()).await.err().expect("no folder to watch");
    assert!(matches!(&err, WatchError::Folder { dir: folder, .. } if folder.ends_with("no-such-folder")), "{err}");
}
