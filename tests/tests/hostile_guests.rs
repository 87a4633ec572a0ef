//! Issue #17, hostile input: guests that trap in every export of the WIT
//! worlds, and guests that pass malformed arguments to every host import
//! they can reach. Each attack is made by a real component built from
//! `tests/guests`, and each is checked for what a user depends on: the
//! failure names the tool (or middleware), the export and the cause;
//! nothing ran with grants it was not decided for; nothing outside the
//! granted roots changed; no process, descriptor or slot leaked; the next
//! call is served.
//!
//! - `trap-every` traps in the export its input names (`check-read-only`,
//!   `check-permissions`, `match-rule`, `generate-suggestions`, `call`);
//!   `trap-metadata` and `mw-trap-info` in the exports asked at load;
//!   `mw-trap` on entry or while its inner layers run;
//! - `import-attack` passes hostile arguments to `backend`, `state`, `log`
//!   and `output`; `mw-import-attack` to `chain`.
//!
//! The tests of this file run one at a time ([`serial`]): one of them
//! counts the process's file descriptors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::capability::Policy;
use toolhost::permission::{Behavior, Mode, Rule};
use toolhost::response::{ResultState, ToolResponse};
use toolhost::settings::Settings;
use toolhost::state::StateBounds;
use toolhost::{CallEvent, CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, call, guest, next_event, text};

/// Holds the other tests of this file off while one runs (a lock that
/// may be held across awaits, and is released by a test that fails).
async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

/// A call that must end: a hang fails the test instead of holding it.
async fn bounded(host: &Toolhost, request: CallRequest, answer: PermissionAnswer) -> ToolResponse {
    let what = format!("{} {}", request.tool, request.input.chars().take(120).collect::<String>());
    tokio::time::timeout(Duration::from_secs(120), host.call(request).finish(answer))
        .await
        .unwrap_or_else(|_| panic!("the call {what} did not end within 120 s: the host hangs"))
        .into_response()
}

async fn assert_still_serving(host: &Toolhost) {
    let r = bounded(host, CallRequest::new("Echo", json!({"text": "still here"}).to_string()), PermissionAnswer::Deny)
        .await;
    assert_eq!((r.state, r.text().as_str()), (ResultState::Success, "still here"), "{r:?}");
}

/// Settings with Echo and the hostile tools loaded (no built-ins), their
/// grants, and an audit log in the scratch folder.
fn hostile_settings(scratch: &Scratch) -> Settings {
    let mut s = scratch.settings();
    s.builtins = false;
    for g in ["echo", "trap-every", "import-attack", "flood"] {
        s.plugins.push(guest(g));
    }
    let workdirs = vec!["$WORKDIRS".to_string()];
    let all = Policy { fs_write: workdirs, process_exec: true, state: true, ..Policy::default() };
    s.grants.insert("TrapEvery".into(), all.clone());
    s.grants.insert("ImportAttack".into(), all);
    s.limits.timeout_ms = 60_000;
    s.limits.max_memory_bytes = 128 << 20;
    s.audit.path = Some(scratch.dir.path().join("audit.jsonl"));
    s
}

