//! The task tools and AskUser through the real built-in components: task
//! lifecycles with dependencies, the deviations, state kept by a CLI session
//! across processes, a corrupt state file, AskUser's validation and the round
//! trip of an answer through external execution (library and CLI).

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::permission::Mode;
use toolhost::response::{ResultState, ToolResponse};
use toolhost::settings::Settings;
use toolhost::state::{AgentState, StateBounds};
use toolhost::{CallRequest, ExternalResult, Outcome, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, builtin_wasm, call, text};

const HINT: &str =
    "\n\nTask completed. Call TaskList now to find your next available task or see if your work unblocked others.";

async fn host(scratch: &Scratch) -> Toolhost {
    scratch.host(scratch.settings()).await
}

/// Calls `tool` in `state`; asks are denied (none are expected).
async fn run(host: &Toolhost, state: &Arc<AgentState>, tool: &str, input: Value) -> ToolResponse {
    host.call(CallRequest::new(tool, input.to_string()).session(state.clone()))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response()
}

fn ok(r: &ToolResponse) -> String {
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    r.text()
}

fn err(r: &ToolResponse) -> String {
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    r.text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_tools_are_loaded_with_the_reference_flags() {
    let scratch = Scratch::new();
    let host = host(&scratch).await;
    for name in ["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"] {
        let info = host.describe(name).await.unwrap_or_else(|e| panic!("{name} is a built-in: {e}"));
        assert!(info.concurrency_safe && !info.read_only && info.state_injected && !info.external, "{name}: {info:?}");
    }
    let ask = host.describe("AskUser").await.expect("AskUser is a built-in");
    assert!(ask.external && ask.read_only && ask.concurrency_safe && !ask.state_injected, "{ask:?}");
    let schema = ask.result_metadata_schema.expect("AskUser declares its result metadata schema");
    assert_eq!(schema["$defs"]["AskUserAnswer"]["required"], json!(["question"]));
    assert_eq!(ask.input_schema["$defs"]["_Question"]["properties"]["header"]["maxLength"], 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_lifecycle_with_dependencies() {
    let scratch = Scratch::new();
    let host = host(&scratch).await;
    let s = Arc::new(AgentState::new());

    assert_eq!(ok(&run(&host, &s, "TaskList", json!({})).await), "No tasks available.");
    for (i, subject) in ["Design", "Build", "Ship"].iter().enumerate() {
        let r = run(
            &host,
            &s,
            "TaskCreate",
            json!({"subject": subject, "description": format!("{subject} it"), "metadata": null}),
        )
        .await;
        assert_eq!(ok(&r), format!("Task (id={}) created successfully: {subject}", i + 1));
    }
    let r = run(
        &host,
        &s,
        "TaskCreate",
        json!({"subject": "Docs", "description": "", "metadata": {"priority": "high", "n": 1.0, "x": null}}),
    )
    .await;
    assert_eq!(ok(&r), "Task (id=4) created successfully: Docs");

    // Ship waits for Design and Build.
    let r = run(&host, &s, "TaskUpdate", json!({"task_id": "3", "add_blocked_by": ["1", "2"]})).await;
    assert_eq!(ok(&r), "Update task (id=3) add_blocked_by.");
    assert_eq!(
        ok(&run(&host, &s, "TaskList", json!({})).await),
        "1 [pending] Design\n2 [pending] Build\n3 [pending] Ship[blocked by 1, 2]\n4 [pending] Docs"
    );
    assert_eq!(
        ok(&run(&host, &s, "TaskGet", json!({"task_id": "1"})).await),
        "Task (id=1): Design\nStatus: pending\nDescription: Design it\nBlocks: #3"
    );
    assert_eq!(
        ok(&run(&host, &s, "TaskGet", json!({"task_id": "4"})).await),
        "Task (id=4): Docs\nStatus: pending\nDescription: \nMetadata: {'priority': 'high', 'n': 1.0, 'x': None}"
    );

    // Deviations: blocked transitions, cycles, unknown ids, self-references.
    let before = s.get("tasks").await.unwrap();
    let e = err(&run(&host, &s, "TaskUpdate", json!({"task_id": "3", "status": "in_progress", "owner": "me"})).await);
    assert_eq!(
        e,
        "TaskUpdateError: the task (id=3) cannot become in_progress: it is blocked by unfinished tasks #1 [pending], #2 [pending]. \
         Complete them first (or delete them if no longer needed). The task (id=3) was not changed."
    );
    let e = err(&run(&host, &s, "TaskUpdate", json!({"task_id": "1", "add_blocked_by": ["3"]})).await);
    assert!(e.contains("would create a dependency cycle: 3 → 1 → 3"), "{e}");
    let e = err(&run(&host, &s, "TaskUpdate", json!({"task_id": "1", "add_blocks": ["4", "9"]})).await);
    assert!(e.starts_with("TaskUpdateError: add_blocks names a task that does not exist: 9."), "{e}");
    let e = err(&run(&host, &s, "TaskUpdate", json!({"task_id": "4", "add_blocks": ["4"]})).await);
    assert!(e.starts_with("TaskUpdateError: a task cannot depend on itself"), "{e}");
    assert_eq!(s.get("tasks").await.unwrap(), before, "refused updates change nothing");

    // Reference errors.
    assert_eq!(err(&run(&host, &s, "TaskGet", json!({"task_id": "42"})).await), "Task not found");
    assert_eq!(
        err(&run(&host, &s, "TaskUpdate", json!({"task_id": "nonexistent-id", "subject": "x"})).await),
        "TaskNotFoundError: The task (id=nonexistent-id) does not exist."
    );

    // Finish Design, drop Build: Ship is unblocked.
    assert_eq!(
        ok(&run(&host, &s, "TaskUpdate", json!({"task_id": "1", "status": "completed"})).await),
        format!("Update task (id=1) status.{HINT}")
    );
    assert_eq!(
        ok(&run(&host, &s, "TaskUpdate", json!({"task_id": "2", "status": "deleted"})).await),
        "Task (id=2) has been deleted."
    );
    assert_eq!(
        ok(&run(
            &host,
            &s,
            "TaskUpdate",
            json!({"task_id": "3", "status": "in_progress", "owner": "me", "subject": ""})
        )
        .await),
        "Update task (id=3) status, owner."
    );
    assert_eq!(
        ok(&run(&host, &s, "TaskList", json!({})).await),
        "1 [completed] Design\n3 [in_progress] Ship(me)[blocked by 1]\n4 [pending] Docs"
    );
    let r = run(&host, &s, "TaskUpdate", json!({"task_id": "3", "status": "completed", "metadata": {"pr": 7}})).await;
    assert_eq!(ok(&r), format!("Update task (id=3) status, metadata.{HINT}"));
    assert_eq!(
        ok(&run(&host, &s, "TaskUpdate", json!({"task_id": "3"})).await),
        format!(
            "No updates were made to the task (id=3). Make sure you provided at least one field to update and the values are correct.{HINT}"
        )
    );

    // Deleting the highest id frees it.
    ok(&run(&host, &s, "TaskUpdate", json!({"task_id": "4", "status": "deleted"})).await);
    assert_eq!(
        ok(&run(&host, &s, "TaskCreate", json!({"subject": "Again", "description": "d"})).await),
        "Task (id=4) created successfully: Again"
    );

    // What is stored: the reference's shape, UTC timestamps.
    let stored = s.get("tasks").await.unwrap().expect("tasks are stored");
    let tasks = stored.as_array().unwrap();
    assert_eq!(tasks.iter().map(|t| t["id"].as_str().unwrap()).collect::<Vec<_>>(), ["1", "3", "4"]);
    assert_eq!(tasks[1]["state"], "completed");
    assert_eq!(tasks[1]["blocked_by"], json!(["1"]));
    assert_eq!(tasks[0]["blocks"], json!(["3"]));
    assert_eq!(tasks[1]["metadata"], json!({"pr": 7}));
    let created = tasks[0]["created_at"].as_str().unwrap();
    assert!(created.ends_with("+00:00") && created.len() == 32 && created.starts_with("20"), "{created}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_violations_and_explore_mode_are_refused_before_the_tool_runs() {
    let scratch = Scratch::new();
    let host = host(&scratch).await;
    let s = Arc::new(AgentState::new());
    let r = run(&host, &s, "TaskUpdate", json!({"task_id": "1", "status": "done"})).await;
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    assert!(r.text().contains("status"), "the error names the field: {}", r.text());
    let r = run(&host, &s, "TaskCreate", json!({"subject": "no description"})).await;
    assert!(r.state == ResultState::Error && r.text().contains("description"), "{r:?}");
    // The task tools are not read-only: explore mode denies them (spec §13.20).
    let r = host
        .call(CallRequest::new("TaskList", "{}").mode(Mode::Explore).session(s.clone()))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response();
    assert_eq!(r.state, ResultState::Denied, "{r:?}");
    assert_eq!(s.get("tasks").await.unwrap(), None, "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_tool_without_the_state_grant_says_so() {
    let scratch = Scratch::new();
    let mut settings: Settings = scratch.settings();
    settings.builtins = false;
    // The same component loaded as a plugin: plugins get nothing by default.
    settings.plugins.push(builtin_wasm("tool-task-create"));
    let host = scratch.host(settings).await;
    let r = call(&host, "TaskCreate", json!({"subject": "s", "description": "d"}), PermissionAnswer::Deny).await;
    let e = err(&r);
    assert!(e.starts_with("CreateTaskError: the task list could not be saved in the agent state: "), "{e}");
    assert!(
        e.contains("denied: state is not granted to tool 'TaskCreate'") && e.contains("--grant TaskCreate=state"),
        "the missing capability is named: {e}"
    );
    assert_eq!(host.state().get("tasks").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_task_list_is_reported_and_left_alone() {
    let scratch = Scratch::new();
    let host = host(&scratch).await;
    let s = Arc::new(AgentState::new());
    s.set("tasks", json!({"not": "a list"}), StateBounds::NONE).await.unwrap();
    for (tool, input) in [
        ("TaskList", json!({})),
        ("TaskGet", json!({"task_id": "1"})),
        ("TaskUpdate", json!({"task_id": "1", "owner": "x"})),
    ] {
        let e = err(&run(&host, &s, tool, input).await);
        assert!(
            e.starts_with("TaskStateError: the task list stored in the agent state (key \"tasks\") is not valid: "),
            "{tool}: {e}"
        );
    }
    let e = err(&run(&host, &s, "TaskCreate", json!({"subject": "s", "description": "d"})).await);
    assert!(e.starts_with("CreateTaskError: the task list stored in the agent state"), "{e}");
    assert_eq!(s.get("tasks").await.unwrap(), Some(json!({"not": "a list"})), "never overwritten");
}

/// Parallel calls of concurrency-safe task tools in one session must not lose
/// updates. Each call reads the list and writes it back, so this holds only
/// once the host serialises state-injected calls per session or offers an
/// atomic update (see docs/tools.md, Tasks, "Concurrent calls").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_creates_in_one_session_lose_nothing() {
    let scratch = Scratch::new();
    let host = host(&scratch).await;
    let s = Arc::new(AgentState::new());
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let (host, s) = (host.clone(), s.clone());
            tokio::spawn(async move {
                run(&host, &s, "TaskCreate", json!({"subject": format!("t{i}"), "description": ""})).await
            })
        })
        .collect();
    for c in calls {
        ok(&c.await.unwrap());
    }
    let stored = s.get("tasks").await.unwrap().unwrap();
    let mut ids: Vec<u32> =
        stored.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().parse().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, (1..=8).collect::<Vec<_>>(), "{stored:#}");
}

// ---- the CLI: sessions across processes ---------------------------------

#[test]
fn cli_session_keeps_tasks_across_processes() {
    let scratch = Scratch::new();
    let out = scratch.cli(&[
        "call",
        "--session",
        "proj",
        "TaskCreate",
        r#"{"subject": "Write docs", "description": "the tasks section"}"#,
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim_end(), "Task (id=1) created successfully: Write docs");

    let out = scratch.cli(&["call", "--session", "proj", "TaskCreate", r#"{"subject": "Review", "description": ""}"#]);
    assert!(out.status.success(), "{:?}", text(&out));
    let out = scratch.cli(&[
        "call",
        "--session",
        "proj",
        "TaskUpdate",
        r#"{"task_id": "2", "add_blocked_by": ["1"], "owner": "ana"}"#,
    ]);
    assert_eq!(text(&out).0.trim_end(), "Update task (id=2) add_blocked_by, owner.");

    // A new process sees the list.
    let out = scratch.cli(&["call", "--session", "proj", "TaskList", "{}"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim_end(), "1 [pending] Write docs\n2 [pending] Review(ana)[blocked by 1]");

    // A refusal through the CLI is an error exit with the message.
    let out = scratch.cli(&["call", "--session", "proj", "TaskUpdate", r#"{"task_id": "2", "status": "completed"}"#]);
    assert!(!out.status.success());
    assert!(text(&out).0.contains("blocked by unfinished task #1 [pending]"), "{:?}", text(&out));

    // Another session, and no session, start empty.
    let out = scratch.cli(&["call", "--session", "other", "TaskList"]);
    assert_eq!(text(&out).0.trim_end(), "No tasks available.");
    let out = scratch.cli(&["call", "TaskList"]);
    assert_eq!(text(&out).0.trim_end(), "No tasks available.");

    // The session file holds the list in the documented shape.
    let file = scratch.cli_sessions().join("proj.json");
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).expect("the session file")).unwrap();
    assert_eq!(saved["values"]["tasks"][1]["blocked_by"], json!(["1"]), "{saved:#}");
}

#[test]
fn cli_reports_a_corrupt_session_file() {
    let scratch = Scratch::new();
    let dir = scratch.cli_sessions();
    std::fs::create_dir_all(&dir).unwrap();

    // Not JSON at all: the host refuses to open the session, nothing runs.
    let file = dir.join("broken.json");
    std::fs::write(&file, b"{not json").unwrap();
    let out = scratch.cli(&["call", "--session", "broken", "TaskList"]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("corrupt") && stderr.contains("broken.json"), "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), b"{not json", "the file is left as it was");

    // Valid state, but the task list in it is not a list of tasks: the tools say so.
    let file = dir.join("odd.json");
    let odd = json!({"version": 1, "read_cache": [], "values": {"tasks": [{"subject": 3}]}});
    std::fs::write(&file, odd.to_string()).unwrap();
    let out = scratch.cli(&["call", "--session", "odd", "TaskCreate", r#"{"subject": "s", "description": "d"}"#]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("CreateTaskError: the task list stored in the agent state (key \"tasks\") is not valid"),
        "{stdout}\n{stderr}"
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(saved["values"]["tasks"], odd["values"]["tasks"], "not overwritten");
}

// ---- AskUser -------------------------------------------------------------

fn questions() -> Value {
    json!({"questions": [
        {"question": "Which database?", "header": "Database", "context": "The service stores ~1 GB.",
         "options": [
            {"label": "Postgres (Recommended)", "description": "A server", "preview": "docker run postgres"},
            {"label": "SQLite", "description": "A file"}]},
        {"question": "Which features?", "header": "Features", "multi_select": true,
         "options": [{"label": "Export", "description": "CSV"}, {"label": "Import", "description": "CSV"}]}
    ]})
}

fn answers() -> Value {
    json!({"answers": [
        {"question": "Which database?", "selected": ["SQLite"], "other": null},
        {"question": "Which features?", "selected": [], "other": "only export, for now"}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_round_trip_through_external_execution() {
    let scratch = Scratch::new();
    let host = host(&scratch).await;
    for mode in [Mode::Default, Mode::Explore, Mode::DontAsk] {
        let outcome = host
            .call(CallRequest::new("AskUser", questions().to_string()).mode(mode))
            .finish(PermissionAnswer::Deny)
            .await;
        let Outcome::External(ext) = outcome else {
            panic!("{mode:?}: AskUser must stop for external execution: {outcome:?}")
        };
        assert_eq!(ext.kind, "REQUIRE_EXTERNAL_EXECUTION");
        assert_eq!(ext.tool, "AskUser");
        assert_eq!(ext.input, questions());
        assert!(ext.result_metadata_schema.is_some());

        let result = ExternalResult {
            output: "The user chose SQLite, and only the export.".into(),
            state: None,
            metadata: answers().as_object().unwrap().clone(),
        };
        let r = host.complete_external(&ext, result).expect("a valid answer is accepted");
        assert_eq!(r.state, ResultState::Success);
        assert_eq!(r.id, ext.call_id);
        assert_eq!(r.text(), "The user chose SQLite, and only the export.");
        assert_eq!(serde_json::Value::Object(r.metadata.clone()), answers());

        // Metadata that does not follow AskUserMetadata is refused.
        for bad in [
            json!({"answers": [{"selected": ["SQLite"]}]}),
            json!({"answers": [{"question": "q", "selected": "SQLite"}]}),
            json!({}),
        ] {
            let result = ExternalResult { output: "x".into(), state: None, metadata: bad.as_object().unwrap().clone() };
            let e = host.complete_external(&ext, result).expect_err("invalid metadata is refused");
            assert!(
                matches!(&e, toolhost::ExternalResultError::MetadataMismatch { tool, .. } if tool == "AskUser"),
                "{e}"
            );
            assert!(e.to_string().contains("does not match its schema"), "{e}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_refuses_what_the_schema_cannot_express() {
    let scratch = Scratch::new();
    let host = host(&scratch).await;
    let ask = async |input: Value, mode: Mode| {
        host.call(CallRequest::new("AskUser", input.to_string()).mode(mode)).finish(PermissionAnswer::AllowOnce).await
    };

    let mut dup_labels = questions();
    dup_labels["questions"][0]["options"][1]["label"] = json!("Postgres (Recommended)");
    let mut dup_questions = questions();
    dup_questions["questions"][1]["question"] = json!("Which database?");
    let mut multi_preview = questions();
    multi_preview["questions"][1]["options"][0]["preview"] = json!("a,b,c");
    let cases = [
        (dup_labels, "has the option label \"Postgres (Recommended)\" more than once"),
        (dup_questions, "questions 1 and 2 ask the same question \"Which database?\""),
        (multi_preview, "is multi_select, but its option \"Export\" has a preview"),
    ];
    for (input, problem) in cases {
        for mode in [Mode::Default, Mode::Bypass, Mode::DontAsk, Mode::AcceptEdits] {
            let r = match ask(input.clone(), mode).await {
                Outcome::Response(r) => r,
                Outcome::External(e) => panic!("{mode:?}: invalid input must not reach the user: {e:?}"),
            };
            assert_eq!(r.state, ResultState::Denied, "{mode:?}: {r:?}");
            let t = r.text();
            assert!(t.starts_with("Invalid AskUser input: ") && t.contains(problem), "{mode:?}: {t}");
        }
        // Explore denies it too (with the engine's own message).
        match ask(input.clone(), Mode::Explore).await {
            Outcome::Response(r) => assert_eq!(r.state, ResultState::Denied, "{r:?}"),
            Outcome::External(e) => panic!("explore: invalid input must not reach the user: {e:?}"),
        }
    }

    // Schema limits are the host's schema validation's job.
    let mut long_header = questions();
    long_header["questions"][0]["header"] = json!("Thirteen char");
    let mut one_option = questions();
    one_option["questions"][0]["options"] = json!([{"label": "Only", "description": "d"}]);
    for input in [long_header, one_option, json!({"questions": []})] {
        match ask(input.clone(), Mode::Default).await {
            Outcome::Response(r) => assert_eq!(r.state, ResultState::Error, "{input}: {r:?}"),
            Outcome::External(e) => panic!("{input}: must be refused: {e:?}"),
        }
    }
}

#[test]
fn ask_user_round_trip_through_the_cli() {
    let scratch = Scratch::new();
    let out = scratch.cli(&["call", "AskUser", &questions().to_string()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(4), "the exit code for external execution: {stdout}\n{stderr}");
    assert!(stderr.contains("requires external execution"), "{stderr}");
    let event: Value = serde_json::from_str(stdout.trim()).expect("the event is printed as JSON");
    assert_eq!(event["type"], "REQUIRE_EXTERNAL_EXECUTION");
    assert_eq!(event["tool"], "AskUser");

    let event_file = scratch.outside("event.json");
    std::fs::write(&event_file, stdout.trim()).unwrap();
    let result_file = scratch.outside("result.json");
    std::fs::write(&result_file, json!({"output": "SQLite, export only", "metadata": answers()}).to_string()).unwrap();
    let out = scratch.cli(&[
        "resume",
        "--json",
        "--event",
        event_file.to_str().unwrap(),
        "--result",
        result_file.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let response: Value = serde_json::from_str(stdout.trim()).expect("the response as JSON");
    assert_eq!(response["state"], "success");
    assert_eq!(response["metadata"], answers());

    // A result whose metadata breaks the schema is refused.
    std::fs::write(&result_file, json!({"output": "x", "metadata": {"answers": [{"selected": []}]}}).to_string())
        .unwrap();
    let out =
        scratch.cli(&["resume", "--event", event_file.to_str().unwrap(), "--result", result_file.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("does not match its schema"), "{:?}", text(&out));

    // Invalid questions are denied before anything is printed as an event.
    let mut dup = questions();
    dup["questions"][1]["question"] = json!("Which database?");
    let out = scratch.cli(&["call", "AskUser", &dup.to_string()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "denied: {stdout}\n{stderr}");
    assert!(stderr.contains("question texts must be unique"), "{stderr}");
}
