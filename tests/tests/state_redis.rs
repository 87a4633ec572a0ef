//! `[state] store = "redis"` end to end: real `toolhost` processes on a
//! real `redis-server`. Many processes working on one named session lose
//! no update (the task tools' compare-and-set is atomic across processes),
//! two `serve` processes share the state of sessionless MCP requests and
//! take each other's answers to questions, and every refusal of the
//! settings says what to change.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_e2e::mcp::{HttpServer, client, raw};
use toolhost_e2e::redis::{RedisServer, keyring_file};
use toolhost_e2e::{Scratch, mcp_python, text, wait_for};

#[test]
fn tasks_made_by_many_processes_in_one_shared_session_are_all_kept() {
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.settings_file(&scratch, "cli-tasks", "");
    let config = config.to_str().unwrap();
    std::thread::scope(|s| {
        let makers: Vec<_> = (0..8)
            .map(|i| {
                let scratch = &scratch;
                s.spawn(move || {
                    let input = json!({"subject": format!("task {i}"), "description": "d"}).to_string();
                    scratch.cli(&["--config", config, "call", "--session", "team", "TaskCreate", &input])
                })
            })
            .collect();
        for maker in makers {
            let out = maker.join().unwrap();
            assert!(out.status.success(), "{:?}", text(&out));
        }
    });
    let out = scratch.cli(&["--config", config, "call", "--session", "team", "TaskList", "{}"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let mut ids: Vec<&str> = stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    ids.sort_by_key(|id| id.parse::<u32>().unwrap_or(0));
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6", "7", "8"], "one task per process, ids unique: {stdout}");
    for i in 0..8 {
        assert!(stdout.contains(&format!("task {i}")), "task {i} lost: {stdout}");
    }
    // Nothing went to a session file, and another session is empty.
    assert!(!scratch.cli_sessions().join("team.json").exists());
    let out = scratch.cli(&["--config", config, "call", "--session", "other", "TaskList"]);
    assert_eq!(text(&out).0.trim_end(), "No tasks available.");
    // A named session outlives the processes in Redis: no lifetime on it.
    let out = scratch.cli(&["--config", config, "list", "--session", "team"]);
    assert!(out.status.success(), "{:?}", text(&out));
}

#[test]
fn the_state_store_settings_refuse_what_is_unsafe_and_say_what_to_change() {
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let run = |config: &PathBuf, extra: &[&str]| {
        let mut args = vec!["--config", config.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(["call", "--session", "s", "TaskList"]);
        let out = scratch.cli(&args);
        assert!(!out.status.success());
        text(&out).1
    };

    // Unconfined tool processes: refused unless the user accepts it.
    let config = server.settings_file(&scratch, "refusals", "");
    let text = std::fs::read_to_string(&config).unwrap().replace("allow_unconfined = true", "");
    std::fs::write(&config, text).unwrap();
    let err = run(&config, &[]);
    assert!(
        err.contains("not contained") && err.contains("sandbox = \"on\"") && err.contains("allow_unconfined"),
        "{err}"
    );

    // A password in the URL of a settings file, never repeated.
    let config = server.settings_file(&scratch, "refusals", "");
    let url = format!("redis://:{}@127.0.0.1:{}/0", server.password, server.port);
    let text = std::fs::read_to_string(&config).unwrap().replace(&server.url(), &url);
    std::fs::write(&config, text).unwrap();
    let err = run(&config, &[]);
    assert!(err.contains("password_file") && !err.contains(&server.password), "{err}");

    // No prefix; a wrong password; no server at all (within the timeout).
    let config = server.settings_file(&scratch, "refusals", "");
    let text = std::fs::read_to_string(&config).unwrap().replace("key_prefix = \"refusals\"\n", "");
    std::fs::write(&config, text).unwrap();
    assert!(run(&config, &[]).contains("needs [state.redis] key_prefix"));
    let config = server.settings_file(&scratch, "refusals", "");
    std::fs::write(scratch.outside("redis-password"), "wrong\n").unwrap();
    let err = run(&config, &[]);
    assert!(err.contains("unavailable") && err.contains(&server.url()), "{err}");
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = run(&config, &["--redis-url", &format!("redis://127.0.0.1:{free}/0")]);
    assert!(err.contains("unavailable") && err.contains(&free.to_string()), "{err}");
}

/// Two `serve` processes on one Redis: what a sessionless (2026-07-28)
/// client made through one is what a client of the other sees.
#[test]
fn two_serve_processes_share_the_sessionless_state() {
    let Some(py) = mcp_python() else { return };
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let keyring = format!("keyring_file = \"{}\"", keyring_file(&scratch).display());
    let config = server.settings_file(&scratch, "serve-pair", &keyring);
    let global = ["--config", config.to_str().unwrap(), "--allow", "TaskCreate", "--allow", "TaskList"];
    let (a, b) = (HttpServer::start_with(&scratch, &global, &[]), HttpServer::start_with(&scratch, &global, &[]));
    let create = json!(["TaskCreate", {"subject": "made on A", "description": "d"}]);
    let made = client(py, &scratch, &a.transport(None), "auto", "tasks", json!({"calls": [create]}));
    assert_eq!(made["results"][0]["is_error"], false, "{made}");
    let list: Value = json!(["TaskList", {}]);
    let seen = client(py, &scratch, &b.transport(None), "auto", "tasks", json!({"calls": [list]}));
    assert!(seen["results"][0]["text"].as_str().unwrap().contains("made on A"), "B does not see it: {seen}");
}

/// 2026-07-28 asks across processes: a question asked through A is
/// answered through B and the call runs once; the same answer sent again
/// to A, B or C is refused; a process whose permission policy differs
/// refuses the answer; `serve` with Redis and no keyring does not start.
#[test]
fn a_question_asked_through_one_serve_is_answered_once_through_another() {
    let Some(py) = mcp_python() else { return };
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let keyring = keyring_file(&scratch);
    let extra = format!("keyring_file = \"{}\"", keyring.display());
    let config = server.settings_file(&scratch, "asks", &extra);
    let global = ["--config", config.to_str().unwrap(), "--ask", "Bash"];
    let [a, b, c] = [(); 3].map(|()| HttpServer::start_with(&scratch, &global, &[]));
    let marker = scratch.work().join("ran");
    let args = json!({"command": format!("echo once >> {}", marker.display())});
    let params = json!({"tool": "Bash", "args": args, "answer": "allow_once", "others": [b.url, c.url]});
    let r = client(py, &scratch, &a.transport(None), "auto", "replay_across", params);
    assert_eq!(r["answered"]["is_error"], false, "answered through B: {r}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "once\n", "the call ran once: {r}");
    let replays = r["replays"].as_array().unwrap();
    assert_eq!(replays.len(), 3, "{r}");
    for replay in replays {
        assert_eq!(replay["is_error"], true, "{r}");
        assert!(replay["text"].as_str().unwrap().contains("already answered"), "{r}");
    }
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "once\n", "no replay ran it again");

    // Another policy (one more deny rule) refuses what A asked, and its
    // refusal does not use the answer up: A, whose policy it was, takes
    // it once.
    let other_policy = ["--config", config.to_str().unwrap(), "--ask", "Bash", "--deny", "WebFetch"];
    let d = HttpServer::start_with(&scratch, &other_policy, &[]);
    let marker = scratch.work().join("ran-d");
    let args = json!({"command": format!("echo once >> {}", marker.display())});
    let params = json!({"tool": "Bash", "args": args, "answer": "allow_once", "others": [d.url]});
    let r = client(py, &scratch, &a.transport(None), "auto", "replay_across", params);
    assert_eq!(r["answered"]["is_error"], true, "{r}");
    assert!(r["answered"]["text"].as_str().unwrap().contains("policy changed"), "{r}");
    let replays = r["replays"].as_array().unwrap();
    assert_eq!((&replays[0]["is_error"], &replays[1]["is_error"]), (&json!(false), &json!(true)), "{r}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "once\n", "run once, through A");

    // Redis without a keyring: serve refuses to start, saying what to do.
    let bare = server.settings_file(&scratch, "asks", "");
    let out = scratch
        .cli_within(&["--config", bare.to_str().unwrap(), "serve", "--http", "127.0.0.1:0"], Duration::from_secs(30))
        .expect("serve ends at once");
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success() && stderr.contains("keyring_file") && stderr.contains("toolhost keyring new"),
        "{stderr}"
    );
}

/// The keyring and the Redis password are toolhost's own files: a tool
/// may not read them even inside a working directory, in any mode.
#[test]
fn no_tool_reads_the_keyring_or_the_redis_password() {
    let scratch = Scratch::new();
    let (keyring, password) = (scratch.work().join("state-keyring"), scratch.work().join("redis-password"));
    let line = text(&scratch.cli(&["keyring", "new"])).0;
    std::fs::write(&keyring, line).unwrap();
    std::fs::write(&password, "hunter2\n").unwrap();
    let config = scratch.outside("secrets.toml");
    let settings = format!(
        "[state]\nkeyring_file = \"{}\"\n[state.redis]\npassword_file = \"{}\"\n",
        keyring.display(),
        password.display()
    );
    std::fs::write(&config, settings).unwrap();
    let config = config.to_str().unwrap();
    for (tool, input) in [
        ("Read", json!({"file_path": keyring})),
        ("Read", json!({"file_path": password})),
        ("Bash", json!({"command": format!("cat {}", password.display())})),
    ] {
        let out = scratch.cli(&["--config", config, "--mode", "bypass", "call", tool, &input.to_string()]);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{tool} {input}: {stdout}");
        assert!(
            format!("{stdout}{stderr}").contains("a secret toolhost reads") && !stdout.contains("hunter2"),
            "{tool} {input}: {stdout}\n{stderr}"
        );
    }
}

/// `GET path` of the server at `addr` without a token or a known Host:
/// the status and the body.
fn probe(addr: &str, path: &str) -> (u16, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: balancer.internal\r\nConnection: close\r\n\r\n");
    let (answer, _) = raw::exchange(addr, request.as_bytes());
    (raw::status(&answer), answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default())
}

/// `/healthz` and `/readyz` answer without the token or the Host check;
/// `/readyz` says `state-store` while Redis is down and is ready again
/// once it is back, without a restart; `/mcp` still wants the token.
#[test]
fn readyz_tells_a_balancer_when_the_state_store_is_down() {
    let Some(mut server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "health");
    let serve = HttpServer::start_with(&scratch, &["--config", config.to_str().unwrap()], &["--token", "t0ken"]);
    let addr = serve.addr();
    assert_eq!(probe(&addr, "/healthz"), (200, "ok".to_string()));
    assert_eq!(probe(&addr, "/readyz"), (200, "ready".to_string()));
    assert_eq!(probe(&addr, "/mcp").0, 401, "the MCP endpoint still wants the token");

    server.stop();
    wait_for("/readyz to say state-store", Duration::from_secs(15), || {
        probe(&addr, "/readyz") == (503, "state-store".to_string())
    });
    assert_eq!(probe(&addr, "/healthz").0, 200, "the process still serves");
    server.restart();
    wait_for("/readyz to be ready again", Duration::from_secs(15), || probe(&addr, "/readyz").0 == 200);
}

/// "Allow and remember" through one `serve` process holds on every other
/// for its next decision; the rule is in the store, not in the settings
/// file; `toolhost rules` lists it with the process that remembered it,
/// and `--forget` makes every process ask again.
#[test]
fn a_rule_remembered_through_one_serve_holds_on_every_other_until_forgotten() {
    let Some(py) = mcp_python() else { return };
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "rules");
    let settings_before = std::fs::read_to_string(&config).unwrap();
    let global = ["--config", config.to_str().unwrap()];
    let a = HttpServer::start_with(&scratch, &global, &["--replica-id", "replica-a"]);
    let b = HttpServer::start_with(&scratch, &global, &["--replica-id", "replica-b"]);
    let touch = |name: &str| json!({"command": format!("touch {}", scratch.work().join(name).display())});
    let elicit = |server: &HttpServer, name: &str, answer: &str| {
        let params = json!({"tool": "Bash", "args": touch(name), "answer": answer});
        client(py, &scratch, &server.transport(None), "auto", "elicit", params)
    };

    // The rule suggested for `touch FILE` is that command's prefix: B runs
    // the same command.
    let made = scratch.work().join("made");
    let r = elicit(&a, "made", "allow_and_remember");
    assert_eq!((r["is_error"].clone(), r["asked"].as_array().unwrap().len()), (json!(false), 1), "{r}");
    std::fs::remove_file(&made).unwrap();
    let r = elicit(&b, "made", "deny");
    assert_eq!(r["is_error"], false, "the rule A remembered holds on B: {r}");
    assert!(r["asked"].as_array().unwrap().is_empty(), "B did not ask: {r}");
    assert!(made.exists(), "B ran it");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), settings_before, "nothing written to the settings file");

    let out = scratch.cli(&["--config", config.to_str().unwrap(), "rules", "--json"]);
    let (listed, stderr) = text(&out);
    assert!(out.status.success(), "{listed}\n{stderr}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!((&listed[0]["behavior"], &listed[0]["by"]), (&json!("allow"), &json!("replica-a")), "{listed}");
    let rule = listed[0]["rule"].as_str().unwrap().to_string();
    assert!(rule.starts_with("Bash("), "{rule}");

    let out = scratch.cli(&["--config", config.to_str().unwrap(), "rules", "--forget", &rule]);
    assert!(out.status.success(), "{:?}", text(&out));
    std::fs::remove_file(&made).unwrap();
    let r = elicit(&b, "made", "deny");
    assert_eq!((r["is_error"].clone(), r["asked"].as_array().unwrap().len()), (json!(true), 1), "asked again: {r}");
    assert!(!made.exists(), "denied, not run");
    let out = scratch.cli(&["--config", config.to_str().unwrap(), "rules", "--forget", &rule]);
    assert!(!out.status.success() && text(&out).1.contains("no rule"), "{:?}", text(&out));
}

/// The files `[state.redis]` names are read as toolhost's own: a FIFO in
/// place of the CA file or the password file is refused at once (a plain
/// read would wait for a writer for ever), naming the key.
#[test]
fn a_fifo_in_place_of_a_redis_file_is_refused_without_waiting() {
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let fifo = scratch.outside("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for key in ["ca_file", "password_file"] {
        let config = server.settings_file(&scratch, "fifo", "");
        let before = std::fs::read_to_string(&config).unwrap();
        let settings = if key == "ca_file" {
            format!("{before}ca_file = \"{}\"\n", fifo.display())
        } else {
            let password = scratch.outside("redis-password");
            before.replace(&password.display().to_string(), &fifo.display().to_string())
        };
        std::fs::write(&config, settings).unwrap();
        let args = ["--config", config.to_str().unwrap(), "call", "--session", "s", "TaskList"];
        let out = scratch.cli_within(&args, Duration::from_secs(30)).expect("refused without waiting on the FIFO");
        let (_, stderr) = text(&out);
        assert!(!out.status.success() && stderr.contains(key) && stderr.contains("FIFO"), "{key}: {stderr}");
    }
}

/// The replicas of a deployment (issue #31): each serving process
/// registers itself with a heartbeat; `toolhost status` lists the live
/// ones from the store (id, host, pid, digests); a replica that starts
/// warns of a live one whose policy differs, naming the part; a second
/// live process under one id is told at its heartbeat and shown as a
/// clash; a replica that stops removes its record.
#[test]
fn the_replicas_are_listed_from_the_store_and_a_clash_or_another_policy_is_told() {
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = server.deployment_settings(&scratch, "replicas");
    let status = || {
        let out = scratch.cli(&["--config", config.to_str().unwrap(), "status", "--json"]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        let json: Value = serde_json::from_str(&stdout).unwrap();
        json["replicas"].as_array().unwrap().clone()
    };
    let global = ["--config", config.to_str().unwrap()];
    let a = HttpServer::start_with(&scratch, &global, &["--replica-id", "r-a"]);
    let other_policy = ["--config", config.to_str().unwrap(), "--allow", "TaskList"];
    let mut b = HttpServer::start_with(&scratch, &other_policy, &["--replica-id", "r-b", "--grace", "0"]);
    let warning = b.early.iter().find(|l| l.contains("decides under another policy")).cloned().unwrap_or_default();
    assert!(warning.contains("r-a") && warning.contains("permissions.allow"), "{:?}", b.early);

    let replicas = status();
    let ids: Vec<&str> = replicas.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r-a", "r-b"], "{replicas:#?}");
    assert_eq!(replicas[0]["pid"], a.pid());
    assert_eq!(replicas[0]["tools"], replicas[1]["tools"], "the same tools");
    assert_ne!(replicas[0]["policy"]["permissions.allow"], replicas[1]["policy"]["permissions.allow"]);
    assert_eq!(replicas[0]["policy"]["grants"], replicas[1]["policy"]["grants"]);
    let out = scratch.cli(&["--config", config.to_str().unwrap(), "status"]);
    let (shown, _) = text(&out);
    assert!(
        shown.contains("replica r-b") && shown.contains("differs from replica r-a in permissions.allow"),
        "{shown}"
    );

    // A second live process under r-a: both are told, and the store shows it.
    let c = HttpServer::start_with(&scratch, &global, &["--replica-id", "r-a"]);
    let mut told = String::new();
    wait_for("A to be told of C", Duration::from_secs(20), || {
        if let Some(l) = a.stderr.try_iter().find(|l| l.contains("another live process uses this replica id")) {
            told = l;
        }
        !told.is_empty()
    });
    assert!(told.contains(&format!("pid {}", c.pid())), "{told}");
    wait_for("the clash in toolhost status", Duration::from_secs(20), || {
        status().iter().any(|r| r["id"] == "r-a" && r["clash"].is_string())
    });
    drop(c);

    // B stops as a replica does (SIGTERM): its record goes at once.
    // SAFETY: kill(2) on a child of this test.
    assert_eq!(unsafe { libc::kill(b.pid() as i32, libc::SIGTERM) }, 0);
    assert!(b.child.wait().unwrap().success());
    let ids: Vec<String> = status().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, ["r-a"]);
}