/// The live processes whose command line holds `tag`. A process with a
/// SIGKILL pending was killed (it exits as soon as it is scheduled) and is
/// not counted, nor is a zombie.
fn processes_tagged(tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(tag) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let field = |name: &str| {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap_or_default();
            u64::from_str_radix(line.trim_start_matches(name).trim(), 16).unwrap_or(0)
        };
        let killed = (field("SigPnd:") | field("ShdPnd:")) & (1 << (libc::SIGKILL - 1)) != 0;
        let zombie = status.lines().any(|l| l.starts_with("State:") && l.contains('Z'));
        if !killed && !zombie && !status.is_empty() {
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// A tag no other process has.
fn unique_tag(what: &str) -> String {
    format!("toolhost-hostile-{what}-{}", std::process::id())
}

/// The audit log's call records, after closing it.
fn audit_records(host: &Toolhost) -> Vec<Value> {
    let log = host.audit_log().expect("the host has an audit log");
    log.close();
    let text = std::fs::read_to_string(host.settings().audit.path.as_ref().unwrap()).unwrap();
    text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|r| r["kind"] == "call").collect()
}

// ---- 1. a guest that traps in every export ----------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_in_any_decision_export_denies_naming_it_and_call_never_runs() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let host = scratch.host(hostile_settings(&scratch)).await;
    let marker = scratch.work().join("marker");
    // Which export runs depends on the rules and the mode: match-rule only
    // with a content rule, suggestions only on an ask path.
    let cases: &[(&str, Mode, &[&str])] = &[
        ("check-read-only", Mode::Default, &[]),
        ("check-read-only", Mode::Bypass, &[]),
        ("check-permissions", Mode::Default, &[]),
        ("check-permissions", Mode::Bypass, &[]),
        ("match-rule", Mode::Default, &["TrapEvery(anything)"]),
        ("match-rule", Mode::AcceptEdits, &["TrapEvery(anything)"]),
        ("generate-suggestions", Mode::Default, &[]),
    ];
    let mut calls = 0;
    for (export, mode, allow) in cases {
        for rule in *allow {
            host.remember_rule(Rule::parse(rule, Behavior::Allow).unwrap()).unwrap();
        }
        for (how, cause) in [("panic", "panicked at"), ("abort", "the tool crashed")] {
            let input = json!({"trap": export, "how": how, "marker": marker});
            // The user would allow it: a denial here is the engine's own.
            let r = bounded(
                &host,
                CallRequest::new("TrapEvery", input.to_string()).mode(*mode),
                PermissionAnswer::AllowOnce,
            )
            .await;
            calls += 1;
            let t = r.text();
            assert_eq!(r.state, ResultState::Denied, "{export} {how} {mode}: {t}");
            let named = format!("Permission denied for TrapEvery: its permission check failed in `{export}`: ");
            assert!(t.contains(&named) && t.contains(cause), "{export} {how} {mode}: {t}");
            if how == "panic" {
                assert!(t.contains(&format!("TrapEvery traps in {export}")), "{export}: {t}");
            }
            assert!(!marker.exists(), "{export} {how} {mode}: `call` ran with its grants");
            assert_still_serving(&host).await;
        }
    }
    // The control: the same tool, trapping nowhere, writes its marker.
    host.remember_rule(Rule::parse("TrapEvery", Behavior::Allow).unwrap()).unwrap();
    let r = call(&host, "TrapEvery", json!({"trap": "none", "marker": marker}), PermissionAnswer::Deny).await;
    assert_eq!((r.state, r.text().as_str()), (ResultState::Success, "ran"), "{r:?}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "call ran");

    // The audit log holds each call once: denied at the step that failed,
    // with no host operation (nothing ran with grants).
    let records = audit_records(&host);
    let traps: Vec<&Value> = records.iter().filter(|r| r["tool"] == "TrapEvery").collect();
    assert_eq!(traps.len(), calls + 1, "{records:?}");
    for r in &traps[..calls] {
        assert_eq!((r["outcome"].as_str(), r["decision"]["behavior"].as_str()), (Some("denied"), Some("deny")), "{r}");
        assert!(r["decision"]["message"].as_str().unwrap().contains("its permission check failed in"), "{r}");
        assert_eq!(r["ops"], json!([]), "{r}");
        assert!(r.get("answer").is_none(), "nobody was asked: {r}");
    }
    assert_eq!(traps[calls]["outcome"], "success");
    assert_eq!(records.iter().filter(|r| r["tool"] == "Echo" && r["outcome"] == "success").count(), calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_in_call_fails_naming_the_tool_and_kills_what_it_started() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let mut s = hostile_settings(&scratch);
    s.permissions.allow.push("TrapEvery".into());
    let host = scratch.host(s).await;
    let marker = scratch.work().join("marker");
    let tag = unique_tag("call");
    for (trap, how, cause) in [
        ("call", "panic", "the tool panicked: panicked at"),
        ("call", "abort", "the tool crashed"),
        ("call-after-spawn", "panic", "TrapEvery traps in call after starting a process"),
    ] {
        let input = json!({"trap": trap, "how": how, "marker": marker, "tag": tag});
        let r = bounded(&host, CallRequest::new("TrapEvery", input.to_string()), PermissionAnswer::Deny).await;
        let t = r.text();
        assert_eq!(r.state, ResultState::Error, "{trap} {how}: {t}");
        assert!(t.contains("Error: tool 'TrapEvery' failed in `call`: ") && t.contains(cause), "{trap} {how}: {t}");
        assert_eq!(processes_tagged(&tag), Vec::<String>::new(), "{trap}: a process it started outlived the trap");
        assert_still_serving(&host).await;
        if trap == "call" {
            assert!(!marker.exists(), "a trap on entry left an effect");
        }
    }
    // After the spawn the marker was written (call ran that far): the
    // test could see an effect if there were one.
    assert!(marker.exists());
    let records = audit_records(&host);
    let outcomes: Vec<&str> =
        records.iter().filter(|r| r["tool"] == "TrapEvery").map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["error", "error", "error"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_in_metadata_or_info_refuses_the_load_naming_the_file_and_export() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let host = scratch.host(hostile_settings(&scratch)).await;
    let (tool, middleware) = (guest("trap-metadata"), guest("mw-trap-info"));

    let err = format!("{:#}", host.load_file(&tool).await.unwrap_err());
    assert!(err.contains(&tool.display().to_string()) && err.contains("calling `metadata` failed"), "{err}");
    assert!(err.contains("the tool panicked") && err.contains("TrapMetadata traps in metadata"), "{err}");
    assert!(!host.is_registered("TrapMetadata"));
    assert_still_serving(&host).await;

    let err = format!("{:#}", host.load_middleware(&middleware).await.unwrap_err());
    assert!(err.contains(&middleware.display().to_string()) && err.contains("the middleware's `info` failed"), "{err}");
    assert!(err.contains("middleware '") && err.contains("panicked") && err.contains("traps in info"), "{err}");
    assert!(!err.contains("`metadata`") && !err.contains("the tool"), "blamed on a tool: {err}");
    assert_still_serving(&host).await;

    // A host asked to start with either refuses to start, naming it.
    for (flag, path) in [("--plugin", &tool), ("--middleware", &middleware)] {
        let out = scratch.cli(&["--no-builtins", flag, path.to_str().unwrap(), "list"]);
        let (stdout, stderr) = text(&out);
        assert_ne!(out.status.code(), Some(0), "{stdout}");
        assert!(stderr.contains(&path.display().to_string()) && stderr.contains("panicked"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middleware_trapping_on_entry_or_while_its_inner_layers_run_is_blamed_and_stops_them() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let tag = unique_tag("mw");
    for when in ["entry", "after-next"] {
        let mut s = scratch.settings_file(&format!("[middleware.mw-trap]\nwhen = \"{when}\"\n"));
        let base = hostile_settings(&scratch);
        (s.builtins, s.plugins, s.grants, s.limits) = (false, base.plugins, base.grants, base.limits);
        s.middleware.files.push(guest("mw-trap"));
        s.middleware.attach.insert("TrapEvery".into(), vec!["mw-trap".into()]);
        s.permissions.allow.push("TrapEvery".into());
        let host = scratch.host(s).await;
        let marker = scratch.work().join(format!("marker-{when}"));
        let input = json!({"trap": "none", "hold": true, "tag": tag, "marker": marker});
        let r = bounded(&host, CallRequest::new("TrapEvery", input.to_string()), PermissionAnswer::Deny).await;
        let t = r.text();
        assert_eq!(r.state, ResultState::Error, "{when}: {t}");
        assert!(t.contains("middleware 'mw-trap' panicked"), "{when}: {t}");
        if when == "entry" {
            assert!(t.contains("mw-trap always panics") && !marker.exists(), "{when}: {t}");
        } else {
            // The tool was running (it had written its marker and started
            // its process) when the middleware trapped: it is stopped.
            assert!(t.contains("spawned") && t.contains("mw-trap panics after next.run"), "{t}");
            assert!(marker.exists());
        }
        assert_eq!(processes_tagged(&tag), Vec::<String>::new(), "{when}: the inner layers outlived the trap");
        assert_still_serving(&host).await;
    }
}

// ---- 2. malformed data through every import ---------------------------

/// Every file under `dir` with its bytes, mode and mtime.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32, i64)> {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = std::fs::symlink_metadata(&d).unwrap();
        out.insert(d.clone(), (Vec::new(), meta.mode(), meta.mtime()));
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), (std::fs::read(&path).unwrap(), meta.mode(), meta.mtime()));
            }
        }
    }
    out
}

