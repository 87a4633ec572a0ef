//! `toolhost serve` driven by a real MCP client, the Python SDK (`mcp`
//! 2.3.0, installed into `target/mcp-venv`), through `tests/mcp/client.py`:
//! over stdio and streamable HTTP, in both protocol generations (`auto`
//! negotiates 2026-07-28, `legacy` 2025-11-25 through `initialize`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_e2e::mcp::{HttpServer, MODES, Transport, client, listed as tool, raw, serve_args};
use toolhost_e2e::shown::{HOSTILE, HOSTILE_IN_JSON_SHOWN, HOSTILE_SHOWN, assert_escaped, assert_escaped_as, strings};
use toolhost_e2e::{Scratch, mcp_python, toolhost_bin};

/// Both transports for a server started with `extra`, each with both modes.
fn each_transport(scratch: &Scratch, extra: &[&str], mut check: impl FnMut(&Transport, &str, &str)) {
    let stdio = Transport::Stdio(serve_args(extra));
    for mode in MODES {
        check(&stdio, mode, "stdio");
    }
    let server = HttpServer::start(scratch, extra);
    for mode in MODES {
        check(&server.transport(None), mode, "http");
    }
}

#[test]
fn mcp_lists_every_tool_with_its_schema_and_hints() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    each_transport(&scratch, &[], |t, mode, how| {
        let listing = client(py, &scratch, t, mode, "list", json!({}));
        let bash = tool(&listing, "Bash");
        assert!(bash["inputSchema"]["properties"]["command"].is_object(), "{how}/{mode}: {bash}");
        assert_eq!(bash["annotations"]["readOnlyHint"], false, "{how}/{mode}: {bash}");
        assert_eq!(bash["annotations"]["openWorldHint"], true, "{how}/{mode}: {bash}");
        let read = tool(&listing, "Read");
        assert_eq!(read["annotations"]["readOnlyHint"], true, "{how}/{mode}: {read}");
        assert!(!read["description"].as_str().unwrap().is_empty());
        assert_eq!(listing["tools"].as_array().unwrap().len(), 12, "{how}/{mode}: every built-in");
    });
}

#[test]
fn mcp_call_streams_progress_and_returns_the_text() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    each_transport(&scratch, &["--allow", "Bash"], |t, mode, how| {
        let args = json!({"command": "echo first; sleep 0.5; echo second"});
        let r = client(py, &scratch, t, mode, "call", json!({"tool": "Bash", "args": args}));
        assert_eq!(r["is_error"], false, "{how}/{mode}: {r}");
        let text = r["text"].as_str().unwrap();
        assert!(text.contains("first") && text.contains("second"), "{how}/{mode}: {r}");
        let progress = r["progress"].as_array().unwrap();
        assert!(!progress.is_empty(), "{how}/{mode}: no progress notification: {r}");
        let streamed: String = progress.iter().filter_map(|p| p["message"].as_str()).collect();
        assert!(streamed.contains("first"), "{how}/{mode}: {r}");
    });
}

#[test]
fn mcp_denied_call_is_an_error_result_and_runs_nothing() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let canary = scratch.work().join("canary.txt");
    std::fs::write(&canary, "keep").unwrap();
    each_transport(&scratch, &["--allow", "Bash", "--deny", "Bash(rm:*)"], |t, mode, how| {
        let args = json!({"command": format!("rm {}", canary.display())});
        let r = client(py, &scratch, t, mode, "call", json!({"tool": "Bash", "args": args}));
        assert_eq!(r["is_error"], true, "{how}/{mode}: {r}");
        assert!(r["text"].as_str().unwrap().to_lowercase().contains("denied"), "{how}/{mode}: {r}");
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "keep", "{how}/{mode}");
    });
}

