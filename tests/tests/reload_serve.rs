//! Hot reload in a running `toolhost serve --watch`, driven by real MCP
//! clients (the Python SDK, through `tests/mcp/reload_client.py`) while the
//! plugin file in the watched folder is replaced under them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_e2e::mcp::HttpServer;
use toolhost_e2e::{Scratch, guest, mcp_python, root};

/// A scratch dir with `plugins/swap.wasm` = `first`.
fn plugins_with(first: &str) -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let plugins = scratch.dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(guest(first), plugins.join("swap.wasm")).unwrap();
    (scratch, plugins)
}

/// Puts `component` at `dir/file`: written beside, then renamed in.
fn put(dir: &Path, file: &str, component: &str) {
    let tmp = dir.parent().unwrap().join(format!(".{file}.part"));
    std::fs::copy(guest(component), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join(file)).unwrap();
}

/// Runs `clients` MCP clients calling `tool` for `seconds`.
fn clients(python: &Path, url: &str, clients: usize, seconds: f64, tool: &str, args: &Value) -> std::process::Child {
    Command::new(python)
        .arg(root().join("tests/mcp/reload_client.py"))
        .args([url, &clients.to_string(), &seconds.to_string(), tool, &args.to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("running the Python MCP clients")
}

fn results(child: std::process::Child) -> Value {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the MCP clients failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).expect("the clients print JSON")
}

#[test]
fn calls_from_several_clients_all_succeed_while_the_file_is_replaced_many_times() {
    let Some(py) = mcp_python() else { return };
    let (scratch, plugins) = plugins_with("swap-v2");
    let dir = plugins.display().to_string();
    let server = HttpServer::start_with(
        &scratch,
        &["--no-builtins", "--mode", "bypass", "--plugins", &dir, "--grant", "Swap=fs-read"],
        &["--watch"],
    );
    let running = clients(py, &server.url, 3, 8.0, "Swap", &serde_json::json!({}));
    std::thread::sleep(Duration::from_millis(1500));
    let start = Instant::now();
    let mut replaced = 0;
    while start.elapsed() < Duration::from_secs(5) {
        put(&plugins, "swap.wasm", if replaced % 2 == 0 { "swap-v1" } else { "swap-v2" });
        replaced += 1;
        std::thread::sleep(Duration::from_millis(150));
    }
    let out = results(running);
    let results = out["results"].as_array().unwrap();
    assert!(results.len() > 30, "only {} calls ran", results.len());
    let (mut v1, mut v2) = (0, 0);
    for r in results {
        assert_eq!(r["is_error"], false, "a call failed during the reloads: {r}");
        match r["text"].as_str().unwrap() {
            "v1 v1 v1 " => v1 += 1,
            "v2 v2 v2 " => v2 += 1,
            other => panic!("a result from no one whole version: {other:?}"),
        }
    }
    assert!(v1 > 0 && v2 > 0, "both versions served ({v1} v1, {v2} v2) over {replaced} replacements");
}

#[test]
fn inspect_old_new_prints_the_capability_diff() {
    let scratch = Scratch::new();
    let (v1, v2) = (guest("swap-v1").display().to_string(), guest("swap-v2").display().to_string());
    let out = scratch.cli(&["inspect", &v1, &v2]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("+ read /") && stdout.contains("+ write /"), "{stdout}");
    assert!(stdout.contains("--grant Swap=fs-read:/ --grant Swap=fs-write:/"), "{stdout}");
    let out = scratch.cli(&["inspect", &v2, &v1, "--json"]);
    let diff: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(diff["asks_for_more"], false);
    assert_eq!(
        diff["removed"],
        serde_json::json!([{"capability": "fs_read", "root": "/"}, {"capability": "fs_write", "root": "/"}])
    );
}

/// `toolhost status` of a watching serve, until `ready` holds for its JSON.
fn status_until(scratch: &Scratch, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let out = scratch.cli(&["status", "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
        if ready(&reports) {
            return reports;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "timed out waiting until {what}: {reports}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A served plugin's new version asks for more than it had: the MCP
/// clients keep getting the old version, a canary outside the working
/// directory (in a folder the settings would let it write) keeps its
/// content, and `toolhost status` shows the loaded file, hash, grants and
/// the held-back diff.
#[test]
fn serve_holds_back_a_version_that_asks_for_more_and_status_shows_why() {
    let Some(py) = mcp_python() else { return };
    let (scratch, plugins) = plugins_with("swap-v1");
    let outside = scratch.outside("canaries");
    std::fs::create_dir(&outside).unwrap();
    let canary = outside.join("canary.txt");
    std::fs::write(&canary, "canary").unwrap();
    let grant = format!("Swap=fs-write:{}", outside.display());
    let dir = plugins.display().to_string();
    let server = HttpServer::start_with(
        &scratch,
        &["--no-builtins", "--mode", "bypass", "--plugins", &dir, "--grant", &grant],
        &["--watch"],
    );
    let pid = server.pid();
    let file = plugins.join("swap.wasm").display().to_string();
    let of_file = |reports: &Value| -> Option<Value> {
        reports.as_array()?.iter().find(|r| r["pid"] == pid)?["files"]
            .as_array()?
            .iter()
            .find(|f| f["file"] == file.as_str())
            .cloned()
    };
    let first = status_until(&scratch, "the serve reports", |r| of_file(r).is_some());
    let first = of_file(&first).unwrap();
    assert_eq!((first["name"].as_str(), first["grants"].as_str()), (Some("Swap"), Some("nothing")), "{first}");
    let v1_sha = first["sha256"].as_str().unwrap().to_string();

    put(&plugins, "swap.wasm", "swap-v2");
    let held = status_until(&scratch, "v2 is held back", |r| of_file(r).is_some_and(|f| !f["last_error"].is_null()));
    let held = of_file(&held).unwrap();
    let error = held["last_error"].as_str().unwrap();
    assert!(error.contains("held back") && error.contains("+ write /"), "{error}");
    assert_eq!(held["sha256"], v1_sha.as_str(), "v1 is still what is loaded");

    let args = serde_json::json!({"canary": canary.display().to_string()});
    let out = results(clients(py, &server.url, 2, 1.0, "Swap", &args));
    for r in out["results"].as_array().unwrap() {
        assert_eq!((r["is_error"].as_bool(), r["text"].as_str()), (Some(false), Some("v1 v1 v1 ")), "{r}");
    }
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "canary", "the held-back version got nothing");

    let out = scratch.cli(&["status"]);
    let (stdout, _) = toolhost_e2e::text(&out);
    assert!(stdout.contains(&format!("pid {pid}")) && stdout.contains(&v1_sha), "{stdout}");
    assert!(stdout.contains("last reload error") && stdout.contains("held back"), "{stdout}");
}

/// A locked serve given a plugin that is not pinned: it does not load (an
/// MCP client's call of it finds no such tool), and `status` says why.
#[test]
fn a_locked_serve_refuses_an_unknown_plugin() {
    let Some(py) = mcp_python() else { return };
    let (scratch, plugins) = plugins_with("swap-v1");
    let dir = plugins.display().to_string();
    let out = scratch.cli(&["--plugins", &dir, "lock"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let server = HttpServer::start_with(&scratch, &["--no-builtins", "--locked", "--plugins", &dir], &["--watch"]);
    put(&plugins, "echo.wasm", "echo");
    let pid = server.pid();
    let echo = plugins.join("echo.wasm").display().to_string();
    let reports = status_until(&scratch, "echo is refused", |r| {
        r.as_array().is_some_and(|all| {
            all.iter().filter(|r| r["pid"] == pid).flat_map(|r| r["files"].as_array().cloned().unwrap_or_default()).any(
                |f| {
                    f["file"] == echo.as_str()
                        && f["last_error"].as_str().is_some_and(|e| e.contains("not in the lock file"))
                },
            )
        })
    });
    let files = &reports.as_array().unwrap().iter().find(|r| r["pid"] == pid).unwrap()["files"];
    let echo_status = files.as_array().unwrap().iter().find(|f| f["file"] == echo.as_str()).unwrap();
    assert!(echo_status["name"].is_null(), "nothing is loaded from it: {echo_status}");
    let out = results(clients(py, &server.url, 1, 0.5, "Echo", &serde_json::json!({"text": "hi"})));
    for r in out["results"].as_array().unwrap() {
        assert_eq!(r["is_error"], true, "{r}");
        assert!(r["text"].as_str().unwrap().contains("Unknown tool 'Echo'"), "{r}");
    }
    let out = results(clients(py, &server.url, 1, 0.5, "Swap", &serde_json::json!({})));
    assert!(out["results"].as_array().unwrap().iter().all(|r| r["text"] == "v1 v1 v1 "), "{out}");
}

/// A 2025-11-25 MCP client of `server` that sets its log level `level`
/// and collects one log message (waiting `seconds` at most); returned once
/// it is listening.
fn log_listener(py: &Path, scratch: &Scratch, server: &HttpServer, level: &str, seconds: u64) -> std::process::Child {
    let ready = scratch.dir.path().join(format!("ready-{level}"));
    let params =
        serde_json::json!({"level": level, "ready": ready.display().to_string(), "count": 1, "seconds": seconds});
    let child =
        toolhost_e2e::mcp::client_command(py, scratch, &server.transport(None), "legacy", "log_messages", &params)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("running the Python MCP client");
    let start = Instant::now();
    while !ready.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "the client did not connect");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// A broken update reaches the MCP clients of 2025-11-25 as a log message
/// (level `error`, logger `toolhost.reload`) naming the file and saying the
/// previous version serves; a client whose level is above `error` is sent
/// nothing.
#[test]
fn a_broken_update_is_sent_to_mcp_clients_as_a_log_message() {
    let Some(py) = mcp_python() else { return };
    let (scratch, plugins) = plugins_with("swap-v1");
    let dir = plugins.display().to_string();
    let server = HttpServer::start_with(&scratch, &["--no-builtins", "--plugins", &dir], &["--watch"]);
    // The `critical` client listens for longer than the error takes to come.
    let at_error = log_listener(py, &scratch, &server, "error", 30);
    let at_critical = log_listener(py, &scratch, &server, "critical", 10);

    // Not a component at all: reported once it has stood for the settle time.
    let tmp = scratch.dir.path().join(".swap.part");
    std::fs::write(&tmp, b"not a component").unwrap();
    std::fs::rename(&tmp, plugins.join("swap.wasm")).unwrap();

    let got = results(at_error);
    let messages = got["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1, "{got}");
    let message = &messages[0];
    assert_eq!(
        (message["level"].as_str(), message["logger"].as_str()),
        (Some("error"), Some("toolhost.reload")),
        "{got}"
    );
    let data = &message["data"];
    assert_eq!(data["file"], plugins.join("swap.wasm").display().to_string().as_str(), "{got}");
    assert_eq!(
        (data["name"].as_str(), data["serving"].as_str()),
        (Some("Swap"), Some("the previous version keeps serving"))
    );
    assert!(!data["error"].as_str().unwrap_or_default().is_empty(), "{got}");
    assert_eq!(results(at_critical)["messages"], serde_json::json!([]), "a client at `critical` is sent no error");
    drop(server);
}

/// Issue 29, item 8: a file name is whoever made the file's text. A broken
/// plugin named with bidi controls, C1, DEL, ESC and a zero-width space
/// reaches an MCP client's log message and `toolhost status` escaped.
#[test]
fn a_hostile_file_name_reaches_log_messages_and_status_escaped() {
    use toolhost_e2e::shown::{HOSTILE, RAW, assert_escaped};
    let Some(py) = mcp_python() else { return };
    let (scratch, plugins) = plugins_with("swap-v1");
    let dir = plugins.display().to_string();
    let server = HttpServer::start_with(&scratch, &["--no-builtins", "--plugins", &dir], &["--watch"]);
    let listening = log_listener(py, &scratch, &server, "error", 60);
    let tmp = scratch.dir.path().join(".evil.part");
    std::fs::write(&tmp, b"not a component").unwrap();
    std::fs::rename(&tmp, plugins.join(format!("evil{HOSTILE}.wasm"))).unwrap();

    let got = results(listening);
    let data = &got["messages"][0]["data"];
    assert_escaped(data["file"].as_str().unwrap_or_default(), "the log message's file");
    let error = data["error"].as_str().unwrap_or_default();
    assert!(!error.is_empty() && !RAW.iter().any(|c| error.contains(*c)), "{error:?}");

    status_until(&scratch, "the broken file is reported", |reports| {
        let files = reports.as_array().into_iter().flatten().flat_map(|r| r["files"].as_array().into_iter().flatten());
        files.into_iter().any(|f| f["file"].as_str().is_some_and(|p| p.contains("evil")) && !f["last_error"].is_null())
    });
    let out = scratch.cli(&["status"]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(out.status.success() && stdout.contains("last reload error"), "{stdout}{stderr}");
    assert_escaped(&stdout, "toolhost status");
    drop(server);
}