/// The number of file descriptors this process holds.
fn descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// What each descriptor of this process is.
fn descriptor_targets() -> Vec<String> {
    let fds = std::fs::read_dir("/proc/self/fd").unwrap().flatten();
    fds.map(|e| format!("{} -> {:?}", e.file_name().to_string_lossy(), std::fs::read_link(e.path()))).collect()
}

/// The descriptors once the processes tagged `tag` are gone and the host
/// has closed their pipes, which it does a moment after the call that
/// killed them: waits (up to a minute) for at most `target`; what a leak
/// holds never closes.
async fn settled_descriptors(tag: &str, target: usize) -> usize {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    let gone = || {
        let cmdlines = std::fs::read_dir("/proc").unwrap().flatten();
        cmdlines
            .map(|e| std::fs::read(e.path().join("cmdline")).unwrap_or_default())
            .all(|c| !String::from_utf8_lossy(&c).contains(tag))
    };
    while (!gone() || descriptors() > target) && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    descriptors()
}

/// One `ImportAttack` call; its report (`case` → `ok: …` / `err: …`).
async fn attack(host: &Toolhost, scratch: &Scratch, name: &str, tag: &str) -> (ToolResponse, Value) {
    let input = json!({"attack": name, "dir": scratch.work(), "outside": scratch.outside("sentinel"), "tag": tag});
    let r = bounded(host, CallRequest::new("ImportAttack", input.to_string()), PermissionAnswer::Deny).await;
    let report = serde_json::from_str(&r.text()).unwrap_or(Value::Null);
    (r, report)
}