#[test]
fn mcp_ask_is_answered_through_elicitation() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let mut n = 0;
    each_transport(&scratch, &[], |t, mode, how| {
        n += 1;
        // Allowed once: written; asked again next time.
        let file = scratch.work().join(format!("allowed-{n}.txt"));
        let args = json!({"file_path": file.display().to_string(), "content": "yes\n"});
        let r = client(py, &scratch, t, mode, "elicit", json!({"tool": "Write", "args": args, "answer": "allow_once"}));
        assert_eq!(r["is_error"], false, "{how}/{mode}: {r}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "yes\n", "{how}/{mode}");
        let asked = r["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{how}/{mode}: {r}");
        assert!(asked[0]["message"].as_str().unwrap().contains("Write"), "{how}/{mode}: {r}");
        // Denied: nothing written, the model reads a denial.
        let file = scratch.work().join(format!("denied-{n}.txt"));
        let args = json!({"file_path": file.display().to_string(), "content": "no\n"});
        let r = client(py, &scratch, t, mode, "elicit", json!({"tool": "Write", "args": args, "answer": "deny"}));
        assert_eq!(r["is_error"], true, "{how}/{mode}: {r}");
        assert!(r["text"].as_str().unwrap().contains("denied"), "{how}/{mode}: {r}");
        assert!(!file.exists(), "{how}/{mode}: a denied Write wrote");
    });
}

#[test]
fn mcp_ask_without_elicitation_names_the_rule() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let file = scratch.work().join("never.txt");
    each_transport(&scratch, &[], |t, mode, how| {
        let args = json!({"file_path": file.display().to_string(), "content": "no\n"});
        let r = client(py, &scratch, t, mode, "call", json!({"tool": "Write", "args": args}));
        assert_eq!(r["is_error"], true, "{how}/{mode}: {r}");
        let text = r["text"].as_str().unwrap();
        assert!(text.contains("does not support elicitation") && text.contains("--allow 'Write"), "{how}/{mode}: {r}");
        assert!(!file.exists(), "{how}/{mode}: written without an answer");
    });
}

#[test]
fn mcp_ask_user_is_an_elicitation_or_an_error_with_the_questions() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let input = json!({"questions": [{
        "question": "Which database?",
        "header": "DB",
        "options": [{"label": "Postgres", "description": "relational"}, {"label": "SQLite", "description": "a file"}]
    }]});
    each_transport(&scratch, &[], |t, mode, how| {
        let answer = json!({"q0": "SQLite"});
        let r = client(py, &scratch, t, mode, "elicit", json!({"tool": "AskUser", "args": input, "answer": answer}));
        assert_eq!(r["is_error"], false, "{how}/{mode}: {r}");
        assert!(r["text"].as_str().unwrap().contains("Which database?: SQLite"), "{how}/{mode}: {r}");
        let r = client(py, &scratch, t, mode, "call", json!({"tool": "AskUser", "args": input}));
        assert_eq!(r["is_error"], true, "{how}/{mode}: {r}");
        assert!(r["text"].as_str().unwrap().contains("Which database?"), "{how}/{mode}: {r}");
    });
}

/// Issue 29, item 8: what a person reads of a call over MCP — the
/// permission form (2026-07-28 `inputRequests`, 2025-11-25
/// `elicitation/create`), AskUser's form, the progress messages — shows the
/// model's text with bidi controls, C1, DEL, ESC and zero-width characters
/// escaped, as the terminal prompt does; the result for the model keeps the
/// exact text, and an answer naming an escaped choice picks the option.
#[test]
fn mcp_forms_and_progress_show_the_model_s_text_escaped() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let canary = scratch.work().join("canary");
    let stdio = Transport::Stdio(serve_args(&["--allow", "Bash(printf:*)"]));
    for mode in MODES {
        let args = json!({"command": format!("touch {} {HOSTILE}", canary.display())});
        let r = client(py, &scratch, &stdio, mode, "elicit", json!({"tool": "Bash", "args": args, "answer": "deny"}));
        let asked = r["asked"].as_array().expect("asked");
        assert_eq!(asked.len(), 1, "{mode}: {r}");
        assert_escaped_as(asked[0]["message"].as_str().unwrap(), HOSTILE_IN_JSON_SHOWN, &format!("{mode}: the form"));
        let schema = strings(&asked[0]["schema"]);
        assert!(!toolhost_e2e::shown::RAW.iter().any(|c| schema.contains(*c)), "{mode}: {schema:?}");
        assert!(!canary.exists(), "{mode}: a denied call ran");

        let input = json!({"questions": [{
            "question": format!("Which database{HOSTILE}?"),
            "header": format!("DB{HOSTILE}"),
            "options": [
                {"label": format!("Postgres{HOSTILE}"), "description": format!("relational{HOSTILE}")},
                {"label": "SQLite", "description": "a file"}
            ]
        }]});
        let answer = json!({"q0": format!("Postgres{HOSTILE_SHOWN}")});
        let r =
            client(py, &scratch, &stdio, mode, "elicit", json!({"tool": "AskUser", "args": input, "answer": answer}));
        let asked = r["asked"].as_array().expect("asked");
        assert_escaped(asked[0]["message"].as_str().unwrap(), &format!("{mode}: AskUser's form"));
        assert_escaped(&strings(&asked[0]["schema"]), &format!("{mode}: AskUser's choices"));
        assert_eq!(r["is_error"], false, "{mode}: {r}");
        let said = r["text"].as_str().unwrap();
        assert!(said.contains(&format!("Which database{HOSTILE}?: Postgres{HOSTILE}")), "{mode}: {said:?}");

        let printf = json!({"command": format!("printf '{}'", toolhost_e2e::shown::hostile_printf())});
        let r = client(py, &scratch, &stdio, mode, "call", json!({"tool": "Bash", "args": printf}));
        assert_eq!((r["is_error"].as_bool(), r["text"].as_str()), (Some(false), Some(HOSTILE)), "{mode}: {r}");
        let progress: String = r["progress"].as_array().unwrap().iter().filter_map(|p| p["message"].as_str()).collect();
        assert_escaped(&progress, &format!("{mode}: progress"));
    }
}

