//! Tool groups and `reset_tools` through the CLI (a real settings file, the
//! real `toolhost` binary, a real plugin component) and the library: the
//! schema, the final-state semantics, a call to an inactive tool, the
//! active set kept per session, and the permission engine in front of
//! `reset_tools`.

use serde_json::{Value, json};
use toolhost::PermissionAnswer;
use toolhost::response::ResultState;
use toolhost::state::AgentState;
use toolhost_e2e::mcp::{client as run_client, each_transport};
use toolhost_e2e::{Scratch, call, example, mcp_python, text};

/// Greet (a plugin) in group `people`, Bash left in `basic`.
fn settings_text() -> String {
    format!(
        "plugins = [{:?}]\n\n[permissions]\nallow = [\"Greet\"]\n\n[groups.people]\ndescription = \"Greeting people\"\n\
         instructions = \"Greet everyone by name.\"\ntools = [\"Greet\"]\n\n[groups.files]\n\
         description = \"Reading and writing files\"\ntools = [\"Read\", \"Write\"]\n",
        example("greet").display().to_string()
    )
}

fn names(listing: &Value) -> Vec<String> {
    listing.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn cli_offers_only_active_groups_and_refuses_an_inactive_tool() {
    let scratch = Scratch::new();
    scratch.settings_file(&settings_text());

    let out = scratch.cli(&["list", "--json"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let listed = names(&serde_json::from_str(&stdout).unwrap());
    assert_eq!(listed[0], "reset_tools", "the meta tool leads: {listed:?}");
    assert!(listed.contains(&"Bash".to_string()), "basic is always on: {listed:?}");
    for hidden in ["Greet", "Read", "Write"] {
        assert!(!listed.contains(&hidden.to_string()), "{hidden} is in an inactive group: {listed:?}");
    }
    let table = text(&scratch.cli(&["list"])).0;
    assert!(table.contains("GROUPS") && table.contains("people  off  Greeting people  (Greet)"), "{table}");

    // The schema: one boolean per group, described by the group.
    let described: Value = serde_json::from_str(&text(&scratch.cli(&["describe", "reset_tools", "--json"])).0).unwrap();
    let props = &described["input_schema"]["properties"];
    assert_eq!(props["people"], json!({"type": "boolean", "default": false, "description": "Greeting people"}));
    assert_eq!(props["files"]["description"], "Reading and writing files");
    assert!(described["input_schema"].get("required").is_none());

    // An inactive tool's call is refused, naming reset_tools; nothing ran.
    let out = scratch.cli(&["call", "Greet", r#"{"name":"x"}"#]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("ToolGroupInactiveError: The tool 'Greet' in group 'people' is currently inactive")
            && stdout.contains("'reset_tools'"),
        "{stdout}"
    );
    assert!(!stdout.contains("Hello"), "{stdout}");

    // Activated in session `s`: offered and callable there, with the instructions.
    let out = scratch.cli(&["call", "--session", "s", "reset_tools", r#"{"people":true}"#]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("The currently activated tool group(s): people."), "{stdout}");
    assert!(stdout.contains("<group name=\"people\">Greet everyone by name.</group>"), "{stdout}");
    let listed = names(&serde_json::from_str(&text(&scratch.cli(&["list", "--session", "s", "--json"])).0).unwrap());
    assert!(listed.contains(&"Greet".to_string()) && !listed.contains(&"Read".to_string()), "{listed:?}");
    let out = scratch.cli(&["call", "--session", "s", "Greet", r#"{"name":"x"}"#]);
    assert_eq!(text(&out).0.trim(), "Hello, x!", "{:?}", text(&out));
    // Another session (and no session) still has it off.
    let out = scratch.cli(&["call", "--session", "other", "Greet", r#"{"name":"x"}"#]);
    assert!(text(&out).0.contains("ToolGroupInactiveError"), "{:?}", text(&out));

    // The input is the final state: only `files` now, `people` is off.
    let out = scratch.cli(&["call", "--session", "s", "reset_tools", r#"{"files":true}"#]);
    assert!(text(&out).0.starts_with("The currently activated tool group(s): files."), "{:?}", text(&out));
    let out = scratch.cli(&["call", "--session", "s", "Greet", r#"{"name":"x"}"#]);
    assert!(text(&out).0.contains("ToolGroupInactiveError"), "{:?}", text(&out));
    let out = scratch.cli(&["call", "--session", "s", "reset_tools", "{}"]);
    assert_eq!(text(&out).0.trim(), "All tool groups are currently deactivated.");

    // Unknown groups and non-booleans change nothing.
    scratch.cli(&["call", "--session", "s", "reset_tools", r#"{"people":true}"#]);
    let out = scratch.cli(&["call", "--session", "s", "reset_tools", r#"{"people":false,"admin":true}"#]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("Invalid group name(s): admin. The current available groups are: files, people"),
        "{stdout}"
    );
    let out = scratch.cli(&["call", "--session", "s", "reset_tools", r#"{"people":"yes"}"#]);
    assert!(text(&out).0.contains("Input validation failed for tool 'reset_tools'"), "{:?}", text(&out));
    let out = scratch.cli(&["call", "--session", "s", "Greet", r#"{"name":"y"}"#]);
    assert_eq!(text(&out).0.trim(), "Hello, y!", "still active after the refused changes: {:?}", text(&out));
}

#[test]
fn reset_tools_goes_through_the_permission_engine() {
    let scratch = Scratch::new();
    scratch.settings_file(&settings_text());
    let out = scratch.cli(&["--deny", "reset_tools", "call", "--session", "d", "reset_tools", r#"{"people":true}"#]);
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    let out = scratch.cli(&["call", "--session", "d", "Greet", r#"{"name":"x"}"#]);
    assert!(text(&out).0.contains("ToolGroupInactiveError"), "a denied reset_tools changed nothing: {:?}", text(&out));
    // Its own check allows, so dont_ask runs it; explore never asks a tool
    // and refuses what is not read-only, as the reference does.
    let out = scratch.cli(&["--mode", "dont_ask", "call", "reset_tools", r#"{"people":true}"#]);
    assert!(out.status.success(), "{:?}", text(&out));
    let out = scratch.cli(&["--mode", "explore", "call", "reset_tools", r#"{"people":true}"#]);
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
}

#[test]
fn bad_groups_stop_the_host_naming_the_table() {
    let scratch = Scratch::new();
    scratch.settings_file("[groups.basic]\ndescription = \"x\"\ntools = [\"Bash\"]\n");
    let out = scratch.cli(&["list"]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("[groups.basic]"), "{:?}", text(&out));
    let scratch = Scratch::new();
    scratch.settings_file(
        "[groups.a]\ndescription = \"x\"\ntools = [\"Bash\"]\n[groups.b]\ndescription = \"y\"\ntools = [\"Bash\"]\n",
    );
    let out = scratch.cli(&["list"]);
    assert!(text(&out).1.contains("already in [groups.a]"), "{:?}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_has_its_own_active_set_and_change_signal() {
    let scratch = Scratch::new();
    let host = scratch.host(scratch.settings_file(&settings_text())).await;
    let (a, b) = (std::sync::Arc::new(AgentState::new()), std::sync::Arc::new(AgentState::new()));
    let mut a_changes = a.group_changes();
    let mut b_changes = b.group_changes();
    let request = toolhost::CallRequest::new("reset_tools", r#"{"people":true}"#).session(a.clone());
    let response = host.call(request).finish(PermissionAnswer::Deny).await.into_response();
    assert_eq!(response.state, ResultState::Success, "{response:?}");
    assert!(a_changes.has_changed().unwrap() && !b_changes.has_changed().unwrap());
    let offered = async |state: &AgentState| {
        host.available(Some(state)).await.unwrap().into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    assert!(offered(&a).await.contains(&"Greet".to_string()));
    assert!(!offered(&b).await.contains(&"Greet".to_string()));
    // The host's own state (calls without a session) is a session too.
    let r = call(&host, "Greet", json!({"name": "x"}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    // The same set again is no change.
    a_changes.mark_unchanged();
    b_changes.mark_unchanged();
    let again = toolhost::CallRequest::new("reset_tools", r#"{"people":true}"#).session(a.clone());
    host.call(again).finish(PermissionAnswer::Deny).await;
    assert!(!a_changes.has_changed().unwrap());
}

#[test]
fn mcp_offers_only_active_groups_and_tells_the_client_when_they_change() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    scratch.settings_file(&settings_text());
    each_transport(&scratch, &[], |t, mode, how| {
        let params = json!({"tool": "Greet", "args": {"name": "x"}, "groups": {"people": true}});
        let r = run_client(py, &scratch, t, mode, "groups", params);
        let listed =
            |key: &str| r[key].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect::<Vec<_>>();
        let (before, after) = (listed("before"), listed("after"));
        assert!(
            before.contains(&"reset_tools".to_string()) && before.contains(&"Bash".to_string()),
            "{how}/{mode}: {r}"
        );
        assert!(!before.contains(&"Greet".to_string()), "{how}/{mode}: {r}");
        assert_eq!(r["schema"]["properties"]["people"]["type"], "boolean", "{how}/{mode}: {r}");
        assert_eq!(r["inactive"]["is_error"], true, "{how}/{mode}: {r}");
        let refusal = r["inactive"]["text"].as_str().unwrap();
        assert!(refusal.contains("ToolGroupInactiveError") && refusal.contains("'reset_tools'"), "{how}/{mode}: {r}");
        assert!(r["reset"]["text"].as_str().unwrap().contains("Greet everyone by name."), "{how}/{mode}: {r}");
        assert!(after.contains(&"Greet".to_string()) && !after.contains(&"Read".to_string()), "{how}/{mode}: {r}");
        assert_eq!(r["active"]["text"], "Hello, x!", "{how}/{mode}: {r}");
        // Clients hear of the change at once: a notification on the
        // 2025-11-25 session, on the listen stream for 2026-07-28.
        assert!(r["list_changed"].as_u64().unwrap() >= 1, "{how}/{mode}: no list_changed: {r}");
    });
}

/// A plugin granted `state` writes every key the active groups could live
/// under: the session's groups stay as they were, and what the session is
/// offered and may call does not change.
#[test]
fn a_plugin_with_state_cannot_turn_a_group_on() {
    let scratch = Scratch::new();
    scratch.settings_file(&settings_text());
    let hijack = toolhost_e2e::guest("group-hijack");
    let hijack = hijack.to_str().unwrap();
    let with = |args: &[&str]| {
        let mut all = vec!["--plugin", hijack, "--grant", "GroupHijack=state", "--allow", "GroupHijack"];
        all.extend_from_slice(args);
        scratch.cli(&all)
    };
    let out = with(&["call", "--session", "h", "GroupHijack", r#"{"groups":["people","files"]}"#]);
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("stored active_groups, activated_groups, tool_context"), "{stdout}\n{stderr}");
    let listed = names(&serde_json::from_str(&text(&with(&["list", "--session", "h", "--json"])).0).unwrap());
    assert!(!listed.contains(&"Greet".to_string()) && !listed.contains(&"Read".to_string()), "{listed:?}");
    let out = with(&["call", "--session", "h", "Greet", r#"{"name":"x"}"#]);
    assert!(text(&out).0.contains("ToolGroupInactiveError"), "{:?}", text(&out));
    let saved = std::fs::read_to_string(scratch.cli_sessions().join("h.json")).unwrap();
    let saved: Value = serde_json::from_str(&saved).unwrap();
    assert!(saved.get("active_groups").is_none(), "{saved}");
    assert!(!saved["values"]["active_groups"].is_null(), "the plugin's write is only a value: {saved}");
}
