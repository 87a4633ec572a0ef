//! `[state] store = "redis"` end to end: real `toolhost` processes on a
//! real `redis-server`. Many processes working on one named session lose
//! no update (the task tools' compare-and-set is atomic across processes),
//! two `serve` processes share the state of sessionless MCP requests, and
//! every refusal of the settings says what to change.

use std::path::PathBuf;

use serde_json::{Value, json};
use toolhost_e2e::mcp::{HttpServer, client};
use toolhost_e2e::redis::RedisServer;
use toolhost_e2e::{Scratch, mcp_python, text};

/// A settings file (outside the working directory) naming `server` under
/// `prefix`, its password in a file beside it, plus `extra` TOML.
fn redis_settings(scratch: &Scratch, server: &RedisServer, prefix: &str, extra: &str) -> PathBuf {
    let password = scratch.outside("redis-password");
    std::fs::write(&password, format!("{}\n", server.password)).unwrap();
    let file = scratch.outside(&format!("{prefix}.toml"));
    let text = format!(
        "[state]\nstore = \"redis\"\nallow_unconfined = true\n{extra}\n[state.redis]\nurl = \"{}\"\nkey_prefix = \
         \"{prefix}\"\npassword_file = \"{}\"\n",
        server.url(),
        password.display()
    );
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn tasks_made_by_many_processes_in_one_shared_session_are_all_kept() {
    let Some(server) = RedisServer::start() else { return };
    let scratch = Scratch::new();
    let config = redis_settings(&scratch, &server, "cli-tasks", "");
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
    let config = redis_settings(&scratch, &server, "refusals", "");
    let text = std::fs::read_to_string(&config).unwrap().replace("allow_unconfined = true", "");
    std::fs::write(&config, text).unwrap();
    let err = run(&config, &[]);
    assert!(
        err.contains("not contained") && err.contains("sandbox = \"on\"") && err.contains("allow_unconfined"),
        "{err}"
    );

    // A password in the URL of a settings file, never repeated.
    let config = redis_settings(&scratch, &server, "refusals", "");
    let url = format!("redis://:{}@127.0.0.1:{}/0", server.password, server.port);
    let text = std::fs::read_to_string(&config).unwrap().replace(&server.url(), &url);
    std::fs::write(&config, text).unwrap();
    let err = run(&config, &[]);
    assert!(err.contains("password_file") && !err.contains(&server.password), "{err}");

    // No prefix; a wrong password; no server at all (within the timeout).
    let config = redis_settings(&scratch, &server, "refusals", "");
    let text = std::fs::read_to_string(&config).unwrap().replace("key_prefix = \"refusals\"\n", "");
    std::fs::write(&config, text).unwrap();
    assert!(run(&config, &[]).contains("needs [state.redis] key_prefix"));
    let config = redis_settings(&scratch, &server, "refusals", "");
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
    let config = redis_settings(&scratch, &server, "serve-pair", "");
    let global = ["--config", config.to_str().unwrap(), "--allow", "TaskCreate", "--allow", "TaskList"];
    let (a, b) = (HttpServer::start_with(&scratch, &global, &[]), HttpServer::start_with(&scratch, &global, &[]));
    let create = json!(["TaskCreate", {"subject": "made on A", "description": "d"}]);
    let made = client(py, &scratch, &a.transport(None), "auto", "tasks", json!({"calls": [create]}));
    assert_eq!(made["results"][0]["is_error"], false, "{made}");
    let list: Value = json!(["TaskList", {}]);
    let seen = client(py, &scratch, &b.transport(None), "auto", "tasks", json!({"calls": [list]}));
    assert!(seen["results"][0]["text"].as_str().unwrap().contains("made on A"), "B does not see it: {seen}");
}