/// 2026-07-28: the answered request state of a round works once, for its
/// own call only.
#[test]
fn mcp_request_state_is_single_use_and_bound_to_its_call() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &[]);
    let file = scratch.work().join("once.txt");
    let other = scratch.outside("other.txt");
    let args = json!({"file_path": file.display().to_string(), "content": "1\n"});
    let other_args = json!({"file_path": other.display().to_string(), "content": "2\n"});
    let r = client(
        py,
        &scratch,
        &server.transport(None),
        "auto",
        "replay",
        json!({"tool": "Write", "args": args, "other": other_args}),
    );
    assert_eq!(r["first"]["is_error"], false, "{r}");
    assert_eq!(r["replayed"]["is_error"], true, "{r}");
    assert!(r["replayed"]["text"].as_str().unwrap().contains("already answered"), "{r}");
    assert_eq!(r["other"]["is_error"], true, "{r}");
    assert!(!other.exists(), "a state answered for one call approved another");
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[test]
fn mcp_cancel_kills_the_running_command() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let mut n = 0;
    each_transport(&scratch, &["--allow", "Bash"], |t, mode, how| {
        n += 1;
        let pid_file = scratch.work().join(format!("pid-{n}"));
        let late = scratch.work().join(format!("late-{n}"));
        let command = format!("echo $$ > {}; sleep 60; touch {}", pid_file.display(), late.display());
        let params = json!({
            "tool": "Bash", "args": {"command": command, "timeout": 120000}, "after": 3,
            "next": {"command": "echo still serving"}
        });
        let r = client(py, &scratch, t, mode, "cancel", params);
        assert_eq!(r["outcome"], "abandoned", "{how}/{mode}: {r}");
        assert!(r["after"]["text"].as_str().unwrap().contains("still serving"), "{how}/{mode}: {r}");
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!alive(pid), "{how}/{mode}: the cancelled command (pid {pid}) still runs");
        assert!(!late.exists(), "{how}/{mode}");
    });
}

/// Each call waits for the other's file: they only finish if they run at
/// the same time.
fn rendezvous(scratch: &Scratch, tag: &str) -> Vec<Value> {
    let a = scratch.work().join(format!("{tag}-a"));
    let b = scratch.work().join(format!("{tag}-b"));
    let wait = |mine: &Path, theirs: &Path, say: &str| {
        json!({"command": format!(
            "touch {}; for i in $(seq 200); do [ -f {} ] && echo {say} && exit 0; sleep 0.1; done; echo alone; exit 1",
            mine.display(), theirs.display()
        )})
    };
    vec![wait(&a, &b, "met-a"), wait(&b, &a, "met-b")]
}

