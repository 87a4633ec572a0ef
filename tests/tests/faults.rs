//! Faults injected for real, each checked for what a user depends on:
//! nothing lost, nothing half-done, a clear error, a host that keeps
//! serving.
//!
//! - `toolhost` killed with SIGKILL at spread moments of a Write, an Edit, a
//!   task update (session save) and a compile-cache store: the file is the
//!   old or the new bytes, the session and the cache load next time;
//! - a second process on a session a running `serve` holds: refused with
//!   the holder's pid, neither process's updates lost;
//! - a full disk (a small tmpfs, mounted here: root is needed, and under
//!   `CI=true` its absence fails the test) as the working directory and as
//!   the state folder;
//! - a plugin file rewritten while hosts load it;
//! - a working directory deleted while a call runs in it;
//! - a working directory made unreadable (mode 000) while a call runs in
//!   it, with `toolhost serve` run as `nobody` without capabilities.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use std::sync::Arc;
use toolhost::permission::Mode;
use toolhost::state::{AgentState, FileStore, StateBounds, StateKey};
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, call, guest, root, toolhost_bin};

/// How many times each kill is tried, at moments spread over a whole run.
const KILLS: usize = 12;

/// `toolhost <args>` in `scratch` as [`Scratch::cli`] runs it, not waited for.
fn spawn(scratch: &Scratch, cache: &Path, args: &[&str]) -> std::process::Child {
    Command::new(toolhost_bin())
        .current_dir(scratch.work())
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env("HOME", scratch.dir.path())
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting toolhost")
}

/// Runs `args` to the end once (so the moments to kill at are known),
/// then `KILLS` times killed with SIGKILL at moments spread from a fifth of
/// that run's length to its end, calling `reset` before and `check` after
/// each. Returns how many runs were killed before they finished.
fn kill_at_spread_moments(
    scratch: &Scratch,
    cache: &Path,
    args: &[&str],
    mut reset: impl FnMut(),
    mut check: impl FnMut(usize),
) -> usize {
    // The quickest of three whole runs: one slowed by other tests' load
    // would put every kill moment after the later runs had finished.
    let mut whole = Duration::MAX;
    for _ in 0..3 {
        reset();
        let started = Instant::now();
        let status = spawn(scratch, cache, args).wait().expect("waiting for toolhost");
        whole = whole.min(started.elapsed());
        assert!(status.success(), "the run to be killed fails on its own: toolhost {}", args.join(" "));
        check(usize::MAX);
    }
    let mut killed = 0;
    for i in 0..KILLS {
        reset();
        let mut child = spawn(scratch, cache, args);
        let at = whole.mul_f64(0.2 + 0.8 * i as f64 / KILLS as f64);
        std::thread::sleep(at);
        let finished = child.try_wait().expect("polling toolhost").is_some();
        child.kill().ok();
        child.wait().expect("reaping toolhost");
        if !finished {
            killed += 1;
        }
        check(i);
    }
    killed
}

/// About 2 MB in 20 long lines: long enough to write that a kill lands in
/// it, few lines so that the tools' diff of old and new stays cheap.
fn lines(word: &str) -> String {
    (0..20).map(|i| format!("{word} line {i} {}\n", "x".repeat(100_000))).collect()
}

