//! The audit log (issue #17): one JSON line per call with the decision,
//! the host operations and the outcome; redacted inputs; size rotation; a
//! writer that never blocks a call and counts what it drops; a log no tool
//! can touch or forge; and `toolhost audit replay` after real settings
//! changes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::PermissionAnswer;
use toolhost::permission::Mode;
use toolhost::{CallRequest, Toolhost};
use toolhost_e2e::{Scratch, call, guest, text};

/// Every line of the log files, parsed; each must be one JSON object.
fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON record per line ({e}): {l:?}")))
        .collect()
}

fn calls(records: &[Value]) -> Vec<&Value> {
    records.iter().filter(|r| r["kind"] == "call").collect()
}

/// A host over `settings` with its audit log at `log`.
async fn audited(scratch: &Scratch, mut settings: toolhost::settings::Settings, log: &Path) -> Toolhost {
    settings.audit.path = Some(log.to_path_buf());
    scratch.host(settings).await
}

/// Writes what is queued and stops the writer.
fn close(host: &Toolhost) {
    host.audit_log().expect("the host has an audit log").close();
}

fn sha256_of(file: &Path) -> String {
    let out = std::process::Command::new("sha256sum").arg(file).output().expect("running sha256sum");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().expect("a digest").to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_call_is_one_line_with_its_decision_host_operations_and_outcome() {
    let scratch = Scratch::new();
    let log = scratch.outside("audit.jsonl");
    let mut settings = scratch.settings();
    settings.permissions.allow = vec!["Bash(touch:*)".into()];
    settings.permissions.deny = vec!["Bash(rm:*)".into()];
    settings.plugins.push(guest("input-echo"));
    let host = audited(&scratch, settings, &log).await;
    let work = scratch.work();
    let file = work.join("notes.txt");

    let written = host
        .call(
            CallRequest::new("Write", json!({"file_path": file, "content": "hello"}).to_string())
                .mode(Mode::AcceptEdits),
        )
        .finish(PermissionAnswer::Deny)
        .await
        .into_response();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello", "{}", written.text());
    let echoed =
        call(&host, "Bash", json!({"command": "touch made.txt && echo token=abc123 done"}), PermissionAnswer::Deny)
            .await;
    assert!(echoed.text().contains("token=abc123"), "the tool still sees its input: {}", echoed.text());
    let denied = call(&host, "Bash", json!({"command": "rm -rf build"}), PermissionAnswer::Deny).await;
    assert_eq!(denied.state, toolhost::response::ResultState::Denied);
    call(&host, "InputEcho", json!({"text": "hi"}), PermissionAnswer::Deny).await;
    close(&host);

    let records = lines(&log);
    let calls = calls(&records);
    assert_eq!(calls.len(), 4, "{records:#?}");

    let write = calls[0];
    assert_eq!(write["tool"], "Write");
    assert_eq!(write["mode"], "accept_edits");
    let builtin = toolhost::builtin::BUILTINS.iter().find(|b| b.name == "Write").unwrap();
    assert_eq!(write["plugin_sha256"], builtin.sha256, "built-ins are hashed too");
    assert_eq!(write["decision"]["behavior"], "allow");
    assert_eq!(write["outcome"], "success");
    let ops = write["ops"].as_array().unwrap();
    let path = file.display().to_string();
    assert!(ops.iter().any(|op| op["op"] == "write" && op["path"] == path.as_str() && op["ok"] == true), "{ops:?}");
    assert!(write["time"].as_str().unwrap().ends_with('Z'));
    assert!(write["duration_us"].as_u64().unwrap() > 0);

    let bash = calls[1];
    assert_eq!(bash["decision"]["step"], "allow_rule");
    assert_eq!(bash["decision"]["rule"], "Bash(touch:*)");
    assert!(work.join("made.txt").exists());
    assert_eq!(bash["input"]["command"], "touch made.txt && echo token=[REDACTED] done", "the input is redacted");
    assert!(!serde_json::to_string(bash).unwrap().contains("abc123"), "the secret is nowhere in the record");
    let spawn = bash["ops"].as_array().unwrap().iter().find(|op| op["op"] == "spawn").expect("the process is logged");
    let argv: Vec<&str> = spawn["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(
        argv.iter().any(|a| a.contains("echo token=[REDACTED] done")),
        "the command line as run, redacted: {argv:?}"
    );
    assert!(bash["output_bytes"].as_u64().unwrap() >= "token=abc123 done".len() as u64);

    let rm = calls[2];
    assert_eq!(rm["decision"]["behavior"], "deny");
    assert_eq!(rm["decision"]["step"], "deny_rule");
    assert_eq!(rm["decision"]["rule"], "Bash(rm:*)");
    assert_eq!(rm["outcome"], "denied");
    assert_eq!(rm["ops"], json!([]), "a denied call starts nothing");

    let plugin = calls[3];
    assert_eq!(plugin["plugin_sha256"], sha256_of(&guest("input-echo")), "the plugin's SHA-256 is that of its file");
    assert_eq!(plugin["decision"]["step"], "read_only");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_cannot_forge_or_break_a_line() {
    let scratch = Scratch::new();
    let log = scratch.outside("audit.jsonl");
    let mut settings = scratch.settings();
    settings.plugins.push(guest("input-echo"));
    let host = audited(&scratch, settings, &log).await;
    let forged = "x\n{\"kind\":\"call\",\"tool\":\"Forged\"}\r\n\u{2028}\u{0}\"}";
    for _ in 0..3 {
        let r = call(&host, "InputEcho", json!({"text": forged, "mode": forged}), PermissionAnswer::Deny).await;
        assert!(r.text().contains("Forged"), "the tool echoed the forgery: {}", r.text());
    }
    close(&host);
    let records = lines(&log);
    assert_eq!(records.len(), 3, "three calls, three lines: {records:#?}");
    for r in &records {
        assert_eq!(r["tool"], "InputEcho");
        assert_eq!(r["input"]["text"], forged, "the input is kept whole, escaped");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tool_can_read_write_or_remove_the_audit_log() {
    let scratch = Scratch::new();
    // In the working directory, where the tools do have access.
    let log = scratch.work().join("audit.jsonl");
    let mut settings = scratch.settings();
    settings.audit.keep = 2;
    settings.plugins.push(guest("settings-writer"));
    let grant = toolhost::capability::Policy {
        fs_read: vec!["$WORKDIRS".into()],
        fs_write: vec!["$WORKDIRS".into()],
        ..Default::default()
    };
    settings.grants.insert("SettingsWriter".into(), grant);
    settings.permissions.mode = Mode::Bypass;
    let host = audited(&scratch, settings, &log).await;
    // A first record, so the file exists.
    call(&host, "Glob", json!({"pattern": "*"}), PermissionAnswer::Deny).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let rotated = PathBuf::from(format!("{}.1", log.display()));
    for target in [&log, &rotated] {
        let t = target.display().to_string();
        for action in ["write", "read", "remove"] {
            let r = call(
                &host,
                "SettingsWriter",
                json!({"action": action, "target": t, "content": "{\"forged\":1}\n"}),
                PermissionAnswer::Deny,
            )
            .await;
            assert!(!r.text().starts_with("written") && !r.text().contains("\"kind\""), "{action} {t}: {}", r.text());
        }
    }
    for (tool, input) in [
        ("Write", json!({"file_path": log, "content": "{}\n"})),
        ("Read", json!({"file_path": log})),
        ("Bash", json!({"command": format!("echo '{{}}' >> {}", log.display())})),
    ] {
        let r = call(&host, tool, input, PermissionAnswer::Deny).await;
        assert_eq!(r.state, toolhost::response::ResultState::Denied, "{tool}: {}", r.text());
        assert!(r.text().contains("audit log"), "{tool}: {}", r.text());
    }
    close(&host);
    assert!(!rotated.exists(), "no tool created a rotated file");
    let records = lines(&log);
    assert!(records.iter().all(|r| r["kind"] == "call" && r.get("forged").is_none()), "{records:#?}");
    let denied: Vec<_> = records.iter().filter(|r| r["decision"]["step"] == "protected_path").collect();
    assert_eq!(denied.len(), 3, "the three direct attempts are logged as refused: {records:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stuck_disk_never_blocks_a_call_and_every_dropped_record_is_counted() {
    let scratch = Scratch::new();
    // A FIFO no one reads: the writer blocks opening it, as on a hung disk.
    let log = scratch.outside("audit.fifo");
    let status = std::process::Command::new("mkfifo").arg(&log).status().expect("running mkfifo");
    assert!(status.success());
    let mut settings = scratch.settings();
    settings.builtins = false;
    settings.plugins.push(guest("input-echo"));
    settings.audit.queue = 4;
    let host = audited(&scratch, settings, &log).await;
    let total = 40;
    let calls_done = tokio::time::timeout(Duration::from_secs(60), async {
        for i in 0..total {
            let r = call(&host, "InputEcho", json!({"text": format!("call {i}")}), PermissionAnswer::Deny).await;
            assert!(r.text().contains(&format!("call {i}")));
        }
    })
    .await;
    assert!(calls_done.is_ok(), "calls waited for the stuck audit log");
    let stats = host.audit_log().unwrap().stats();
    assert!(stats.dropped > 0, "a full queue drops: {stats:?}");
    // The disk comes back: read what the writer writes.
    let reader = std::thread::spawn({
        let log = log.clone();
        move || std::fs::read_to_string(&log).expect("reading the FIFO")
    });
    close(&host);
    let written = reader.join().unwrap();
    let records: Vec<Value> = written.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    let kept = records.iter().filter(|r| r["kind"] == "call").count() as u64;
    let dropped: u64 = records.iter().filter(|r| r["kind"] == "dropped").map(|r| r["count"].as_u64().unwrap()).sum();
    assert!(dropped > 0, "the loss is in the log: {records:#?}");
    assert_eq!(kept + dropped, total as u64, "every call is either written or counted as dropped");
    assert_eq!(dropped, host.audit_log().unwrap().stats().dropped);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_log_rotates_by_size_keeping_n_files() {
    let scratch = Scratch::new();
    let log = scratch.outside("audit.jsonl");
    let mut settings = scratch.settings();
    settings.builtins = false;
    settings.plugins.push(guest("input-echo"));
    settings.audit.max_bytes = 2_000;
    settings.audit.keep = 2;
    let host = audited(&scratch, settings, &log).await;
    for i in 0..40 {
        call(&host, "InputEcho", json!({"text": format!("call {i:02}")}), PermissionAnswer::Deny).await;
    }
    close(&host);
    let (one, two, three) =
        (format!("{}.1", log.display()), format!("{}.2", log.display()), format!("{}.3", log.display()));
    assert!(Path::new(&one).exists() && Path::new(&two).exists(), "two rotated files");
    assert!(!Path::new(&three).exists(), "no more than `keep`");
    let mut all = Vec::new();
    for f in [two.as_str(), one.as_str(), &log.display().to_string()] {
        let size = std::fs::metadata(f).unwrap().len();
        assert!(size <= 2_000, "{f} is {size} bytes, over max_bytes");
        all.extend(lines(Path::new(f)));
    }
    let texts: Vec<String> = all.iter().map(|r| r["input"]["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(texts.last().map(String::as_str), Some("call 39"), "the newest record is in the live file");
    let mut sorted = texts.clone();
    sorted.sort();
    assert_eq!(texts, sorted, "the files, oldest first, hold the records in order");
    assert!(texts.len() < 40, "the oldest went with the oldest file");
}

#[test]
fn the_cli_logs_call_and_run_and_replay_reports_each_changed_decision() {
    let scratch = Scratch::new();
    let work = scratch.work();
    let settings = work.join("toolhost.toml");
    std::fs::write(&settings, "[permissions]\nallow = [\"Bash(touch:*)\"]\ndeny = [\"Bash(rm:*)\"]\n").unwrap();
    std::fs::write(work.join("a.txt"), "A").unwrap();
    let log = work.join("audit.jsonl");
    let log_arg = log.display().to_string();

    let out = scratch.cli(&["--audit", &log_arg, "call", "Bash", r#"{"command":"touch b.txt"}"#]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let out = scratch.cli(&["--audit", &log_arg, "call", "Bash", r#"{"command":"rm -f a.txt"}"#]);
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    let batch = json!([{"tool": "Read", "input": {"file_path": work.join("a.txt")}}]).to_string();
    let batch_file = scratch.outside("batch.json");
    std::fs::write(&batch_file, batch).unwrap();
    let out = scratch.cli(&["--audit", &log_arg, "run", &batch_file.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let records = lines(&log);
    assert_eq!(calls(&records).len(), 3, "{records:#?}");
    assert_eq!(records[2]["tool"], "Read");
    assert!(work.join("a.txt").exists());
    // Each `toolhost call` is a process of its own: their calls' ids differ.
    let ids: Vec<&str> = calls(&records)[..2].iter().map(|r| r["call_id"].as_str().unwrap()).collect();
    assert_ne!(ids[0], ids[1], "two processes logged one call id");
    for id in &ids {
        let parts: Vec<&str> = id.split('_').collect();
        assert!(
            parts.len() == 3 && parts[0] == "call" && parts[1].len() == 12 && parts[2] == "1",
            "call_{{12 hex digits}}_{{n}}: {id}"
        );
    }

    // The same settings: nothing changes.
    let out = scratch.cli(&["audit", "replay", &log_arg]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("3 call(s) replayed, 0 changed"), "{stdout}");
    // Replaying wrote no record of its own.
    assert_eq!(lines(&log).len(), 3);

    // A policy change: touch is now denied, rm no longer is (it asks).
    std::fs::write(&settings, "[permissions]\ndeny = [\"Bash(touch:*)\"]\n").unwrap();
    let out = scratch.cli(&["audit", "replay", &log_arg]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("line 1: Bash")
            && stdout.contains("allow (allow_rule Bash(touch:*)) -> deny (deny_rule Bash(touch:*))"),
        "{stdout}"
    );
    assert!(
        stdout.contains("line 2: Bash") && stdout.contains("deny (deny_rule Bash(rm:*)) -> ask (mode_fallback)"),
        "{stdout}"
    );
    assert!(!stdout.contains("line 3"), "Read is still allowed: {stdout}");
    assert!(stdout.contains("3 call(s) replayed, 2 changed"), "{stdout}");

    let out = scratch.cli(&["audit", "replay", "--json", &log_arg]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["changed"].as_array().unwrap().len(), 2);
    assert_eq!(report["changed"][0]["after"]["step"], "deny_rule");

    // A log that is not there is an error that names it.
    let out = scratch.cli(&["audit", "replay", "/nonexistent/audit.jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("reading the audit log"), "{:?}", text(&out));
}

/// Issue 29, item 13: a forged line of an audit log (whoever wrote the file
/// it was copied from) carries terminal escapes in its `rule` and `call_id`
/// — an OSC 8 hyperlink ended by BEL, a one-byte CSI, a right-to-left
/// override, a zero-width space —; `toolhost audit replay` prints every
/// field through the escaper.
#[test]
fn replay_prints_every_field_of_a_forged_line_escaped() {
    use toolhost_e2e::shown::{HOSTILE, assert_escaped};
    let scratch = Scratch::new();
    let work = scratch.work();
    let settings = work.join("toolhost.toml");
    std::fs::write(&settings, "[permissions]\nallow = [\"Bash(touch:*)\"]\n").unwrap();
    let log = work.join("audit.jsonl");
    let out = scratch.cli(&["--audit", &log.display().to_string(), "call", "Bash", r#"{"command":"touch b.txt"}"#]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let mut record = lines(&log).remove(0);
    let rule = format!("Bash(touch:*)\x1b]8;;http://evil.example\x07click\x1b]8;;\x07{HOSTILE}");
    record["decision"]["rule"] = json!(rule);
    record["call_id"] = json!(format!("call_1{HOSTILE}"));
    let forged = scratch.outside("forged.jsonl");
    std::fs::write(&forged, format!("{record}\n")).unwrap();

    // Touch is now denied: the forged call's decision changes and is printed.
    std::fs::write(&settings, "[permissions]\ndeny = [\"Bash(touch:*)\"]\n").unwrap();
    let out = scratch.cli(&["audit", "replay", &forged.display().to_string()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("-> deny (deny_rule Bash(touch:*))"), "{stdout}");
    assert!(!stdout.contains('\x07'), "a raw BEL: {stdout:?}");
    assert!(stdout.contains("\\x1b]8;;http://evil.example\\x07click"), "{stdout:?}");
    assert_escaped(&stdout, "audit replay");
    // The JSON report stays JSON (for machines): the rule as logged.
    let out = scratch.cli(&["audit", "replay", "--json", &forged.display().to_string()]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["changed"][0]["before"]["rule"], rule.as_str());
}

/// The records of `log` once it holds `n` call records (or after 20 s).
fn once_written(log: &Path, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let records = if log.exists() { lines(log) } else { Vec::new() };
        if calls(&records).len() >= n || std::time::Instant::now() > deadline {
            return records;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn toolhost_serve_logs_each_mcp_call() {
    use toolhost_e2e::mcp::{HttpServer, client};
    let Some(py) = toolhost_e2e::mcp_python() else { return };
    let scratch = Scratch::new();
    let log = scratch.outside("serve-audit.jsonl");
    let log_arg = log.display().to_string();
    let server = HttpServer::start_with(&scratch, &["--audit", &log_arg], &[]);
    let args = json!({"command": "touch served.txt"});
    let r = client(
        py,
        &scratch,
        &server.transport(None),
        "auto",
        "call",
        json!({"tool": "Glob", "args": {"pattern": "*"}}),
    );
    assert_eq!(r["is_error"], false, "{r}");
    let r = client(py, &scratch, &server.transport(None), "auto", "call", json!({"tool": "Bash", "args": args}));
    assert_eq!(r["is_error"], true, "no one to ask over MCP without elicitation: {r}");
    // The writer writes as records come; wait for both.
    let records = once_written(&log, 2);
    drop(server);
    let calls = calls(&records);
    assert_eq!(calls.len(), 2, "{records:#?}");
    assert_eq!(calls[0]["tool"], "Glob");
    assert_eq!(calls[0]["decision"]["behavior"], "allow");
    assert!(
        calls[0]["ops"].as_array().unwrap().iter().any(|op| op["op"] == "list" && op["how"] == "walk"),
        "{:?}",
        calls[0]
    );
    assert_eq!(calls[1]["tool"], "Bash");
    assert_eq!(calls[1]["input"]["command"], "touch served.txt");
    assert_ne!(calls[1]["outcome"], "success");
    assert!(!scratch.work().join("served.txt").exists());
}

/// Each record of a `serve` call names its caller: the transport, the
/// protocol version and, for a 2025-11-25 session, a digest of its id, so
/// the log tells clients apart; never the id itself, which lets whoever
/// reads it act in the session. A 2026-07-28 request has no session and
/// says so.
#[test]
fn toolhost_serve_records_which_mcp_session_made_each_call() {
    use sha2::{Digest as _, Sha256};
    use toolhost_e2e::mcp::{HttpServer, raw};
    let scratch = Scratch::new();
    let log = scratch.outside("serve-callers.jsonl");
    let log_arg = log.display().to_string();
    let server = HttpServer::start_with(&scratch, &["--audit", &log_arg], &[]);
    let addr = server.addr();
    let (a, b) = (raw::initialize(&addr), raw::initialize(&addr));
    for session in [&a, &b, &a] {
        let answer = raw::legacy_call(&addr, session, "Glob", json!({"pattern": "*"}));
        let reply = raw::reply(&answer).unwrap_or_else(|| panic!("no reply: {answer}"));
        assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    }
    let (answer, _) = raw::exchange(&addr, &raw::modern_call(&addr, "Glob", json!({"pattern": "*"})));
    assert_eq!(raw::status(&answer), 200, "{answer}");
    let records = once_written(&log, 4);
    drop(server);
    let calls = calls(&records);
    assert_eq!(calls.len(), 4, "{records:#?}");
    let digest = |id: &str| {
        let hash = Sha256::digest(id.as_bytes());
        format!("sha256:{}", hash[..8].iter().map(|b| format!("{b:02x}")).collect::<String>())
    };
    let legacy = |id: &str| json!({"front": "mcp-http", "protocol": raw::LEGACY, "session": digest(id)});
    assert_eq!(calls[0]["caller"], legacy(&a));
    assert_eq!(calls[1]["caller"], legacy(&b));
    assert_eq!(calls[2]["caller"], legacy(&a), "one session, one name");
    assert_ne!(calls[0]["caller"], calls[1]["caller"], "two sessions, two names");
    assert_eq!(calls[3]["caller"], json!({"front": "mcp-http", "protocol": raw::MODERN, "session": null}));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(a.as_str()) && !text.contains(b.as_str()), "a session id is in the log: {text}");
}

/// Issue 29 item 10: in bypass mode `cd LOGDIR && cat ./audit.jsonl` read
/// the log that `cat LOGDIR/audit.jsonl` could not, `>> ./audit.jsonl`
/// forged a record, `rm -f ./audit.jsonl` erased it; in default mode the
/// read was allowed as read-only. The protected check now follows every
/// change of directory a command makes (and denies a relative name of the
/// log after one it cannot read).
#[test]
fn no_command_reaches_the_audit_log_through_a_change_of_directory() {
    let scratch = Scratch::new();
    let logs = scratch.work().join("logs");
    std::fs::create_dir_all(logs.join("sub")).unwrap();
    let log = logs.join("audit.jsonl");
    let log_arg = log.display().to_string();
    let out = scratch.cli(&["--audit", &log_arg, "call", "Bash", r#"{"command":"echo first"}"#]);
    assert!(out.status.success(), "{:?}", text(&out));
    let before = std::fs::read(&log).unwrap();
    let l = logs.display().to_string();
    let home_log = scratch.dir.path().join("audit.jsonl");
    for (mode, command) in [
        ("bypass", format!("cd {l} && cat ./audit.jsonl")),
        ("bypass", format!("cd {l}; echo '{{\"kind\":\"call\",\"forged\":1}}' >> ./audit.jsonl")),
        ("bypass", format!("cd {l} && rm -f ./audit.jsonl")),
        ("bypass", format!("pushd {l} >/dev/null && rm -f audit.jsonl")),
        ("bypass", format!("cd {l}/sub && truncate -s 0 ../audit.jsonl")),
        ("bypass", "cd logs && cd .. && cd logs && rm audit.jsonl".to_string()),
        ("bypass", format!("D={l}; cd \"$D\" && rm -f audit.jsonl")),
        ("bypass", format!("cd {l} && cd /tmp && cd - && rm -f audit.jsonl")),
        ("default", format!("cd {l} && cat ./audit.jsonl")),
        ("default", format!("cd {l} && head audit.jsonl")),
    ] {
        let input = json!({"command": command}).to_string();
        let out = scratch.cli(&["--audit", &log_arg, "--mode", mode, "call", "Bash", &input]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(3), "{mode} `{command}`: {stdout}{stderr}");
        assert!(stderr.contains("audit log"), "{mode} `{command}`: {stdout}{stderr}");
        assert!(!stdout.contains("echo first"), "{mode} `{command}` read the log: {stdout}");
    }
    // `cd` alone goes home: a log there is just as protected.
    let home_arg = home_log.display().to_string();
    let out = scratch.cli(&[
        "--audit",
        &home_arg,
        "--mode",
        "bypass",
        "call",
        "Bash",
        r#"{"command":"cd && rm audit.jsonl"}"#,
    ]);
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    assert!(home_log.exists());
    let records = lines(&log);
    assert!(std::fs::read(&log).unwrap().starts_with(&before), "the log was cut");
    assert!(records.iter().all(|r| r.get("forged").is_none()), "{records:#?}");
    assert_eq!(calls(&records).len(), 11, "the first call and every refusal: {records:#?}");
}

/// Issue 29 item 10: a log removed behind the writer's back (here by a
/// glob no check can read, with the sandbox off) used to take every later
/// record with it: the writer kept writing into the unlinked file. It now
/// notices (device and inode), opens the path again and says so first;
/// the log is created readable by the user alone.
#[test]
fn a_removed_log_is_created_again_and_says_it_was_tampered_with() {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = Scratch::new();
    let logs = scratch.work().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let log = logs.join("audit.jsonl");
    let batch = scratch.outside("batch.json");
    let calls_json = json!([
        {"id": "1", "tool": "Bash", "input": {"command": "echo one"}},
        {"id": "2", "tool": "Bash", "input": {"command": format!("sleep 0.3; rm -f {}/audit.json? && sleep 0.3", logs.display())}},
        {"id": "3", "tool": "Bash", "input": {"command": "echo three"}},
    ]);
    std::fs::write(&batch, calls_json.to_string()).unwrap();
    let out = scratch.cli(&["--audit", &log.display().to_string(), "--mode", "bypass", "run", batch.to_str().unwrap()]);
    assert!(out.status.success(), "{:?}", text(&out));
    assert!(log.exists(), "the log is gone, and every record since with it");
    let records = lines(&log);
    assert_eq!(records[0]["kind"], "tampered", "{records:#?}");
    assert!(records[0]["seen"].as_str().unwrap().contains("removed"), "{records:#?}");
    let ids: Vec<&str> = calls(&records).iter().filter_map(|r| r["call_id"].as_str()).collect();
    assert!(ids.contains(&"3"), "the call after the removal is logged: {records:#?}");
    assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
}

/// Replicas (issue #31): two serving processes are refused one log file, as
/// they would interleave their records and rotate each other's files; the
/// refusal names the holder and says how to give each its own. A one-shot
/// `toolhost call` still writes the log a serving process holds.
#[test]
fn a_second_serving_process_is_refused_the_log_another_one_writes() {
    use toolhost_e2e::mcp::HttpServer;
    let scratch = Scratch::new();
    let log = scratch.outside("held-audit.jsonl");
    let log_arg = log.display().to_string();
    let first = HttpServer::start_with(&scratch, &["--audit", &log_arg], &[]);
    let second = scratch
        .cli_within(&["--audit", &log_arg, "serve", "--http", "127.0.0.1:0"], Duration::from_secs(60))
        .expect("the second serve ends at once");
    let (_, stderr) = text(&second);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("is written by toolhost pid {}", first.pid())), "{stderr}");
    assert!(stderr.contains("held-audit-{replica}.jsonl"), "the fix, with the placeholder: {stderr}");
    let out = scratch.cli(&["--audit", &log_arg, "call", "Glob", r#"{"pattern":"*"}"#]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    drop(first);
    let records = lines(&log);
    assert_eq!(calls(&records).len(), 1, "the one-shot call's record: {records:#?}");
    // With the first one gone, the log is free again.
    let again = HttpServer::start_with(&scratch, &["--audit", &log_arg], &[]);
    drop(again);
}

/// `{replica}` in `[audit] path` gives each replica its file, its records
/// name the replica, and the folder is toolhost's own as a whole: no tool
/// reaches the log of another replica there (forging its records).
#[tokio::test(flavor = "multi_thread")]
async fn each_replica_writes_its_own_log_and_no_tool_reaches_another_replicas() {
    let scratch = Scratch::new();
    // Inside the working directory, where the tools do have access.
    let logs = scratch.work().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let other = logs.join("audit-r2.jsonl");
    std::fs::write(&other, "").unwrap();
    let mut settings = scratch.settings();
    settings.permissions.mode = Mode::Bypass;
    settings.audit.path = Some(logs.join("audit-{replica}.jsonl"));
    let host = Toolhost::builder().settings(settings, None).replica("r1").build().await.expect("building the host");
    let o = other.display().to_string();
    for (tool, input) in [
        ("Write", json!({"file_path": o, "content": "{\"kind\":\"call\"}\n"})),
        ("Read", json!({"file_path": o})),
        ("Bash", json!({"command": format!("echo '{{}}' >> {o}; touch {}/audit-r3.jsonl", logs.display())})),
    ] {
        let r = call(&host, tool, input, PermissionAnswer::Deny).await;
        assert_eq!(r.state, toolhost::response::ResultState::Denied, "{tool}: {}", r.text());
        assert!(r.text().contains("audit log"), "{tool}: {}", r.text());
    }
    close(&host);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "", "the other replica's log is untouched");
    assert!(!logs.join("audit-r3.jsonl").exists());
    let records = lines(&logs.join("audit-r1.jsonl"));
    assert_eq!(calls(&records).len(), 3, "{records:#?}");
    assert!(calls(&records).iter().all(|r| r["replica"] == "r1"), "{records:#?}");

    // A working directory in that folder would be toolhost's own too: refused.
    let mut settings = scratch.settings();
    settings.audit.path = Some(scratch.work().parent().unwrap().join("audit-{replica}.jsonl"));
    let err = Toolhost::builder().settings(settings, None).build().await.err().expect("refused").to_string();
    assert!(err.contains("give the logs a folder of their own"), "{err}");
    // An id that could leave the folder is refused before anything opens.
    let mut settings = scratch.settings();
    settings.audit.path = Some(logs.join("audit-{replica}.jsonl"));
    let err = Toolhost::builder().settings(settings, None).replica("../x").build().await.err().expect("refused");
    assert!(format!("{err:#}").contains("replica id"), "{err:#}");
    assert!(!scratch.outside("x.jsonl").exists());
}