#[test]
fn mcp_serves_two_clients_and_parallel_calls_at_once() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let mut n = 0;
    // The waiting loop is a safety ask (dynamic shell): bypass mode runs it.
    each_transport(&scratch, &["--mode", "bypass"], |t, mode, how| {
        for scenario in ["parallel", "together"] {
            if scenario == "together" && how == "stdio" {
                continue; // a stdio server has one client: its own parent
            }
            n += 1;
            let calls = rendezvous(&scratch, &format!("r{n}"));
            let r = client(py, &scratch, t, mode, scenario, json!({"tool": "Bash", "calls": calls}));
            let texts: Vec<&str> =
                r["results"].as_array().unwrap().iter().map(|x| x["text"].as_str().unwrap()).collect();
            assert!(texts[0].contains("met-a") && texts[1].contains("met-b"), "{how}/{mode}/{scenario}: {r}");
        }
    });
}

#[test]
fn mcp_http_checks_the_token_and_the_origin() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let token = "t0ken-for-the-test";
    let server = HttpServer::start(&scratch, &["--token", token]);
    let ok = server.transport(Some(token));
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    for (headers, status) in [
        (json!({}), 401),
        (json!({"Authorization": "Bearer wrong"}), 401),
        (json!({"Authorization": format!("Bearer {token}"), "Origin": "http://evil.example"}), 403),
    ] {
        let r = client(py, &scratch, &ok, "legacy", "raw", json!({"body": list, "headers": headers}));
        assert_eq!(r["status"], status, "{headers}: {r}");
        assert_eq!(r["listed"], 12, "the right token still works: {r}");
    }
    // A reachable address without a token: refused at start.
    let out = Command::new(toolhost_bin())
        .args(["serve", "--http", "0.0.0.0:0"])
        .current_dir(scratch.work())
        .env("HOME", scratch.dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token"), "{out:?}");
}

/// `--allowed-origin` is matched exactly: an entry without a port means its
/// scheme's default port (rmcp 3.11 alone reads it as any port, so a page
/// served from another port of the same host could call).
#[test]
fn mcp_an_allowed_origin_is_matched_exactly() {
    let scratch = Scratch::new();
    let server = HttpServer::start(
        &scratch,
        &["--allowed-origin", "http://app.localhost", "--allowed-origin", "http://localhost:3000"],
    );
    let addr = server.addr();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": raw::LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    for (origin, want) in [
        ("http://app.localhost", 200),
        ("http://app.localhost:80", 200),
        ("http://localhost:3000", 200),
        ("http://app.localhost:6666", 403),
        ("https://app.localhost", 403),
        ("http://localhost:3001", 403),
        ("http://localhost", 403),
        ("null", 403),
    ] {
        let (answer, _) = raw::exchange(&addr, &raw::request(&addr, "POST", &[("Origin", origin)], &init));
        assert_eq!(raw::status(&answer), want, "{origin}: {answer}");
        if want == 403 {
            assert!(answer.contains("--allowed-origin"), "the refusal says how to allow it: {answer}");
        }
    }
    // An entry that is not an origin is refused at start, named.
    let out = Command::new(toolhost_bin())
        .args(["serve", "--http", "127.0.0.1:0", "--allowed-origin", "localhost:3000"])
        .current_dir(scratch.work())
        .env("HOME", scratch.dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("\"localhost:3000\" is not an origin"), "{stderr}");
}

#[test]
fn mcp_malformed_json_rpc_gets_a_clear_error_and_serving_goes_on() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::start(&scratch, &[]);
    let r =
        client(py, &scratch, &server.transport(None), "legacy", "raw", json!({"body": "{\"jsonrpc\": \"2.0\", oops"}));
    let status = r["status"].as_u64().unwrap();
    assert!((400..500).contains(&status), "{r}");
    // rmcp answers 415 with the parser's message.
    assert!(r["body"].as_str().unwrap().contains("deserialize request body"), "{r}");
    assert_eq!(r["listed"], 12, "{r}");

    let stdio = Transport::Stdio(serve_args(&[]));
    let r = client(py, &scratch, &stdio, "legacy", "raw_stdio", json!({"line": "{\"jsonrpc\": \"2.0\", oops"}));
    assert_eq!(r["alive"], true, "{r}");
    let replies = r["replies"].as_array().unwrap();
    assert!(replies.iter().any(|m| m["id"] == 1 && m["result"].is_object()), "initialize after the bad line: {r}");
}