fn report_has(report: &Value, case: &str) -> bool {
    report[case].is_string()
}

fn outcome<'a>(report: &'a Value, case: &str) -> &'a str {
    report[case].as_str().unwrap_or_else(|| panic!("no case {case} in {report}"))
}

/// The case got an error: of the `ToolError` variant `variant`, or any
/// when `variant` is empty.
fn assert_refused(report: &Value, case: &str, variant: &str) {
    let got = outcome(report, case);
    let want = if variant.is_empty() { "err: ".to_string() } else { format!("err: ToolError::{variant}(") };
    assert!(got.starts_with(&want), "{case}: expected {want}…, got {got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_import_refuses_hostile_arguments_and_touches_nothing_outside() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let work = scratch.work();
    let sentinel = scratch.outside("sentinel");
    std::fs::create_dir_all(sentinel.join("sub")).unwrap();
    std::fs::write(sentinel.join("secret.txt"), "secret\n").unwrap();
    std::fs::write(sentinel.join("sub/inner.txt"), "inner\n").unwrap();
    std::os::unix::fs::symlink(&sentinel, work.join("link-out")).unwrap();
    let fifo = std::ffi::CString::new(work.join("fifo").display().to_string()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    // A sparse file twice the tool's memory limit.
    std::fs::File::create(work.join("big")).unwrap().set_len(256 << 20).unwrap();
    let before = snapshot(&sentinel);

    let mut s = hostile_settings(&scratch);
    s.permissions.allow.push("ImportAttack".into());
    s.limits.max_output_bytes = 1 << 20;
    s.limits.max_state_keys = 50;
    // The audit log's writer opens its file as it writes: no log here, so
    // that the descriptors counted are the calls' own.
    s.audit.path = None;
    let host = scratch.host(s).await;
    let tag = unique_tag("imports");
    let attacks = ["paths", "walk", "spawn", "process", "state", "log", "output", "special"];
    let mut reports = BTreeMap::new();
    // Twice: the first round warms up what the host opens once, lazily
    // (the compile cache, the audit log, the child reaper); in the second,
    // no attack may leave a descriptor open.
    for round in 0..2 {
        for name in attacks {
            let (fds, targets) = (descriptors(), descriptor_targets());
            let (r, report) = attack(&host, &scratch, name, &tag).await;
            if name != "output" {
                assert_eq!(r.state, ResultState::Success, "{name}: {}", r.text());
            }
            assert_eq!(snapshot(&sentinel), before, "{name}: the sentinel outside the grants changed");
            assert_eq!(processes_tagged(&tag), Vec::<String>::new(), "{name}: processes outlived the call");
            if round == 1 {
                let after = settled_descriptors(&tag, fds).await;
                let now = descriptor_targets();
                assert!(after <= fds, "{name}: file descriptors leaked: {targets:?} before, {now:?} after");
            }
            assert_still_serving(&host).await;
            if round == 0 {
                reports.insert(name, (r, report));
            }
        }
    }

    // paths: outside, every way round, refused by the grants; malformed
    // inside, refused by the file system; a write inside works.
    let paths = &reports["paths"].1;
    for op in ["read-file", "write-file", "stat", "list-dir", "create-dir", "remove", "real-path"] {
        for case in ["absolute", "dotdot", "relative", "tilde", "nul", "nul-end", "deep", "dir"] {
            assert_refused(paths, &format!("{op} out-{case}"), "Denied");
        }
        if op != "real-path" {
            for case in ["in-nul", "in-huge"] {
                assert_refused(paths, &format!("{op} {case}"), "");
            }
        }
    }
    for op in ["read-file", "stat", "list-dir", "real-path"] {
        assert_refused(paths, &format!("{op} out-root"), "Denied");
    }
    assert_refused(paths, "remove granted-root", "");
    assert_refused(paths, "remove empty", "");
    assert_refused(paths, "write-file empty", "");
    assert_eq!(outcome(paths, "write-file inside"), "ok: ()");
    assert_eq!(std::fs::read_to_string(work.join("inside.txt")).unwrap(), "in");
    assert!(work.join("link-out").is_symlink() && work.join("fifo").exists(), "the test's own files are there");

    // walk and search: nothing from outside, malformed options refused.
    let walk = &reports["walk"].1;
    for op in ["walk", "search"] {
        for case in ["root-outside", "root-dotdot"] {
            assert_refused(walk, &format!("{op} {case}"), "Denied");
        }
        assert_refused(walk, &format!("{op} root-nul"), "");
        assert_refused(walk, &format!("{op} glob-invalid"), "InvalidInput");
        assert_refused(walk, &format!("{op} match-names-invalid"), "InvalidInput");
        assert_refused(walk, &format!("{op} file-type-huge"), "InvalidInput");
        for case in ["globs-10000", "match-names-10000", "glob-outside", "follow-link-out", "glob-huge"] {
            let got = outcome(walk, &format!("{op} {case}"));
            assert!(got.starts_with("err") || got.ends_with(" 0 outside\""), "{op} {case}: {got}");
        }
    }
    assert_refused(walk, "search pattern-invalid", "InvalidInput");
    assert!(report_has(walk, "search pattern-too-big") && report_has(walk, "search pattern-huge"), "{walk}");
    assert!(outcome(walk, "search context-max").starts_with("ok"), "{walk}");

    // spawn: malformed requests refused before anything starts.
    let spawn = &reports["spawn"].1;
    for case in ["empty-argv", "nul-argv", "nul-program", "nul-env", "equals-in-name", "timeout-max"] {
        assert_refused(spawn, &format!("spawn {case}"), "InvalidInput");
    }
    for case in ["cwd-outside", "cwd-root", "cwd-dotdot", "cwd-nul"] {
        assert_refused(spawn, &format!("spawn {case}"), "Denied");
    }
    assert_refused(spawn, "spawn missing-program", "NotFound");
    assert_refused(spawn, "spawn arg-1mib", "");
    assert!(outcome(spawn, "spawn output-max").contains("capped"), "{spawn}");

    // process: handles used past their end, and left behind (killed, above).
    let process = &reports["process"].1;
    assert_eq!(outcome(process, "wait twice"), "ok: \"0 0 true\"");
    assert_eq!(outcome(process, "spawn-and-drop 40"), "ok: 40");
    assert_eq!(outcome(process, "left-running"), "ok: 20");

    // state: every malformed or oversized value refused, the bounds held.
    let state = &reports["state"].1;
    for case in ["set huge-key", "set too-big"] {
        assert!(outcome(state, case).contains("limits.max_state_value_bytes"), "{case}: {state}");
    }
    for case in ["set not-json", "set nested", "cas expected-not-json", "cas value-not-json"] {
        assert!(outcome(state, case).starts_with("err:") && outcome(state, case).contains("not JSON"), "{case}");
    }
    assert!(outcome(state, "set many-keys").contains("max_state_keys"), "{state}");
    assert_eq!(outcome(state, "get huge-key"), "ok: None");
    assert_eq!(outcome(state, "cached-file outside"), "ok: None");
    assert!(host.state().get("k").await.unwrap().is_none());
    assert!(host.state().get("key-49").await.unwrap().is_some());
    assert!(host.state().get("key-50").await.unwrap().is_none());

    // log and output: taken, bounded, and the response sane.
    assert_eq!(outcome(&reports["log"].1, "log"), "ok: returned");
    let (output, _) = &reports["output"];
    assert!(output.text().contains("output truncated"), "{}", output.text());
    assert_eq!(output.metadata.get("kept"), Some(&json!(true)), "{:?}", output.metadata);
    assert!(!output.metadata.contains_key("m") && !output.metadata.contains_key("a"), "{:?}", output.metadata);
    assert!(serde_json::to_string(output).unwrap().len() < 2 << 20);

    // A FIFO and a file larger than the tool could take are refused unread.
    let special = &reports["special"].1;
    assert_refused(special, "read-file fifo", "InvalidInput");
    assert!(outcome(special, "read-file fifo").contains("not a regular file"), "{special}");
    assert!(outcome(special, "read-file big").contains("268435456 bytes, more than the 134217728"), "{special}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_handle_or_a_string_that_is_not_utf8_traps_only_its_own_call() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let mut s = hostile_settings(&scratch);
    s.permissions.allow.push("ImportAttack".into());
    let host = scratch.host(s).await;
    for (name, cause) in [("handle", "unknown handle index"), ("utf8", "invalid utf-8")] {
        let (r, _) = attack(&host, &scratch, name, "").await;
        let t = r.text();
        assert_eq!(r.state, ResultState::Error, "{name}: {t}");
        assert!(
            t.contains("Error: tool 'ImportAttack' failed in `call`: the tool crashed") && t.contains(cause),
            "{name}: {t}"
        );
        assert_still_serving(&host).await;
    }
}

/// Settings with `mw-import-attack` on Echo and Flood, granted the state.
fn chain_settings(scratch: &Scratch) -> Settings {
    let mut s = hostile_settings(scratch);
    s.middleware.files.push(guest("mw-import-attack"));
    for tool in ["Echo", "Flood"] {
        s.middleware.attach.insert(tool.into(), vec!["mw-import-attack".into()]);
    }
    s.grants.insert("mw-import-attack".into(), Policy { state: true, ..Policy::default() });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_import_refuses_malformed_input_and_forged_handles() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let host = scratch.host(chain_settings(&scratch)).await;
    let r = call(&host, "Echo", json!({"text": "x", "attack": "input"}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Success, "{}", r.text());
    let report: Value = serde_json::from_str(&r.text()).unwrap();
    for case in ["not-json", "array", "schema", "nested"] {
        assert_refused(&report, &format!("run {case}"), "InvalidInput");
    }
    assert_eq!(outcome(&report, "run huge"), "ok", "a valid input that is large still runs");
    assert_eq!(outcome(&report, "outcome twice"), "ok ok");
    assert_eq!(outcome(&report, "next-chunk after end"), "true");

    let r = call(&host, "Echo", json!({"text": "x", "attack": "handle"}), PermissionAnswer::Deny).await;
    let t = r.text();
    assert_eq!(r.state, ResultState::Error, "{t}");
    assert!(t.contains("middleware 'mw-import-attack' crashed") && t.contains("unknown handle index"), "{t}");
    host.detach_all("Echo");
    assert_still_serving(&host).await;
}

/// A middleware that starts run after run of its inner layers without
/// reading them would hold an instance of the tool for each, and one call
/// would take the instance pool every call shares. It gets a few runs in
/// flight, is refused past them, and another call is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middleware_cannot_take_the_instance_pool_with_runs_it_never_reads() {
    let _serial = serial().await;
    let scratch = Scratch::new();
    let mut s = chain_settings(&scratch);
    // Flood blocks once its undrained output fills the channel (the
    // default cap is far above one channel's worth).
    s.limits.max_output_bytes = 8 << 20;
    let host = scratch.host(s).await;
    host.detach_all("Echo");
    let mut flood = host.call(CallRequest::new("Flood", json!({"attack": "flood"}).to_string()));
    // Its report comes while it still holds every run it started.
    let report: Value = loop {
        match next_event(&mut flood, "the flooding call").await {
            CallEvent::Chunk(chunk) => {
                break serde_json::from_str(&ToolResponse::from_chunk("", chunk).text()).unwrap();
            }
            CallEvent::Finished(r) => panic!("ended before its report: {}", r.text()),
            _ => {}
        }
    };
    // Meanwhile other calls are served.
    assert_still_serving(&host).await;
    assert_eq!((&report["started"], &report["running"]), (&json!(3), &json!(3)), "one layer + 2 spare: {report}");
    let refused = report["refused"].as_str().unwrap();
    assert!(
        refused.starts_with("refused at 3:")
            && refused.contains("middleware 'mw-import-attack' started another run of the inner layers of 'Flood' while 3 were still running"),
        "{refused}"
    );
    host.state().set("release", json!(true), StateBounds::NONE).await.unwrap();
    let r = loop {
        if let CallEvent::Finished(r) = next_event(&mut flood, "the flooding call").await {
            break r;
        }
    };
    assert_eq!(r.state, ResultState::Success, "{}", r.text());
    assert_still_serving(&host).await;
}
