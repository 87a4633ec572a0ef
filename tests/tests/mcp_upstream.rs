//! Tools of upstream MCP servers (`[mcp_servers.NAME]`) end to end: a real
//! MCP server written with the Python SDK (`tests/mcp/upstream_server.py`),
//! started by toolhost over stdio and reached over streamable HTTP; its
//! tools listed and called through the real `toolhost` binary and through
//! `toolhost serve` to a real MCP client, denied by a rule, asked when not
//! read-only, wrapped by a middleware component; the server killed during a
//! call, its list_changed reflected in ours, and a hostile server (a tool
//! named `Bash`, a huge description, a schema that is not one, a flood of
//! output, toolhost's environment) contained; hostile servers of the
//! fixture (`mcp_fixture --hostile`: a tool list without end, a storm of
//! list_changed) held to their bounds.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::response::ResultState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::mcp::{PythonHttpServer, Transport, client as run_client, listed, serve_args};
use toolhost_e2e::{Scratch, call, guest, mcp_python, root, text};

fn server_script() -> String {
    root().join("tests/mcp/upstream_server.py").display().to_string()
}

/// A `[mcp_servers.NAME]` table starting the test server over stdio.
fn stdio_table(python: &Path, scratch: &Scratch, name: &str, extra: &[&str]) -> String {
    let mut args = vec![server_script(), "stdio".to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = {}\nenv = {{ UPSTREAM_NOTES = {:?} }}\n",
        python.display().to_string(),
        serde_json::to_string(&args).unwrap(),
        scratch.outside("notes.txt").display().to_string()
    )
}

/// The test server over streamable HTTP, killed when dropped.
struct HttpUpstream(PythonHttpServer);

impl HttpUpstream {
    fn start(python: &Path, scratch: &Scratch) -> Self {
        let mut command = Command::new(python);
        command.args([server_script(), "http".to_string()]).env("UPSTREAM_NOTES", scratch.outside("notes.txt"));
        Self(PythonHttpServer::start(command, "the upstream HTTP server"))
    }

    fn table(&self, name: &str) -> String {
        format!("[mcp_servers.{name}]\nurl = {:?}\n", self.0.url)
    }
}

