//! The foundation: loading, the call path, limits, capabilities and the CLI,
//! with real components built from source (tests/guests, examples/components).
//! Each hostile guest's error is asserted, and the next call succeeds.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::engine::{CacheOutcome, Runtime, RuntimeOptions, Tier};
use toolhost::response::ResultState;
use toolhost::settings::Settings;
use toolhost::{CallEvent, CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, call, example, guest, text};

/// A host with the hostile guests and Echo loaded, tight limits, no built-ins.
async fn hostile_host(scratch: &Scratch) -> Toolhost {
    let mut s: Settings = scratch.settings();
    s.builtins = false;
    s.limits.timeout_ms = 1_000;
    s.limits.max_memory_bytes = 64 << 20;
    s.limits.max_output_bytes = 64 << 10;
    for g in ["echo", "spin", "membomb", "recurse", "panics", "flood", "escape", "slow"] {
        s.plugins.push(guest(g));
    }
    scratch.host(s).await
}

async fn assert_still_serving(host: &Toolhost) {
    let r = call(host, "Echo", json!({"text": "still here"}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert_eq!(r.text(), "still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_guests_fail_with_a_named_cause_and_the_host_keeps_serving() {
    let scratch = Scratch::new();
    let host = hostile_host(&scratch).await;

    let start = Instant::now();
    let r = call(&host, "Spin", json!({}), PermissionAnswer::Deny).await;
    let took = start.elapsed();
    assert_eq!(r.state, ResultState::Error);
    assert!(r.text().contains("time limit of 1000 ms"), "{}", r.text());
    assert!(took < Duration::from_millis(2_500), "an infinite loop must end near its deadline, took {took:?}");
    assert_still_serving(&host).await;

    let r = call(&host, "MemBomb", json!({}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error);
    assert!(r.text().contains("memory limit of 64 MiB"), "{}", r.text());
    assert_still_serving(&host).await;

    let r = call(&host, "Recurse", json!({}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error);
    assert!(r.text().contains("overflowed its stack"), "{}", r.text());
    assert_still_serving(&host).await;

    let r = call(&host, "Panics", json!({}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error);
    assert!(r.text().contains("panicked") && r.text().contains("this tool always panics: 42"), "{}", r.text());
    assert_still_serving(&host).await;

    let r = call(&host, "Flood", json!({}), PermissionAnswer::Deny).await;
    let t = r.text();
    assert!(
        t.contains("output truncated") && t.contains("65536 bytes"),
        "the cut must be said: {}",
        &t[t.len().saturating_sub(200)..]
    );
    assert!(t.len() < (64 << 10) + 300, "output must stop at the cap, got {} bytes", t.len());
    assert_still_serving(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_stream_before_the_call_ends() {
    let scratch = Scratch::new();
    let host = hostile_host(&scratch).await;
    let start = Instant::now();
    let mut stream = host.call(CallRequest::new("Slow", json!({"millis": 600}).to_string()));
    let mut first = None;
    let mut finished = None;
    while let Some(event) = stream.next().await {
        match event {
            CallEvent::Chunk(c) if first.is_none() => {
                assert_eq!(c.content, vec![toolhost::response::ContentBlock::text("first\n")]);
                first = Some(start.elapsed());
            }
            CallEvent::Finished(r) => {
                assert_eq!(r.text(), "first\nsecond\n");
                finished = Some(start.elapsed());
            }
            _ => {}
        }
    }
    let (first, finished) = (first.expect("a first chunk"), finished.expect("a response"));
    assert!(finished >= Duration::from_millis(600));
    assert!(finished - first >= Duration::from_millis(500), "first chunk at {first:?}, end at {finished:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_granted_roots_are_refused() {
    let scratch = Scratch::new();
    let secret = scratch.outside("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    std::fs::write(scratch.work().join("inside.txt"), "fine").unwrap();
    std::os::unix::fs::symlink(&secret, scratch.work().join("link")).unwrap();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("escape"));
    s.plugins.push(guest("echo"));
    s.grants.entry("Escape".into()).or_default().add_grant("fs-write").unwrap();
    let host = scratch.host(s).await;
    let work = scratch.work().display().to_string();

    let attempts = [
        json!({"action": "read", "path": format!("{work}/../secret.txt")}),
        json!({"action": "read", "path": secret.display().to_string()}),
        json!({"action": "read", "path": format!("{work}/link")}),
        json!({"action": "write", "path": format!("{work}/link")}),
        json!({"action": "write", "path": format!("{work}/../secret.txt")}),
        json!({"action": "list", "path": "/"}),
    ];
    for input in attempts {
        let r = call(&host, "Escape", input.clone(), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.state, ResultState::Error, "{input}: {r:?}");
        assert!(r.text().contains("denied"), "{input}: {}", r.text());
        assert!(!r.text().contains("top secret"), "{input} leaked the secret");
        assert_still_serving(&host).await;
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret", "nothing outside was written");

    // Inside the granted root the same tool works.
    let r = call(
        &host,
        "Escape",
        json!({"action": "read", "path": format!("{work}/inside.txt")}),
        PermissionAnswer::AllowOnce,
    )
    .await;
    assert_eq!((r.state, r.text()), (ResultState::Success, "fine".to_string()));

    // Capabilities it declared but was not granted are stubs that say so.
    let r = call(&host, "Escape", json!({"action": "exec"}), PermissionAnswer::AllowOnce).await;
    assert!(
        r.text().contains("exec is not granted to tool 'Escape'") && r.text().contains("--grant Escape=exec"),
        "{}",
        r.text()
    );
    let r = call(&host, "Escape", json!({"action": "state"}), PermissionAnswer::AllowOnce).await;
    assert!(r.text().contains("state is not granted"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_before_any_guest_code_runs() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("escape"));
    s.grants.entry("Escape".into()).or_default().add_grant("fs-write").unwrap();
    let host = scratch.host(s).await;
    let target = scratch.work().join("marker");

    let r = call(&host, "Nope", json!({}), PermissionAnswer::AllowOnce).await;
    assert!(r.text().contains("The tool named 'Nope' doesn't exist"), "{}", r.text());

    let r = host
        .call(CallRequest::new("Escape", "{\"action\": "))
        .finish(PermissionAnswer::AllowOnce)
        .await
        .into_response();
    assert!(r.text().contains("is not valid JSON"), "{}", r.text());

    let bad = json!({"action": "write!", "path": target.display().to_string()});
    let r = call(&host, "Escape", bad, PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Error);
    assert!(
        r.text().contains("Input validation failed for tool 'Escape'") && r.text().contains("/action"),
        "{}",
        r.text()
    );
    assert!(!target.exists(), "the tool must not have run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_components_are_rejected_with_what_to_do() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("echo"));
    let host = scratch.host(s).await;
    let dir = scratch.dir.path();

    let corrupt = dir.join("corrupt.wasm");
    let mut bytes = std::fs::read(guest("echo")).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&corrupt, &bytes).unwrap();
    let not_wasm = dir.join("notes.wasm");
    std::fs::write(&not_wasm, "just text").unwrap();
    let core = dir.join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();

    let cases = [
        (corrupt, "could not be compiled"),
        (not_wasm, "not a WebAssembly file"),
        (core, "core WebAssembly module, not a component"),
        (guest("wrong-world"), "does not export `toolhost:tool/tool@0.1.0`"),
        (guest("future-version"), "toolhost:tool@0.2.0, which this toolhost does not support"),
        (guest("bad-schema"), "is not valid JSON Schema"),
        (guest("echo"), "a tool named 'Echo' is already loaded"),
    ];
    for (path, expected) in cases {
        let err =
            format!("{:#}", host.load_file(&path).await.expect_err(&format!("{} must be rejected", path.display())));
        assert!(err.contains(expected), "{}: {err}", path.display());
    }
    assert_still_serving(&host).await;
}

/// The WIT version of a component (from its import and export names)
/// routes it to the bindings module of that version: the examples, the
/// built-ins and a middleware at 0.1.0 load and run through `v0_1_0`; a
/// complete tool built against a copy of the WIT whose package says 0.9.0
/// is refused before any of its code runs, with the versions this host
/// accepts and what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_is_routed_by_its_wit_version_and_an_unknown_version_is_refused() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    let host = scratch.host(s).await;

    let echo = host.load_file(&guest("echo")).await.expect("a 0.1.0 tool loads");
    assert_eq!(echo.wit_version, "0.1.0");
    let mw = host.load_middleware(&guest("mw-pass")).await.expect("a 0.1.0 middleware loads");
    assert_eq!(mw.wit_version, "0.1.0");
    assert_still_serving(&host).await;

    let canary = scratch.work().join("canary");
    let err = format!("{:#}", host.load_file(&guest("wit-0-9")).await.expect_err("a 0.9.0 tool must be refused"));
    for expected in [
        "was built against toolhost:tool@0.9.0, which this toolhost does not support",
        "it accepts: 0.1.0",
        "toolhost wit --out DIR",
    ] {
        assert!(err.contains(expected), "{expected:?} missing from: {err}");
    }
    let r = call(&host, "Later", json!({"path": canary.display().to_string()}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    assert!(r.text().contains("doesn't exist"), "{}", r.text());
    assert!(!canary.exists(), "the 0.9.0 tool must never run");
    assert_still_serving(&host).await;
}

#[test]
fn the_compile_cache_detects_tampering_and_recompiles() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(&RuntimeOptions { cache_dir: Some(dir.path().into()), ..Default::default() }).unwrap();
    let bytes = std::fs::read(guest("echo")).unwrap();
    assert_eq!(runtime.precompile(&bytes, "echo", Tier::Optimised).unwrap().0, CacheOutcome::Miss);
    assert_eq!(runtime.precompile(&bytes, "echo", Tier::Optimised).unwrap().0, CacheOutcome::Hit);
    let entry = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
    let mut stored = std::fs::read(&entry).unwrap();
    let last = stored.len() - 1;
    stored[last] ^= 0xff;
    std::fs::write(&entry, stored).unwrap();
    assert_eq!(runtime.precompile(&bytes, "echo", Tier::Optimised).unwrap().0, CacheOutcome::Recompiled);
    assert_eq!(runtime.precompile(&bytes, "echo", Tier::Optimised).unwrap().0, CacheOutcome::Hit);
}

#[test]
fn cli_runs_the_example_plugin_from_its_file_and_inspects_it() {
    let scratch = Scratch::new();
    std::fs::write(scratch.work().join("a.txt"), "one two\nthree\n").unwrap();
    let wasm = example("word-count");
    let plugin = wasm.display().to_string();
    let file = scratch.work().join("a.txt").display().to_string();
    let input = json!({"paths": [file]}).to_string();

    // Not granted: the plugin gets nothing.
    let out = scratch.cli(&["--plugin", &plugin, "call", "WordCount", &input]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.contains("read access to") && stdout.contains("--grant WordCount=fs-read"), "{stdout}");

    let out = scratch.cli(&["--plugin", &plugin, "--grant", "WordCount=fs-read", "call", "WordCount", &input]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("       2        3       14"), "{stdout}");

    let out = scratch.cli(&["inspect", &plugin]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for expected in [
        "tool:          WordCount",
        "toolhost:tool@0.1.0",
        "fs-read $WORKDIRS",
        "toolhost:tool/backend@0.1.0",
        "sha256:",
    ] {
        assert!(stdout.contains(expected), "missing {expected}: {stdout}");
    }
}

/// Issue 13: a reader that goes away (`toolhost list | head`) ends toolhost
/// quietly: exit code 0 and no panic, whatever the command was printing.
#[test]
fn printing_into_a_closed_pipe_is_a_quiet_exit() {
    use std::process::{Command, Stdio};
    let scratch = Scratch::new();
    for args in [&["list"][..], &["describe", "Read"], &["wit"]] {
        let mut child = Command::new(toolhost_e2e::toolhost_bin())
            .current_dir(scratch.work())
            .arg("--cache-dir")
            .arg(toolhost_e2e::root().join("target/test-cache"))
            .args(args)
            .env("HOME", scratch.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running toolhost");
        // The reading end closes before toolhost prints anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("waiting for toolhost");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

/// Issue 13: `[backend] kind` and `--backend` pick the backend from the
/// registered kinds (the flag wins); an unknown kind is an error that lists
/// the known ones.
#[test]
fn the_backend_setting_and_flag_pick_a_known_kind() {
    let scratch = Scratch::new();
    let out = scratch.cli(&["--no-builtins", "--backend", "e2b", "list"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unknown backend kind `e2b`: the known kinds are `docker`, `local`"), "{stderr}");

    // A known kind is checked for its own options before anything runs.
    let out = scratch.cli(&["--no-builtins", "--backend", "docker", "list"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("needs a [backend.docker] table with at least image"), "{stderr}");

    std::fs::write(scratch.work().join("toolhost.toml"), "[backend]\nkind = \"podman\"\n").expect("settings");
    let out = scratch.cli(&["--no-builtins", "list"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unknown backend kind `podman`"), "{stderr}");

    let out = scratch.cli(&["--no-builtins", "--backend", "local", "list"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
}