/// Names in `dir` other than `keep`, except the temporary files a killed
/// write leaves (`.toolhost-PID-N.tmp`, never read as the target).
fn strays(dir: &Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("listing the working directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| !(keep.contains(&n.as_str()) || n.starts_with(".toolhost-") && n.ends_with(".tmp")))
        .collect()
}

/// The compile cache the suites share.
fn cache_dir() -> PathBuf {
    root().join("target/test-cache")
}

#[test]
fn a_write_killed_midway_leaves_the_old_or_the_new_file() {
    let scratch = Scratch::new();
    let target = scratch.work().join("target.txt");
    let (old, new) = (lines("old"), lines("new"));
    let batch = scratch.dir.path().join("batch.json");
    std::fs::write(
        &batch,
        json!([
            {"tool": "Read", "input": {"file_path": target, "limit": 1}},
            {"tool": "Write", "input": {"file_path": target, "content": new}},
        ])
        .to_string(),
    )
    .unwrap();
    let mut seen = (0, 0);
    let killed = kill_at_spread_moments(
        &scratch,
        &cache_dir(),
        &["--mode", "accept-edits", "run", batch.to_str().unwrap()],
        || std::fs::write(&target, &old).unwrap(),
        |i| {
            let now = std::fs::read_to_string(&target).expect("the target is still there");
            assert!(now == old || now == new, "kill {i}: the file is neither the old nor the new bytes");
            if now == old {
                seen.0 += 1
            } else {
                seen.1 += 1
            }
            assert_eq!(strays(&scratch.work(), &["target.txt"]), Vec::<String>::new());
        },
    );
    println!("killed {killed} of {KILLS} runs; old {} times, new {} times", seen.0, seen.1);
    assert!(killed > 0, "no run was killed before it finished");
}

#[test]
fn an_edit_killed_midway_leaves_the_old_or_the_new_file() {
    let scratch = Scratch::new();
    let target = scratch.work().join("edited.txt");
    let old = lines("old");
    let new = lines("new");
    let batch = scratch.dir.path().join("batch.json");
    std::fs::write(
        &batch,
        json!([
            {"tool": "Read", "input": {"file_path": target, "limit": 1}},
            {"tool": "Edit", "input": {"file_path": target, "old_string": "old line", "new_string": "new line", "replace_all": true}},
        ])
        .to_string(),
    )
    .unwrap();
    let killed = kill_at_spread_moments(
        &scratch,
        &cache_dir(),
        &["--mode", "accept-edits", "run", batch.to_str().unwrap()],
        || std::fs::write(&target, &old).unwrap(),
        |i| {
            let now = std::fs::read_to_string(&target).expect("the target is still there");
            assert!(now == old || now == new, "kill {i}: the file is neither the old nor the new bytes");
            assert_eq!(strays(&scratch.work(), &["edited.txt"]), Vec::<String>::new());
        },
    );
    assert!(killed > 0, "no run was killed before it finished");
}

#[test]
fn a_task_update_killed_midway_leaves_a_session_that_loads() {
    let scratch = Scratch::new();
    let cache = cache_dir();
    // A large session, so that saving it takes a while.
    let description = "d".repeat(100_000);
    for subject in ["a", "b", "c"] {
        let input = json!({"subject": subject, "description": description}).to_string();
        let out = scratch.cli(&["call", "--session", "s", "TaskCreate", &input]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut round = 0;
    let args = ["call", "--session", "s", "TaskUpdate", r#"{"task_id": "2", "subject": "renamed"}"#];
    let killed = kill_at_spread_moments(
        &scratch,
        &cache,
        &args,
        || {
            round += 1;
        },
        |i| {
            let out = scratch.cli(&["call", "--json", "--session", "s", "TaskGet", r#"{"task_id": "3"}"#]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "kill {i}: the session does not load: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(text.contains(&description[..1000]), "kill {i}: task 3 lost its description");
        },
    );
    let files: Vec<String> = std::fs::read_dir(scratch.cli_sessions())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "s.json" && n != "s.json.lock" && !n.contains(".tmp"))
        .collect();
    assert_eq!(files, Vec::<String>::new(), "only the session, its lock and temporaries of killed saves are there");
    assert!(killed > 0, "no run was killed before it finished (of {round})");
}

#[test]
fn a_session_a_running_serve_holds_is_refused_to_another_process_until_it_ends() {
    let scratch = Scratch::new();
    let create = |subject: &str| {
        let input = json!({"subject": subject, "description": "d"}).to_string();
        scratch.cli(&["call", "--session", "s", "TaskCreate", &input])
    };
    let out = create("before the server");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file = scratch.cli_sessions().join("s.json");
    let saved = std::fs::read(&file).unwrap();

    let server = toolhost_e2e::mcp::HttpServer::start(&scratch, &["--session", "s"]);
    let out = create("while the server holds it");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second process took the session: {stderr}");
    let holder = format!("session s is in use by toolhost pid {}", server.pid());
    assert!(stderr.contains(&holder) && stderr.contains("use another session name"), "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), saved, "the refused call wrote the session");
    // Reading is not holding: listing the session's tools still works.
    let out = scratch.cli(&["list", "--session", "s"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    drop(server); // killed: the kernel releases its hold
    let out = create("after the server");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = scratch.cli(&["call", "--session", "s", "TaskList", "{}"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("before the server") && text.contains("after the server"), "{text}");
    assert!(!text.contains("while the server holds it"), "{text}");
}

#[test]
fn a_compile_cache_store_killed_midway_leaves_a_cache_that_loads() {
    let scratch = Scratch::new();
    let cache = scratch.dir.path().join("cache");
    let echo = guest("echo").display().to_string();
    let args = ["--no-builtins", "--plugin", &echo, "call", "Echo", r#"{"text": "still here"}"#];
    // Every run starts on an empty cache (baseline and optimised code), so
    // each compiles and stores.
    let clear = || {
        let _ = std::fs::remove_dir_all(&cache);
    };
    let killed = kill_at_spread_moments(&scratch, &cache, &args, clear, |i| {
        // The next run over whatever the killed one left must work.
        let out = Command::new(toolhost_bin())
            .current_dir(scratch.work())
            .arg("--cache-dir")
            .arg(&cache)
            .args(args)
            .env("HOME", scratch.dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "kill {i}: the next run fails: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "still here");
    });
    assert!(killed > 0, "no run was killed before it finished");
}

// ---- a full disk -------------------------------------------------------

/// A tmpfs mounted for one test, unmounted when dropped (also when the test
/// fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it) on `dir`.
    /// `None` when this process may not mount (not root): the test skips,
    /// except under `CI=true`, where it fails.
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir).output();
        match out {
            Ok(o) if o.status.success() => Some(Self(dir.to_path_buf())),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                    Err(e) => e.to_string(),
                };
                assert!(
                    std::env::var("CI").is_err(),
                    "cannot mount a tmpfs for the disk-full tests (root is needed): {why}"
                );
                eprintln!("skipped: cannot mount a tmpfs ({why})");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_working_directory_fails_the_write_keeps_the_old_file_and_keeps_serving() {
    let scratch = Scratch::new();
    let Some(_disk) = Tmpfs::mount(&scratch.work(), "256k") else { return };
    let work = scratch.work();
    let file = work.join("keep.txt");
    std::fs::write(&file, "the old bytes\n").unwrap();
    let mut settings = scratch.settings();
    settings.permissions.mode = Mode::AcceptEdits;
    let host = scratch.host(settings).await;
    let read = |host: &Toolhost| {
        let host = host.clone();
        let file = file.clone();
        async move { call(&host, "Read", json!({"file_path": file}), PermissionAnswer::Deny).await }
    };
    assert_eq!(read(&host).await.state, toolhost::response::ResultState::Success);

    let big = "x".repeat(1 << 20);
    let r = call(&host, "Write", json!({"file_path": file, "content": big}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, toolhost::response::ResultState::Error, "{}", r.text());
    assert!(r.text().contains("No space left on device"), "the error names the cause: {}", r.text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "the old bytes\n", "the old file is intact");
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("keep.txt")], "no half-written temporary is left");

    // The host keeps serving: a write that fits goes through.
    let r = read(&host).await;
    assert_eq!(r.state, toolhost::response::ResultState::Success, "{}", r.text());
    let r =
        call(&host, "Write", json!({"file_path": file, "content": "the new bytes\n"}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, toolhost::response::ResultState::Success, "{}", r.text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "the new bytes\n");
}

#[tokio::test]
async fn a_full_state_folder_fails_the_change_and_keeps_the_old_session() {
    let scratch = Scratch::new();
    let dir = scratch.dir.path().join("sessions");
    let Some(_disk) = Tmpfs::mount(&dir, "256k") else { return };
    let path = dir.join("s.json");
    let key = StateKey::named("s").unwrap();
    let store = Arc::new(FileStore::new(&dir));
    let state = AgentState::open(store.clone(), key.clone()).await.expect("a new session");
    state.set("small", json!("kept"), StateBounds::NONE).await.expect("a small session fits");
    let saved = std::fs::read(&path).unwrap();

    let err = state.set("big", json!("y".repeat(400_000)), StateBounds::NONE).await.expect_err("the disk is full");
    let err = err.to_string();
    assert!(err.contains("No space left on device") && err.contains("previous state is kept"), "{err}");
    assert_eq!(state.get("big").await.unwrap(), None, "a change that was not saved is not kept");
    assert_eq!(std::fs::read(&path).unwrap(), saved, "the old session file is intact");
    let mut left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["s.json", "s.json.lock"].map(std::ffi::OsString::from), "no half-written temporary is left");
    drop((state, store));
    let reopened = AgentState::open(Arc::new(FileStore::new(&dir)), key).await.expect("the old session loads");
    assert_eq!(reopened.get("small").await.unwrap(), Some(json!("kept")));
}

// ---- a plugin rewritten while it loads -----------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_rewritten_while_hosts_load_it_loads_whole_or_fails_clearly() {
    let scratch = Scratch::new();
    let bytes = std::fs::read(guest("echo")).unwrap();
    let plugin = scratch.dir.path().join("echo.wasm");
    std::fs::write(&plugin, &bytes).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Rewrites the file in place, over and over: truncated, then half,
    // then whole (what a copy onto a running plugin does).
    let writer = {
        let (plugin, bytes, stop) = (plugin.clone(), bytes.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::write(&plugin, b"").unwrap();
                std::fs::write(&plugin, &bytes[..bytes.len() / 2]).unwrap();
                std::fs::write(&plugin, &bytes).unwrap();
            }
        })
    };
    let (mut loaded, mut refused) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while (loaded < 3 || refused < 3) && Instant::now() < deadline {
        let mut settings = scratch.settings();
        settings.builtins = false;
        settings.plugins.push(plugin.clone());
        match Toolhost::builder().settings(settings, None).build().await {
            Ok(host) => {
                let r = call(&host, "Echo", json!({"text": "whole"}), PermissionAnswer::Deny).await;
                if r.text() == "whole" {
                    loaded += 1;
                } else {
                    // Loaded lazily from a file cut short: refused, clearly.
                    assert_eq!(r.state, toolhost::response::ResultState::Error, "{}", r.text());
                    assert!(r.text().contains("Echo") || r.text().contains("echo.wasm"), "{}", r.text());
                    refused += 1;
                }
            }
            Err(e) => {
                assert_clear(&format!("{e:#}"));
                refused += 1;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    println!("loaded {loaded} times, refused {refused} times");
    assert!(loaded + refused > 0);
}

fn assert_clear(message: &str) {
    assert!(message.contains("echo.wasm"), "a refused load names the file: {message}");
}

// ---- a working directory deleted under a running call --------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_working_directory_deleted_while_a_call_runs_gives_clear_errors_and_the_host_recovers() {
    let scratch = Scratch::new();
    let work = scratch.work();
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    let mut settings = scratch.settings();
    settings.permissions.allow.push("Bash".into());
    let host = scratch.host(settings).await;

    let running = {
        let host = host.clone();
        tokio::spawn(async move {
            let input = json!({"command": "sleep 1; cat a.txt; echo done"}).to_string();
            host.call(CallRequest::new("Bash", input)).finish(PermissionAnswer::Deny).await.into_response()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::remove_dir_all(&work).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), running).await.expect("the call ends").unwrap();
    println!("the running call: {:?} {}", r.state, r.text());
    assert!(!r.text().lines().any(|l| l == "a"), "the deleted file cannot have been read: {}", r.text());

    let r = call(&host, "Read", json!({"file_path": work.join("a.txt")}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, toolhost::response::ResultState::Error);
    assert!(r.text().contains("does not exist"), "a clear error: {}", r.text());
    let r = call(&host, "Glob", json!({"pattern": "*.txt"}), PermissionAnswer::Deny).await;
    assert!(r.state == toolhost::response::ResultState::Error || r.text().contains("No files found"), "{}", r.text());

    // Put back, the folder serves again.
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("a.txt"), "back\n").unwrap();
    let r = call(&host, "Read", json!({"file_path": work.join("a.txt")}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, toolhost::response::ResultState::Success, "{}", r.text());
    assert!(r.text().contains("back"));
}

// ---- a working directory made unreadable under a running call ------------

/// `toolhost serve` on stdio, run as `nobody` with no capabilities (root
/// ignores permission bits), spoken to with raw JSON-RPC lines.
struct Unprivileged {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Unprivileged {
    /// Starts `toolhost <args> serve` in `scratch` (its folder given to
    /// `nobody`) and initializes the MCP session.
    fn start(scratch: &Scratch, args: &[&str]) -> Self {
        let nobody = "65534";
        let status = Command::new("chown").args(["-R", &format!("{nobody}:{nobody}")]).arg(scratch.dir.path()).status();
        assert!(status.is_ok_and(|s| s.success()), "chown of the scratch folder to nobody failed (root is needed)");
        let log = std::fs::File::create(scratch.outside("serve.log")).unwrap();
        let mut child = Command::new("setpriv")
            .args([&format!("--reuid={nobody}"), &format!("--regid={nobody}"), "--clear-groups"])
            .args(["--inh-caps=-all", "--bounding-set=-all", "--"])
            .arg(toolhost_bin())
            .arg("--cache-dir")
            .arg(cache_dir())
            .args(args)
            .arg("serve")
            .current_dir(scratch.work())
            .env("HOME", scratch.dir.path())
            .env_remove("XDG_STATE_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("setpriv (util-linux) runs toolhost as nobody; CI must have it");
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut server = Unprivileged { child, stdout, next_id: 1 };
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "faults", "version": "0"}});
        server.request("initialize", init);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap_or_default();
        let effective = status.lines().find(|l| l.starts_with("CapEff:")).unwrap_or_default().to_string();
        assert!(effective.ends_with("0000000000000000"), "toolhost still holds capabilities: {effective}");
        server
    }

    fn send(&mut self, message: &serde_json::Value) {
        use std::io::Write as _;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").and_then(|()| stdin.flush()).expect("writing to toolhost serve");
    }

    /// Sends a request and returns its result, skipping notifications.
    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        use std::io::BufRead as _;
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("reading toolhost serve");
            assert!(n > 0, "toolhost serve exited while {method} was pending");
            let message: serde_json::Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// Calls `tool`; whether the result is an error, and its text.
    fn call(&mut self, tool: &str, arguments: serde_json::Value) -> (bool, String) {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let text = result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
        (result["isError"] == true, text)
    }
}

impl Drop for Unprivileged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (at most a minute) until `path` exists.
fn wait_for_file(path: &Path) {
    let until = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < until, "{} did not appear", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_working_directory_made_unreadable_while_a_call_runs_gives_clear_errors_and_the_host_recovers() {
    let scratch = Scratch::new();
    let work = scratch.work();
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    let flags = scratch.outside("flags");
    std::fs::create_dir(&flags).unwrap();
    // The built-ins this test uses are compiled into the shared cache as
    // root first; `nobody` may read it, not write it.
    for (tool, input) in [("Read", json!({"file_path": work.join("a.txt")})), ("Glob", json!({"pattern": "*.txt"}))] {
        let out = scratch.cli(&["call", tool, &input.to_string()]);
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = scratch.cli(&["--allow", "Bash", "call", "Bash", r#"{"command":"true"}"#]);
    assert!(out.status.success(), "Bash: {}", String::from_utf8_lossy(&out.stderr));
    let mut server = Unprivileged::start(&scratch, &["--mode", "bypass"]);

    // A long call: it waits for the test, then lists and reads its
    // working directory, which the test has made unreadable meanwhile.
    let command = format!(
        "touch {f}/started; while [ ! -e {f}/go ]; do sleep 0.05; done; ls; cat a.txt; echo ended",
        f = flags.display()
    );
    let running = std::thread::scope(|s| {
        let call = s.spawn(|| server.call("Bash", json!({"command": command})));
        wait_for_file(&flags.join("started"));
        chmod(&work, 0o000);
        std::fs::write(flags.join("go"), "").unwrap();
        call.join().unwrap()
    });
    println!("the running call: {running:?}");
    assert!(running.1.contains("Permission denied") && running.1.contains("ended"), "{running:?}");
    assert!(!running.1.lines().any(|l| l == "a"), "the file was read through a folder mode 000: {running:?}");

    // Later calls fail, each naming the folder (or the file in it) and the
    // cause; none hangs, and the host stays up.
    let dir = work.display().to_string();
    for (tool, input) in [
        ("Read", json!({"file_path": work.join("a.txt")})),
        ("Glob", json!({"pattern": "*.txt"})),
        ("Grep", json!({"pattern": "a"})),
        ("Write", json!({"file_path": work.join("b.txt"), "content": "b"})),
        ("Bash", json!({"command": "ls"})),
    ] {
        let (error, text) = server.call(tool, input);
        println!("{tool} with the folder unreadable: {text}");
        assert!(error, "{tool} succeeded in a folder of mode 000: {text}");
        assert!(text.contains(&dir) && text.to_lowercase().contains("permission denied"), "{tool}: {text}");
        assert!(!text.contains("executable"), "{tool}: blamed on the program: {text}");
    }

    // Readable again, the same host serves every call.
    chmod(&work, 0o755);
    let (error, text) = server.call("Read", json!({"file_path": work.join("a.txt")}));
    assert!(!error && text.contains('a'), "{text}");
    let (error, text) = server.call("Glob", json!({"pattern": "*.txt"}));
    assert!(!error && text.contains("a.txt"), "{text}");
    let (error, text) = server.call("Bash", json!({"command": "ls; cat a.txt"}));
    assert!(!error && text.contains("a.txt"), "{text}");
    assert!(!work.join("b.txt").exists(), "a write went through a folder of mode 000");
}