fn names(listing: &Value) -> Vec<String> {
    listing.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

/// Listing, a read-only call, a denied call, an ask, an allowed write and a
/// middleware around an upstream tool, all through the CLI.
fn cli_suite(scratch: &Scratch, table: &str, label: &str) {
    let notes = scratch.outside("notes.txt");
    let _ = std::fs::remove_file(&notes);
    scratch.settings_file(table);

    let out = scratch.cli(&["list", "--json"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{label}: {stdout}\n{stderr}");
    let listing: Value = serde_json::from_str(&stdout).unwrap();
    let all = names(&listing);
    for tool in ["mcp__up__lookup", "mcp__up__note", "mcp__up__env", "mcp__up__slow", "Bash"] {
        assert!(all.contains(&tool.to_string()), "{label}: {tool} not listed: {all:?}");
    }
    let lookup = listing.as_array().unwrap().iter().find(|t| t["name"] == "mcp__up__lookup").unwrap();
    assert_eq!(lookup["read_only"], true, "{label}: readOnlyHint believed: {lookup}");
    assert_eq!(lookup["mcp_origin"], "up", "{label}: {lookup}");
    assert_eq!(lookup["origin"], json!({"kind": "mcp", "path": "up"}), "{label}");
    assert_eq!(lookup["input_schema"]["required"], json!(["word"]), "{label}: the server's schema");
    let note = listing.as_array().unwrap().iter().find(|t| t["name"] == "mcp__up__note").unwrap();
    assert_eq!(note["read_only"], false, "{label}");

    // A read-only tool runs without a rule; its output is the server's.
    let out = scratch.cli(&["call", "mcp__up__lookup", r#"{"word":"w"}"#]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{label}: {stdout}\n{stderr}");
    assert!(stdout.contains("w: found upstream"), "{label}: {stdout}");

    // The schema check runs before the server is asked anything.
    let out = scratch.cli(&["call", "mcp__up__lookup", r#"{"word":5}"#]);
    assert!(text(&out).0.contains("Input validation failed"), "{label}: {:?}", text(&out));

    // A deny rule wins over the read-only hint.
    let out = scratch.cli(&["--deny", "mcp__up__lookup", "call", "mcp__up__lookup", r#"{"word":"w"}"#]);
    assert_eq!(out.status.code(), Some(3), "{label}: {:?}", text(&out));
    assert!(!text(&out).0.contains("found upstream"), "{label}");

    // Not read-only: an ask, which nobody can answer here: denied, nothing written.
    let out = scratch.cli(&["call", "mcp__up__note", r#"{"text":"one"}"#]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{label}: {stdout}\n{stderr}");
    assert!(stderr.contains("Permission required for mcp__up__note"), "{label}: {stdout}\n{stderr}");
    let explained = text(&scratch.cli(&["check", "mcp__up__note", r#"{"text":"one"}"#])).0;
    assert!(explained.starts_with("ASK: Permission required for mcp__up__note"), "{label}: {explained}");
    assert!(!notes.exists(), "{label}: the denied call reached the server");
    let out = scratch.cli(&["--allow", "mcp__up__note", "call", "mcp__up__note", r#"{"text":"one"}"#]);
    assert_eq!(out.status.code(), Some(0), "{label}: {:?}", text(&out));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\n", "{label}");

    // A middleware component wraps an upstream tool like any other.
    let wrapped = format!(
        "{table}\n[middleware]\nfiles = [{:?}]\n[middleware.attach]\nmcp__up__lookup = [\"mw-mark-a\"]\n",
        guest("mw-mark-a").display().to_string()
    );
    scratch.settings_file(&wrapped);
    let out = scratch.cli(&["call", "mcp__up__lookup", r#"{"word":"m"}"#]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{label}: {stdout}\n{stderr}");
    assert!(stdout.contains("<a>m: found upstream</a>"), "{label}: {stdout}");
}

#[test]
fn a_stdio_server_s_tools_are_listed_called_denied_asked_and_wrapped() {
    let Some(python) = mcp_python() else { return };
    let scratch = Scratch::new();
    cli_suite(&scratch, &stdio_table(python, &scratch, "up", &[]), "stdio");
}

#[test]
fn an_http_server_s_tools_are_listed_called_denied_asked_and_wrapped() {
    let Some(python) = mcp_python() else { return };
    let scratch = Scratch::new();
    let server = HttpUpstream::start(python, &scratch);
    cli_suite(&scratch, &server.table("up"), "http");
}

#[test]
fn toolhost_serve_offers_upstream_tools_to_a_real_mcp_client() {
    let Some(python) = mcp_python() else { return };
    let scratch = Scratch::new();
    scratch.settings_file(&format!(
        "[permissions]\nallow = [\"mcp__up__note\"]\n{}",
        stdio_table(python, &scratch, "up", &[])
    ));
    let serve = Transport::Stdio(serve_args(&[]));
    for mode in toolhost_e2e::mcp::MODES {
        let listing = run_client(python, &scratch, &serve, mode, "list", json!({}));
        let lookup = listed(&listing, "mcp__up__lookup");
        assert_eq!(lookup["annotations"]["readOnlyHint"], true, "{mode}: {lookup}");
        let out = run_client(
            python,
            &scratch,
            &serve,
            mode,
            "call",
            json!({"tool": "mcp__up__note", "args": {"text": mode}}),
        );
        assert_eq!(out["is_error"], false, "{mode}: {out}");
        assert_eq!(out["text"], format!("noted: {mode}"), "{mode}: {out}");
    }
    assert_eq!(std::fs::read_to_string(scratch.outside("notes.txt")).unwrap(), "auto\nlegacy\n");
}

/// A server that cannot start when `toolhost serve` starts is tried again
/// in the background: once it can start, its tools are offered and serve's
/// clients are told (a tool-list change), with no restart.
#[test]
fn serve_offers_a_server_s_tools_once_it_comes_up_later() {
    let Some(python) = mcp_python() else { return };
    for mode in toolhost_e2e::mcp::MODES {
        let scratch = Scratch::new();
        let ready = scratch.outside("ready");
        scratch.settings_file(&format!(
            "[mcp_servers.up]\ncommand = {:?}\nargs = {}\nenv = {{ UPSTREAM_READY_FILE = {:?} }}\n",
            python.display().to_string(),
            serde_json::to_string(&[server_script(), "stdio".to_string()]).unwrap(),
            ready.display().to_string()
        ));
        let serve = Transport::Stdio(serve_args(&[]));
        let params = json!({"trigger": ready, "create_only": true, "seconds": 120});
        let out = run_client(python, &scratch, &serve, mode, "list_changed", params);
        let before: Vec<&str> = out["before"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(before.contains(&"Bash") && !before.contains(&"mcp__up__lookup"), "{mode}: {before:?}");
        let after: Vec<&str> = out["after"][0].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(after.contains(&"mcp__up__lookup") && after.contains(&"mcp__up__note"), "{mode}: {after:?}");
    }
}

/// A host over `table` with its upstream servers connected; the problems.
async fn host_with(scratch: &Scratch, table: &str) -> (Toolhost, Vec<String>) {
    let host = scratch.host(scratch.settings_file(table)).await;
    let problems = host.upstream_problems().to_vec();
    (host, problems)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_is_a_clear_error_and_is_started_again() {
    let Some(python) = mcp_python() else { return };
    let scratch = Scratch::new();
    let table = format!("[permissions]\nallow = [\"mcp__up__slow\"]\n{}", stdio_table(python, &scratch, "up", &[]));
    let (host, problems) = host_with(&scratch, &table).await;
    assert!(problems.is_empty(), "{problems:?}");
    let pid_file = scratch.outside("slow.pid");
    let input = json!({"pid_file": pid_file, "seconds": 60}).to_string();
    let running = tokio::spawn({
        let host = host.clone();
        async move { call(&host, "mcp__up__slow", serde_json::from_str(&input).unwrap(), PermissionAnswer::Deny).await }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|p| p.trim().parse::<i32>().ok()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the slow call never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let r = tokio::time::timeout(Duration::from_secs(20), running).await.expect("the call ended").unwrap();
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    let said = r.text();
    assert!(said.contains("Error occurred when calling MCP tool") && said.contains("MCP server up"), "{said}");
    assert!(said.contains("started again on the next call"), "{said}");

    // The next call starts the server again.
    let r = call(&host, "mcp__up__lookup", json!({"word": "again"}), PermissionAnswer::Deny).await;
    assert_eq!((r.state, r.text().as_str()), (ResultState::Success, "again: found upstream"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_list_changed_updates_our_tool_list() {
    let Some(python) = mcp_python() else { return };
    for http in [false, true] {
        let scratch = Scratch::new();
        let server = http.then(|| HttpUpstream::start(python, &scratch));
        let table = match &server {
            Some(server) => server.table("up"),
            None => stdio_table(python, &scratch, "up", &[]),
        };
        let table = format!("[permissions]\nallow = [\"mcp__up__grow\"]\n{table}");
        let (host, problems) = host_with(&scratch, &table).await;
        assert!(problems.is_empty(), "{problems:?}");
        assert!(!host.is_registered("mcp__up__added"));
        let mut changes = host.tool_list_changes();
        changes.borrow_and_update();
        let r = call(&host, "mcp__up__grow", json!({}), PermissionAnswer::Deny).await;
        assert_eq!(r.text(), "grown", "{r:?}");
        tokio::time::timeout(Duration::from_secs(20), async {
            while !host.is_registered("mcp__up__added") {
                changes.changed().await.unwrap();
            }
        })
        .await
        .unwrap_or_else(|_| panic!("http={http}: the new upstream tool never appeared"));
        let r = host
            .call(CallRequest::new("mcp__up__added", "{}"))
            .finish(PermissionAnswer::AllowOnce)
            .await
            .into_response();
        assert_eq!(r.text(), "added ran", "http={http}: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_server_shadows_nothing_and_floods_nothing() {
    let Some(python) = mcp_python() else { return };
    let scratch = Scratch::new();
    let table = format!(
        "[limits]\nmax_output_bytes = 65536\n[permissions]\nallow = [\"mcp__evil__flood\", \"mcp__evil__env\"]\n{}",
        stdio_table(python, &scratch, "evil", &["hostile"])
    );
    // SAFETY: set before any thread of this test reads the environment.
    unsafe { std::env::set_var("TOOLHOST_TEST_UPSTREAM_SECRET", "s3cret") };
    let (host, problems) = host_with(&scratch, &table).await;
    let all = problems.join("\n");
    // Reported, each naming the tool and the cause; not fatal.
    assert!(all.contains("'huge'") && all.contains("description") && all.contains("limit"), "{all}");
    assert!(all.contains("'broken'") && all.contains("not valid JSON Schema"), "{all}");
    // `Bash` is the built-in still; the server's is only mcp__evil__Bash.
    assert_eq!(host.describe("Bash").await.unwrap().origin, toolhost::tool::Origin::Builtin);
    assert!(host.is_registered("mcp__evil__Bash"));
    assert!(host.is_registered("mcp__evil__xxxxxxBashxx"), "{:?}", host.upstream_tool_names("evil"));
    assert!(!host.is_registered("mcp__evil__huge") && !host.is_registered("mcp__evil__broken"));
    let r = call(&host, "Bash", json!({"command": "echo builtin"}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.text().trim(), "builtin", "{r:?}");

    // A flood is cut at the output cap; the host keeps serving.
    let r = call(&host, "mcp__evil__flood", json!({"bytes": 4 << 20}), PermissionAnswer::Deny).await;
    let said = r.text();
    assert!(said.len() < 70_000 && said.contains("output truncated"), "{} bytes", said.len());

    // Nothing of toolhost's environment reaches the server but the scrubbed base.
    let r = call(&host, "mcp__evil__env", json!({}), PermissionAnswer::Deny).await;
    let said = r.text();
    let vars: Vec<&str> = said.lines().collect();
    assert!(vars.contains(&"UPSTREAM_NOTES") && vars.contains(&"PATH"), "{vars:?}");
    assert!(!vars.contains(&"TOOLHOST_TEST_UPSTREAM_SECRET"), "{vars:?}");
}

#[test]
fn list_says_when_a_server_fails_to_start_and_lists_the_rest() {
    let scratch = Scratch::new();
    scratch.settings_file("[mcp_servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n");
    let out = scratch.cli(&["list"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Bash"), "{stdout}");
    assert!(
        stderr.contains("MCP server gone is not available") && stderr.contains("/nonexistent/mcp-server"),
        "{stderr}"
    );
    // A call of its tool says the same and names the server.
    let out = scratch.cli(&["call", "mcp__gone__x", "{}"]);
    assert!(text(&out).1.contains("MCP server gone is not available"), "{:?}", text(&out));
}

/// A `[mcp_servers.NAME]` table starting the hostile fixture server
/// `mode` (`tests/src/bin/mcp_fixture/hostile.rs`), which notes what it is
/// asked in `count`; `extra` lines go into the table.
fn hostile_table(name: &str, mode: &str, count: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [\"--hostile\", {mode:?}, \"--count\", {:?}]\n{extra}",
        env!("CARGO_BIN_EXE_mcp_fixture"),
        count.display().to_string()
    )
}

/// How many `what` lines the hostile server noted (`start`, `list`, `storm`).
fn noted(count: &Path, what: &str) -> Vec<String> {
    let text = std::fs::read_to_string(count).unwrap_or_default();
    text.lines().filter(|l| l.split(' ').next() == Some(what)).map(str::to_string).collect()
}

fn upstream_tools(listing: &Value, server: &str) -> usize {
    names(listing).iter().filter(|n| n.starts_with(&format!("mcp__{server}__"))).count()
}

/// Issue 29, item 9: a server whose every `tools/list` page has a
/// `nextCursor` is read only up to the bounds — 1024 tools, `max_list_pages`
/// pages, `max_list_bytes` bytes — not for ever: the pages the server was
/// asked for are counted by the server itself. What it listed up to the
/// bound is offered, and the stop is reported once.
#[test]
fn an_endless_tool_list_stops_at_its_bounds_and_is_reported_once() {
    let scratch = Scratch::new();
    let count = scratch.outside("count.txt");
    // A start-up bound short enough that a listing without bounds fails fast.
    let timeout = "startup_timeout_ms = 10000\n";
    let list = |mode: &str, extra: &str| {
        let _ = std::fs::remove_file(&count);
        scratch.settings_file(&hostile_table("up", mode, &count, &format!("{timeout}{extra}")));
        let out = scratch.cli(&["list", "--json"]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{mode} {extra}: {stdout}\n{stderr}");
        let listing: Value = serde_json::from_str(&stdout).unwrap();
        (upstream_tools(&listing, "up"), noted(&count, "list").len(), stderr)
    };

    // 500 tools a page: the first 1024 are offered after 3 pages.
    let (tools, pages, stderr) = list("endless-pages", "");
    assert_eq!((tools, pages), (1024, 3), "{stderr}");
    assert_eq!(stderr.matches("lists more than 1024 tools").count(), 1, "reported once: {stderr}");
    // No tool on any page: 128 pages by default, or max_list_pages.
    let (tools, pages, stderr) = list("empty-pages", "");
    assert_eq!((tools, pages), (0, 128), "{stderr}");
    assert!(stderr.contains("max_list_pages (128 pages"), "{stderr}");
    let (tools, pages, stderr) = list("empty-pages", "max_list_pages = 5\n");
    assert_eq!((tools, pages), (0, 5), "{stderr}");
    // A page of 500 tools is about 170 KB: the first fits, the second does not.
    let (tools, pages, stderr) = list("endless-pages", "max_list_bytes = 250000\n");
    assert_eq!((tools, pages), (500, 2), "{stderr}");
    assert!(stderr.contains("max_list_bytes (250000 bytes)") && stderr.contains("the 500 tools"), "{stderr}");
}

/// `toolhost serve` against the endless server, with a real MCP client in
/// both generations: it lists each serve's server once (3 pages), offers
/// its first 1024 tools and does not start it again.
#[test]
fn serve_reads_an_endless_server_once_within_its_bounds() {
    let Some(python) = mcp_python() else { return };
    let scratch = Scratch::new();
    let count = scratch.outside("count.txt");
    scratch.settings_file(&hostile_table("up", "endless-pages", &count, "startup_timeout_ms = 10000\n"));
    let serve = Transport::Stdio(serve_args(&[]));
    for (i, mode) in toolhost_e2e::mcp::MODES.into_iter().enumerate() {
        let listing = run_client(python, &scratch, &serve, mode, "list", json!({}));
        let tools = listing["tools"].as_array().unwrap();
        let upstream = tools.iter().filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("mcp__up__"))).count();
        assert_eq!(upstream, 1024, "{mode}");
        // Each client starts its own serve, which starts the server once.
        assert_eq!((noted(&count, "start").len(), noted(&count, "list").len()), (i + 1, 3 * (i + 1)), "{mode}");
    }
}

/// Issue 29, item 9: a storm of list_changed notifications (2000, as fast
/// as the server can send them) is coalesced — at most one re-list runs and
/// one waits, `UPSTREAM_RELIST_INTERVAL` apart — and the storm's last change is not
/// lost: the tool it added is offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_storm_is_coalesced_and_its_last_change_kept() {
    let scratch = Scratch::new();
    let count = scratch.outside("count.txt");
    let table = format!("[permissions]\nallow = [\"mcp__up__storm\"]\n{}", hostile_table("up", "storm", &count, ""));
    let (host, problems) = host_with(&scratch, &table).await;
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(noted(&count, "list").len(), 1);
    let r = call(&host, "mcp__up__storm", json!({"notifications": 2000}), PermissionAnswer::Deny).await;
    assert_eq!(r.text(), "sent 2000", "{r:?}");
    let mut changes = host.tool_list_changes();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !host.is_registered("mcp__up__after_storm") {
            changes.changed().await.unwrap();
        }
    })
    .await
    .expect("the storm's last change was lost: mcp__up__after_storm never appeared");
    // Whatever was still waiting has run by now.
    tokio::time::sleep(3 * toolhost::UPSTREAM_RELIST_INTERVAL).await;
    let storm = noted(&count, "storm");
    let storm_ms: u64 = storm[0].rsplit(' ').next().unwrap().parse().unwrap();
    let relists = noted(&count, "list").len() - 1;
    // One running when the storm began, one per interval while it lasted, one waiting at its end.
    let most = 2 + (storm_ms / toolhost::UPSTREAM_RELIST_INTERVAL.as_millis() as u64) as usize + 1;
    eprintln!("{relists} re-lists for a storm of 2000 notifications in {storm_ms} ms");
    assert!(relists <= most, "{relists} re-lists for a storm of 2000 notifications in {storm_ms} ms (at most {most})");
}

/// A server's own words reach serve's log (a person reads it) through the
/// escaper: the error of a listing that fails, logged with each retry.
#[test]
fn serve_logs_a_server_s_error_text_escaped() {
    let scratch = Scratch::new();
    let count = scratch.outside("count.txt");
    scratch.settings_file(&hostile_table("up", "failing-list", &count, ""));
    let server = toolhost_e2e::mcp::HttpServer::start_with(&scratch, &[], &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let retried = loop {
        let line =
            server.stderr.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("a retry logged");
        if line.contains("retry 1 of") {
            break line;
        }
    };
    // The message, after the log's own (coloured) time and level.
    let message = &retried[retried.find("MCP server up").expect("the server named")..];
    assert!(message.contains("listing its tools failed: Mcp error: -32603: cannot list"), "{message:?}");
    toolhost_e2e::shown::assert_escaped(message, "serve's log");
}
