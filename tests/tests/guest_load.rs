//! A big plugin must not hold up the host (issue 19): the Python
//! word-count fixture (19 MB, tens of seconds to compile) on an empty
//! compile cache loads in the background while a small plugin and a
//! built-in answer; a call of its own tool waits for it; `toolhost serve`
//! offers it with `tools/list_changed` once it is ready; a broken one is
//! reported; the next start finds it in the cache and compiles nothing.
//!
//! Order, not time: "answered before the plugin was ready" is asserted by
//! the load still being pending after the answer arrived.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;
use toolhost::engine::{CompileObserver, Phase, Tier};
use toolhost::response::ResultState;
use toolhost::settings::Settings;
use toolhost::{PermissionAnswer, Toolhost};
use toolhost_e2e::fixtures::fixture;
use toolhost_e2e::mcp::{HttpServer, client};
use toolhost_e2e::{Scratch, call, guest, mcp_python, text, toolhost_bin};

/// How long a call may wait for the plugin: a bound for a loaded machine
/// running the debug build (80 s there for this compile, more under load),
/// never a measure.
const PATIENT_MS: u64 = 1_800_000;

/// Every compile reported, as (label, compiler, started).
type Compiles = Arc<Mutex<Vec<(String, Tier, bool)>>>;

fn observer() -> (CompileObserver, Compiles) {
    let seen: Compiles = Arc::default();
    let into = seen.clone();
    let observer = CompileObserver::new(move |e| {
        into.lock().unwrap().push((e.label.clone(), e.tier, matches!(e.phase, Phase::Started)));
    });
    (observer, seen)
}

fn settings(scratch: &Scratch, cache: &Path, plugins: &[PathBuf]) -> Settings {
    let mut s = scratch.settings();
    s.cache_dir = Some(cache.to_path_buf());
    s.plugins = plugins.to_vec();
    s.limits.timeout_ms = PATIENT_MS;
    s.grants.entry("word_count".into()).or_default().add_grant("fs-read").expect("a valid grant");
    s
}

async fn build(settings: Settings, observer: CompileObserver) -> Result<Toolhost, toolhost::BuildError> {
    Toolhost::builder().settings(settings, None).compile_observer(observer).build().await
}

/// A copy of the Python fixture in `dir` whose bytes pass every check made
/// before compiling (header, world, version) but not the compile: the
/// first instruction of a function body of its first core module is an
/// opcode that does not exist (0xFF).
fn broken_python(dir: &Path) -> PathBuf {
    use wasmparser::{Parser, Payload};
    let mut bytes = std::fs::read(fixture("word_count_py.wasm")).unwrap();
    let mut at = None;
    for payload in Parser::new(0).parse_all(&bytes) {
        if let Payload::CodeSectionEntry(body) = payload.expect("the fixture parses") {
            at = Some(body.get_operators_reader().expect("a body").original_position());
            break;
        }
    }
    bytes[at.expect("a function body")] = 0xFF;
    let path = dir.join("broken_word_count_py.wasm");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_plugin_compiles_in_the_background_while_other_tools_answer() {
    let scratch = Scratch::new();
    let cache = scratch.dir.path().join("cache");
    let (python, echo) = (fixture("word_count_py.wasm"), guest("echo"));
    // Echo's code in the cache (the Python plugin's not): Echo loads in build().
    let mut warm = settings(&scratch, &cache, std::slice::from_ref(&echo));
    warm.builtins = false;
    drop(scratch.host(warm).await);

    let (observer, compiles) = observer();
    let s = settings(&scratch, &cache, &[python.clone(), echo.clone()]);
    let host = build(s.clone(), observer.clone()).await.expect("build() does not wait for the compile");
    let changes = host.tool_list_changes();
    let pending: Vec<PathBuf> = host.pending_loads().into_iter().map(|p| p.file).collect();
    assert_eq!(pending, std::slice::from_ref(&python), "the Python plugin loads in the background");
    assert!(host.is_loaded("Echo"), "the cached plugin loaded in build()");
    assert!(!host.is_registered("word_count"));

    // A small plugin and a built-in answer while it compiles.
    let r = call(&host, "Echo", json!({"text": "hi"}), PermissionAnswer::Deny).await;
    assert_eq!((r.state, r.text()), (ResultState::Success, "hi".to_string()), "{r:?}");
    let r = call(&host, "TaskList", json!({}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert_eq!(
        host.pending_loads().len(),
        1,
        "both calls were answered before the Python plugin was ready (it is still loading)"
    );
    assert!(!host.list().await.unwrap().iter().any(|t| t.name == "word_count"), "not listed until loaded");

    // A call of its tool waits for the load, then runs.
    let file = scratch.work().join("a.txt");
    std::fs::write(&file, "one two three\n").unwrap();
    let r = call(&host, "word_count", json!({"paths": [file]}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert!(r.text().contains("       1        3       14 "), "{}", r.text());
    assert!(host.pending_loads().is_empty() && host.failed_loads().is_empty());
    host.ready().await.expect("every plugin loaded");
    assert!(changes.has_changed().unwrap(), "its arrival moved tool_list_changes on");

    // It loaded on baseline code; its optimised code follows in the
    // background and is swapped in, with no change clients would see.
    let mut loads = host.load_changes();
    let generation = *host.tool_list_changes().borrow();
    while !host.plugins_to_optimise().is_empty() {
        loads.changed().await.unwrap();
    }
    let label = python.display().to_string();
    let of_python: Vec<(Tier, bool)> =
        compiles.lock().unwrap().iter().filter(|(l, ..)| *l == label).map(|(_, t, started)| (*t, *started)).collect();
    let expected = [(Tier::Baseline, true), (Tier::Baseline, false), (Tier::Optimised, true), (Tier::Optimised, false)];
    assert_eq!(of_python, expected, "a baseline compile, then an optimised one");
    assert_eq!(*host.tool_list_changes().borrow(), generation, "the swap is not a change of the tool list");
    let r = call(&host, "word_count", json!({"paths": [file]}), PermissionAnswer::AllowOnce).await;
    assert!(r.text().contains("       1        3       14 "), "{r:?}");

    // The next host finds its optimised code in the cache: loaded in
    // build(), nothing compiled, nothing left to optimise.
    compiles.lock().unwrap().clear();
    let again = build(s, observer).await.unwrap();
    assert!(again.pending_loads().is_empty() && again.is_loaded("word_count"));
    assert!(again.plugins_to_optimise().is_empty());
    assert!(compiles.lock().unwrap().iter().all(|(l, ..)| *l != label), "{:?}", compiles.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_big_plugin_is_reported_and_the_rest_serves() {
    let scratch = Scratch::new();
    let cache = scratch.dir.path().join("cache");
    let broken = broken_python(scratch.dir.path());
    let (observer, _) = observer();
    let mut s = settings(&scratch, &cache, &[broken.clone(), guest("echo")]);
    s.builtins = false;
    let host = build(s, observer).await.expect("its quick checks pass: build() succeeds");

    let failures = host.ready().await.expect_err("the broken plugin is reported");
    assert_eq!(failures.0.len(), 1, "{failures}");
    assert_eq!(failures.0[0].file, broken);
    let error = failures.to_string();
    assert!(error.contains(&broken.display().to_string()) && error.contains("could not be compiled"), "{error}");
    assert_eq!(host.failed_loads(), failures.0);
    // The plugin queued behind it loaded; a call of a missing name names the failed file.
    let r = call(&host, "Echo", json!({"text": "still here"}), PermissionAnswer::Deny).await;
    assert_eq!(r.text(), "still here", "{r:?}");
    let r = call(&host, "word_count", json!({"paths": []}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    assert!(r.text().contains("ToolNotFoundError") && r.text().contains(&broken.display().to_string()), "{}", r.text());

    // A one-shot listing waits for it and fails as a broken plugin always has.
    let out = scratch.cli(&["--no-builtins", "--plugin", &broken.display().to_string(), "list"]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains(&broken.display().to_string()) && stderr.contains("could not be compiled"), "{stderr}");
}

/// What can be told without compiling fails build() at once, naming the
/// file: a plugin cut short and a middleware given as a plugin (both big).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_fails_its_quick_checks_fails_the_build_without_a_compile() {
    let scratch = Scratch::new();
    let cache = scratch.dir.path().join("cache");
    let half = scratch.dir.path().join("half.wasm");
    let bytes = std::fs::read(fixture("word_count_py.wasm")).unwrap();
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    for (plugin, expected) in
        [(half, "could not be compiled"), (fixture("redact_py.wasm"), "is a middleware component")]
    {
        let (observer, compiles) = observer();
        let err = build(settings(&scratch, &cache, std::slice::from_ref(&plugin)), observer)
            .await
            .err()
            .unwrap_or_else(|| panic!("{} was accepted", plugin.display()));
        let err = format!("{err:#}");
        assert!(err.contains(&plugin.display().to_string()) && err.contains(expected), "{err}");
        assert!(compiles.lock().unwrap().is_empty(), "nothing was compiled: {:?}", compiles.lock().unwrap());
    }
}

/// `toolhost serve --watch` answers at once; each client is sent
/// `tools/list_changed` when the Python plugin is ready, lists it and
/// calls it; a broken plugin is a log message (2025-11-25 sessions) and in
/// `toolhost status`.
#[test]
fn serve_offers_a_big_plugin_when_it_is_ready_and_reports_a_broken_one() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let cache = scratch.dir.path().join("cache");
    let broken = broken_python(scratch.dir.path());
    let python = fixture("word_count_py.wasm");
    let args: Vec<String> = [
        toolhost_bin().display().to_string(),
        "--cache-dir".into(),
        cache.display().to_string(),
        "--timeout-ms".into(),
        PATIENT_MS.to_string(),
        "--plugin".into(),
        broken.display().to_string(),
        "--plugin".into(),
        python.display().to_string(),
        "--grant".into(),
        "word_count=fs-read".into(),
        "serve".into(),
        "--watch".into(),
        "--http".into(),
        "127.0.0.1:0".into(),
    ]
    .into();
    let server = HttpServer::spawn(&scratch, &args);
    // Meanwhile `toolhost status` lists it as loading (once the watching
    // server has written its status file).
    let status = || -> Option<serde_json::Value> {
        let out = scratch.cli(&["status", "--json"]);
        let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status --json");
        reports.as_array().unwrap().iter().find(|r| r["pid"] == server.pid()).cloned()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let early = loop {
        if let Some(report) = status() {
            break report;
        }
        assert!(std::time::Instant::now() < deadline, "no status file for the server");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let loading: Vec<&serde_json::Value> = early["loading"].as_array().unwrap().iter().map(|l| &l["file"]).collect();
    assert!(loading.contains(&&json!(python.display().to_string())), "{early}");
    let out = scratch.cli(&["status"]);
    assert!(text(&out).0.contains("loading in the background"), "{}", text(&out).0);
    let file = scratch.work().join("a.txt");
    std::fs::write(&file, "one two three\n").unwrap();
    let params = json!({"tool": "word_count", "args": {"paths": [file]}, "timeout": PATIENT_MS / 1000});
    let transport = server.transport(None);
    let seen: Vec<serde_json::Value> = std::thread::scope(|s| {
        let clients: Vec<_> = ["legacy", "auto"]
            .into_iter()
            .map(|mode| {
                let (params, transport) = (params.clone(), &transport);
                let scratch = &scratch;
                s.spawn(move || client(py, scratch, transport, mode, "background_load", params))
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for (r, mode) in seen.iter().zip(["legacy", "auto"]) {
        assert!(!r["before"].as_array().unwrap().contains(&json!("word_count")), "{mode}: listed early: {r}");
        assert!(r["notified"].as_u64().unwrap() >= 1, "{mode}: {r}");
        assert!(r["after"].as_array().unwrap().contains(&json!("word_count")), "{mode}: {r}");
        assert_eq!(r["call"]["is_error"], false, "{mode}: {r}");
        assert!(r["call"]["text"].as_str().unwrap().contains("       1        3       14 "), "{mode}: {r}");
    }
    let logs = seen[0]["logs"].as_array().unwrap();
    let load_errors: Vec<_> = logs.iter().filter(|l| l["logger"] == "toolhost.load").collect();
    assert_eq!(load_errors.len(), 1, "{logs:?}");
    assert_eq!(load_errors[0]["data"]["event"], "load-error");
    assert_eq!(load_errors[0]["data"]["file"], broken.display().to_string());
    assert!(load_errors[0]["data"]["error"].as_str().unwrap().contains("could not be compiled"), "{logs:?}");

    // `toolhost status` (the watching server's status file, rewritten once
    // its loads are done and its first pass ran): the plugin serves, the
    // broken file is reported. A bounded wait for the other process.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let ours = status();
        let file = |f: &Path| {
            ours.as_ref()?["files"].as_array()?.iter().find(|s| s["file"] == f.display().to_string()).cloned()
        };
        if let (Some(good), Some(bad)) = (file(&python), file(&broken))
            && good["name"] == "word_count"
        {
            assert!(ours.as_ref().unwrap().get("loading").is_none(), "{ours:?}");
            assert!(bad["last_error"].as_str().unwrap().contains("could not be compiled"), "{bad}");
            assert!(bad["name"].is_null(), "{bad}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "status never showed both files: {ours:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A one-shot command that does not use the big plugin answers at once and
/// leaves its compile to the detached optimiser, whose cached code the next
/// command loads without compiling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_call_leaves_the_big_plugin_to_the_detached_optimiser() {
    let scratch = Scratch::new();
    let cache = scratch.dir.path().join("cache");
    let python = fixture("word_count_py.wasm");
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(toolhost_bin())
            .current_dir(scratch.work())
            .arg("--cache-dir")
            .arg(&cache)
            .arg("--plugin")
            .arg(&python)
            .args(args)
            .env("RUST_LOG", "toolhost=info")
            .env("HOME", scratch.dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("running toolhost");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
        (stdout, stderr)
    };
    let echo = guest("echo").display().to_string();
    let (stdout, stderr) = cli(&["--plugin", &echo, "call", "Echo", r#"{"text":"hi"}"#]);
    assert_eq!(stdout.trim(), "hi");
    assert!(stderr.contains("compiling it in the background"), "{stderr}");

    // The detached optimiser stores the optimised code (bounded wait for
    // another process, never a measure).
    let mut s = scratch.settings();
    s.cache_dir = Some(cache.clone());
    let probe = scratch.host(s).await;
    let bytes = std::fs::read(&python).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1200);
    while !probe.runtime().is_optimised_cached(&bytes) {
        assert!(std::time::Instant::now() < deadline, "no optimised code was cached in 1200 s");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let (stdout, stderr) = cli(&["describe", "word_count"]);
    assert!(stdout.contains("word_count"), "{stdout}");
    assert!(!stderr.contains("compiling it in the background"), "the cache had it: {stderr}");
}
