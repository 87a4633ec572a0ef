//! Spec §14.12 conformance cases and the deliberate deviations.

use super::*;
use serde_json::json;

const T0: &str = "2026-01-01T00:00:00.000000+00:00";

fn create(tasks: &mut Tasks, subject: &str) -> String {
    tasks.create(
        CreateInput { subject: subject.into(), description: format!("about {subject}"), metadata: None },
        T0.into(),
    )
}

fn with(n: usize) -> Tasks {
    let mut tasks = Tasks::default();
    for i in 1..=n {
        create(&mut tasks, &format!("Task {i}"));
    }
    tasks
}

fn upd(v: Value) -> UpdateInput {
    serde_json::from_value(v).expect("a valid update input")
}

fn task<'a>(tasks: &'a Tasks, id: &str) -> &'a Task {
    tasks.find(id).unwrap()
}

// ---- §14.12 -------------------------------------------------------------

#[test]
fn create_first_task() {
    let mut tasks = Tasks::default();
    let text =
        tasks.create(CreateInput { subject: "Test Task 1".into(), description: "d".into(), metadata: None }, T0.into());
    assert_eq!(text, "Task (id=1) created successfully: Test Task 1");
    let t = task(&tasks, "1");
    assert_eq!(t.subject, "Test Task 1");
    assert_eq!(t.description, "d");
    assert_eq!(t.metadata, Map::new());
    assert_eq!(t.state, TaskState::Pending);
    assert_eq!(t.owner, None);
    assert!(t.blocks.is_empty() && t.blocked_by.is_empty());
    assert_eq!(t.created_at, T0);
}

#[test]
fn stored_json_has_reference_field_names_and_order() {
    let tasks = with(1);
    let v: Value = serde_json::from_str(&tasks.to_state()).unwrap();
    let keys: Vec<&str> = v[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["subject", "description", "metadata", "created_at", "state", "id", "owner", "blocks", "blocked_by"]
    );
    assert_eq!(v[0]["state"], "pending");
    assert_eq!(v[0]["owner"], Value::Null);
    assert_eq!(Tasks::from_state(Some(&tasks.to_state())).unwrap(), tasks, "round trip");
}

#[test]
fn list_empty_and_three() {
    assert_eq!(Tasks::default().list(), "No tasks available.");
    assert_eq!(with(3).list(), "1 [pending] Task 1\n2 [pending] Task 2\n3 [pending] Task 3");
}

#[test]
fn list_owner_and_blockers_without_spaces() {
    let mut tasks = with(3);
    tasks.update(upd(json!({"task_id": "3", "owner": "alice", "add_blocked_by": ["1", "2"]}))).unwrap();
    tasks.update(upd(json!({"task_id": "1", "status": "completed"}))).unwrap();
    assert_eq!(
        tasks.list(),
        "1 [completed] Task 1\n2 [pending] Task 2\n3 [pending] Task 3(alice)[blocked by 1, 2]",
        "completed blockers are listed too"
    );
}

#[test]
fn get_with_metadata() {
    let mut tasks = Tasks::default();
    tasks.create(
        CreateInput {
            subject: "Test Task".into(),
            description: "This is a test task with details".into(),
            metadata: Some(json!({"priority": "high"}).as_object().unwrap().clone()),
        },
        T0.into(),
    );
    assert_eq!(
        tasks.get("1").unwrap(),
        "Task (id=1): Test Task\nStatus: pending\nDescription: This is a test task with details\nMetadata: {'priority': 'high'}"
    );
}

#[test]
fn get_with_everything() {
    let mut tasks = with(3);
    tasks
        .update(upd(json!({"task_id": "2", "owner": "bob", "add_blocked_by": ["1"], "add_blocks": ["3"],
            "metadata": {"n": 1, "ok": true, "none": null, "s": "it's"}})))
        .unwrap();
    assert_eq!(
        tasks.get("2").unwrap(),
        "Task (id=2): Task 2\nStatus: pending\nDescription: about Task 2\nOwner: bob\nBlocked by: #1\nBlocks: #3\nMetadata: {'n': 1, 'ok': True, 's': \"it's\"}"
    );
}

#[test]
fn get_missing() {
    assert_eq!(with(1).get("9").unwrap_err().to_string(), "Task not found");
}

#[test]
fn update_each_field() {
    let mut tasks = with(1);
    assert_eq!(tasks.update(upd(json!({"task_id": "1", "subject": "New"}))).unwrap(), "Update task (id=1) subject.");
    assert_eq!(
        tasks.update(upd(json!({"task_id": "1", "description": "D"}))).unwrap(),
        "Update task (id=1) description."
    );
    assert_eq!(
        tasks.update(upd(json!({"task_id": "1", "status": "in_progress"}))).unwrap(),
        "Update task (id=1) status."
    );
    assert_eq!(tasks.update(upd(json!({"task_id": "1", "owner": "me"}))).unwrap(), "Update task (id=1) owner.");
    assert_eq!(
        tasks.update(upd(json!({"task_id": "1", "metadata": {"k": "v"}}))).unwrap(),
        "Update task (id=1) metadata."
    );
    let t = task(&tasks, "1");
    assert_eq!(
        (t.subject.as_str(), t.description.as_str(), t.state, t.owner.as_deref()),
        ("New", "D", TaskState::InProgress, Some("me"))
    );
    assert_eq!(t.metadata, *json!({"k": "v"}).as_object().unwrap());
}

#[test]
fn update_fields_listed_in_reference_order() {
    let mut tasks = with(3);
    let text = tasks
        .update(upd(json!({"task_id": "2", "metadata": {"a": 1}, "owner": "o", "status": "pending",
            "add_blocked_by": ["1"], "add_blocks": ["3"], "description": "", "subject": "S"})))
        .unwrap();
    assert_eq!(text, "Update task (id=2) subject, description, add_blocks, add_blocked_by, status, owner, metadata.");
}

#[test]
fn nothing_to_update() {
    let mut tasks = with(1);
    let expected = "No updates were made to the task (id=1). Make sure you provided at least one field to update and the values are correct.";
    assert_eq!(tasks.update(upd(json!({"task_id": "1"}))).unwrap(), expected);
    // null fields, an empty subject, empty metadata: all "no update".
    assert_eq!(
        tasks
            .update(upd(json!({"task_id": "1", "subject": "", "metadata": {}, "owner": null, "add_blocks": []})))
            .unwrap(),
        expected
    );
}

#[test]
fn empty_subject_ignored_empty_description_applied() {
    let mut tasks = with(1);
    let text = tasks.update(upd(json!({"task_id": "1", "subject": "", "description": ""}))).unwrap();
    assert_eq!(text, "Update task (id=1) description.");
    assert_eq!(task(&tasks, "1").subject, "Task 1");
    assert_eq!(task(&tasks, "1").description, "");
}

#[test]
fn completion_suffix_whenever_completed_after_update() {
    let mut tasks = with(1);
    let text = tasks.update(upd(json!({"task_id": "1", "status": "completed"}))).unwrap();
    assert_eq!(text, format!("Update task (id=1) status.{COMPLETED_HINT}"));
    assert!(COMPLETED_HINT.starts_with("\n\nTask completed. Call TaskList now"));
    // A later update of another field still carries the hint.
    let text = tasks.update(upd(json!({"task_id": "1", "owner": "x"}))).unwrap();
    assert_eq!(text, format!("Update task (id=1) owner.{COMPLETED_HINT}"));
    let text = tasks.update(upd(json!({"task_id": "1"}))).unwrap();
    assert!(text.starts_with("No updates were made") && text.ends_with(COMPLETED_HINT));
}

#[test]
fn delete_cleans_relations() {
    // 1 blocks 2 blocks 3; delete 2.
    let mut tasks = with(3);
    tasks.update(upd(json!({"task_id": "1", "add_blocks": ["2"]}))).unwrap();
    tasks.update(upd(json!({"task_id": "3", "add_blocked_by": ["2"]}))).unwrap();
    assert_eq!(task(&tasks, "2").blocked_by, ["1"]);
    assert_eq!(task(&tasks, "2").blocks, ["3"]);
    let text = tasks.update(upd(json!({"task_id": "2", "status": "deleted"}))).unwrap();
    assert_eq!(text, "Task (id=2) has been deleted.");
    assert!(tasks.find("2").is_none());
    assert!(task(&tasks, "1").blocks.is_empty());
    assert!(task(&tasks, "3").blocked_by.is_empty());
}

#[test]
fn delete_returns_at_once_after_earlier_fields() {
    let mut tasks = with(1);
    let text = tasks.update(upd(json!({"task_id": "1", "subject": "x", "status": "deleted", "owner": "o"}))).unwrap();
    assert_eq!(text, "Task (id=1) has been deleted.");
    assert_eq!(tasks.list(), "No tasks available.");
}

#[test]
fn add_blocks_and_blocked_by_set_both_sides() {
    let mut tasks = with(3);
    assert_eq!(
        tasks.update(upd(json!({"task_id": "1", "add_blocks": ["2", "3"]}))).unwrap(),
        "Update task (id=1) add_blocks."
    );
    assert_eq!(task(&tasks, "1").blocks, ["2", "3"]);
    assert_eq!(task(&tasks, "2").blocked_by, ["1"]);
    assert_eq!(task(&tasks, "3").blocked_by, ["1"]);
    assert_eq!(
        tasks.update(upd(json!({"task_id": "3", "add_blocked_by": ["2"]}))).unwrap(),
        "Update task (id=3) add_blocked_by."
    );
    assert_eq!(task(&tasks, "2").blocks, ["3"]);
    assert_eq!(task(&tasks, "3").blocked_by, ["1", "2"]);
}

#[test]
fn existing_relations_and_duplicates_are_not_repeated() {
    let mut tasks = with(2);
    tasks.update(upd(json!({"task_id": "1", "add_blocks": ["2", "2"]}))).unwrap();
    assert_eq!(task(&tasks, "1").blocks, ["2"]);
    assert_eq!(task(&tasks, "2").blocked_by, ["1"]);
    let text = tasks.update(upd(json!({"task_id": "1", "add_blocks": ["2"]}))).unwrap();
    assert!(text.starts_with("No updates were made"), "already there: not an update: {text}");
    let text = tasks.update(upd(json!({"task_id": "2", "add_blocked_by": ["1"]}))).unwrap();
    assert!(text.starts_with("No updates were made"), "{text}");
    assert_eq!(task(&tasks, "2").blocked_by, ["1"]);
}

#[test]
fn update_missing() {
    let err = with(1).update(upd(json!({"task_id": "nonexistent-id", "subject": "x"}))).unwrap_err();
    assert_eq!(err.to_string(), "TaskNotFoundError: The task (id=nonexistent-id) does not exist.");
}

#[test]
fn deleting_the_highest_id_reuses_it() {
    let mut tasks = with(3);
    tasks.update(upd(json!({"task_id": "3", "status": "deleted"}))).unwrap();
    assert_eq!(create(&mut tasks, "again"), "Task (id=3) created successfully: again");
    tasks.update(upd(json!({"task_id": "1", "status": "deleted"}))).unwrap();
    assert_eq!(create(&mut tasks, "four"), "Task (id=4) created successfully: four", "a lower id is not reused");
}

#[test]
fn ids_that_are_not_integers_are_skipped_by_allocation() {
    let mut tasks = Tasks::from_state(Some(
        r#"[{"subject":"a","description":"","id":"alpha"},{"subject":"b","description":"","id":"7"}]"#,
    ))
    .unwrap();
    assert_eq!(tasks.next_id(), "8");
    assert_eq!(create(&mut tasks, "c"), "Task (id=8) created successfully: c");
}

#[test]
fn metadata_merge_null_deletes_and_order_is_kept() {
    let mut tasks = with(1);
    tasks.update(upd(json!({"task_id": "1", "metadata": {"a": 1, "b": 2, "c": 3}}))).unwrap();
    tasks.update(upd(json!({"task_id": "1", "metadata": {"a": null, "b": 20, "d": 4}}))).unwrap();
    assert_eq!(tasks.get("1").unwrap().lines().last().unwrap(), "Metadata: {'b': 20, 'c': 3, 'd': 4}");
    // Deleting an absent key is harmless, and still counts as an update.
    assert_eq!(
        tasks.update(upd(json!({"task_id": "1", "metadata": {"zzz": null}}))).unwrap(),
        "Update task (id=1) metadata."
    );
}

#[test]
fn empty_owner_is_set_but_not_shown() {
    let mut tasks = with(1);
    assert_eq!(tasks.update(upd(json!({"task_id": "1", "owner": ""}))).unwrap(), "Update task (id=1) owner.");
    assert_eq!(task(&tasks, "1").owner.as_deref(), Some(""));
    assert_eq!(tasks.list(), "1 [pending] Task 1");
    assert!(!tasks.get("1").unwrap().contains("Owner"));
}

#[test]
fn state_parsing() {
    assert_eq!(Tasks::from_state(None).unwrap(), Tasks::default());
    assert_eq!(Tasks::from_state(Some("null")).unwrap(), Tasks::default());
    assert_eq!(Tasks::from_state(Some("[]")).unwrap(), Tasks::default());
    // Missing optional fields take their defaults.
    let t = Tasks::from_state(Some(r#"[{"subject":"s","description":"d","id":"1"}]"#)).unwrap();
    assert_eq!(t.tasks[0].state, TaskState::Pending);
    for bad in [
        "{not json",
        r#"{"a": 1}"#,
        r#"[{"subject": 1}]"#,
        r#"[{"subject":"s","description":"d","id":"1","state":"done"}]"#,
    ] {
        let err = Tasks::from_state(Some(bad)).unwrap_err();
        assert!(matches!(err, TaskError::CorruptState(_)), "{bad}");
        assert!(
            err.to_string().starts_with("the task list stored in the agent state (key \"tasks\") is not valid"),
            "{err}"
        );
    }
    let dup = r#"[{"subject":"a","description":"","id":"1"},{"subject":"b","description":"","id":"1"}]"#;
    assert!(Tasks::from_state(Some(dup)).unwrap_err().to_string().contains("the id 1 is used by more than one task"));
}

#[test]
fn input_parsing_accepts_nulls() {
    let u = upd(json!({"task_id": "1", "subject": null, "description": null, "add_blocks": null, "status": null,
        "add_blocked_by": null, "owner": null, "metadata": null}));
    assert!(u.subject.is_none() && u.status.is_none() && u.metadata.is_none());
    let c: CreateInput = serde_json::from_value(json!({"subject": "s", "description": "d", "metadata": null})).unwrap();
    assert!(c.metadata.is_none());
    let _: ListInput = serde_json::from_value(json!({"anything": 1})).unwrap();
    assert!(serde_json::from_value::<UpdateInput>(json!({"task_id": "1", "status": "done"})).is_err());
}

// ---- deviations ---------------------------------------------------------

#[test]
fn unknown_ids_are_refused_and_nothing_changes() {
    let mut tasks = with(2);
    let before = tasks.clone();
    let err = tasks
        .update(upd(json!({"task_id": "1", "subject": "changed", "add_blocks": ["2", "7", "9", "7"]})))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "TaskUpdateError: add_blocks names tasks that do not exist: 7, 9. Use TaskList to see the existing ids. The task (id=1) was not changed."
    );
    assert_eq!(tasks, before, "all or nothing: the subject was not changed either");
    let err = tasks.update(upd(json!({"task_id": "1", "add_blocked_by": ["5"]}))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "TaskUpdateError: add_blocked_by names a task that does not exist: 5. Use TaskList to see the existing ids. The task (id=1) was not changed."
    );
    assert_eq!(tasks, before);
}

#[test]
fn self_references_are_refused() {
    let mut tasks = with(2);
    let before = tasks.clone();
    for field in ["add_blocks", "add_blocked_by"] {
        let err = tasks.update(upd(json!({"task_id": "2", field: ["1", "2"]}))).unwrap_err();
        assert_eq!(
            err,
            TaskError::SelfReference {
                task: "2".into(),
                field: if field == "add_blocks" { "add_blocks" } else { "add_blocked_by" }
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "TaskUpdateError: a task cannot depend on itself: {field} of task 2 contains its own id. The task (id=2) was not changed."
            )
        );
    }
    assert_eq!(tasks, before);
}

#[test]
fn two_task_cycle_is_refused() {
    let mut tasks = with(2);
    tasks.update(upd(json!({"task_id": "1", "add_blocks": ["2"]}))).unwrap();
    let before = tasks.clone();
    let err = tasks.update(upd(json!({"task_id": "1", "add_blocked_by": ["2"]}))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "TaskUpdateError: adding \"2 blocks 1\" would create a dependency cycle: 2 → 1 → 2 (\"a → b\" means a blocks b). The task (id=1) was not changed."
    );
    let err = tasks.update(upd(json!({"task_id": "2", "add_blocks": ["1"]}))).unwrap_err();
    assert!(err.to_string().contains("would create a dependency cycle: 2 → 1 → 2"), "{err}");
    assert_eq!(tasks, before);
}

#[test]
fn longer_cycle_is_refused_with_its_path() {
    // 1 → 2 → 3 → 4; then 4 blocks 1 would close 4 → 1 → 2 → 3 → 4.
    let mut tasks = with(4);
    tasks.update(upd(json!({"task_id": "1", "add_blocks": ["2"]}))).unwrap();
    tasks.update(upd(json!({"task_id": "2", "add_blocks": ["3"]}))).unwrap();
    tasks.update(upd(json!({"task_id": "4", "add_blocked_by": ["3"]}))).unwrap();
    let err = tasks.update(upd(json!({"task_id": "1", "add_blocked_by": ["4"]}))).unwrap_err();
    match &err {
        TaskError::Cycle { path, from, to, .. } => {
            assert_eq!((from.as_str(), to.as_str()), ("4", "1"));
            assert_eq!(path, &["4", "1", "2", "3", "4"]);
        }
        other => panic!("{other:?}"),
    }
    // A diamond is not a cycle.
    tasks.update(upd(json!({"task_id": "1", "add_blocks": ["3", "4"]}))).unwrap();
}

#[test]
fn cycle_within_one_update_is_refused() {
    let mut tasks = with(2);
    let err = tasks.update(upd(json!({"task_id": "1", "add_blocks": ["2"], "add_blocked_by": ["2"]}))).unwrap_err();
    assert!(err.to_string().contains("dependency cycle: 2 → 1 → 2"), "{err}");
    assert_eq!(tasks, with(2), "the add_blocks part was rolled back too");
}

#[test]
fn one_sided_relations_from_an_edited_file_still_count_for_cycles() {
    // Only task 2 records that 1 blocks it.
    let mut tasks = Tasks::from_state(Some(
        r#"[{"subject":"a","description":"","id":"1"},{"subject":"b","description":"","id":"2","blocked_by":["1"]}]"#,
    ))
    .unwrap();
    assert!(matches!(tasks.update(upd(json!({"task_id": "2", "add_blocks": ["1"]}))), Err(TaskError::Cycle { .. })));
}

#[test]
fn cannot_start_or_complete_while_blocked() {
    let mut tasks = with(3);
    tasks.update(upd(json!({"task_id": "3", "add_blocked_by": ["1", "2"]}))).unwrap();
    tasks.update(upd(json!({"task_id": "2", "status": "in_progress"}))).unwrap();
    let before = tasks.clone();
    let err = tasks.update(upd(json!({"task_id": "3", "owner": "me", "status": "in_progress"}))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "TaskUpdateError: the task (id=3) cannot become in_progress: it is blocked by unfinished tasks #1 [pending], #2 [in_progress]. \
         Complete them first (or delete them if no longer needed). The task (id=3) was not changed."
    );
    let err = tasks.update(upd(json!({"task_id": "3", "status": "completed"}))).unwrap_err();
    assert!(matches!(err, TaskError::Blocked { target: TaskState::Completed, .. }));
    assert_eq!(tasks, before);

    tasks.update(upd(json!({"task_id": "1", "status": "completed"}))).unwrap();
    let err = tasks.update(upd(json!({"task_id": "3", "status": "in_progress"}))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "TaskUpdateError: the task (id=3) cannot become in_progress: it is blocked by unfinished task #2 [in_progress]. \
         Complete it first (or delete it if no longer needed). The task (id=3) was not changed."
    );
    tasks.update(upd(json!({"task_id": "2", "status": "completed"}))).unwrap();
    assert_eq!(
        tasks.update(upd(json!({"task_id": "3", "status": "in_progress"}))).unwrap(),
        "Update task (id=3) status."
    );
}

#[test]
fn deleting_a_blocker_unblocks() {
    let mut tasks = with(2);
    tasks.update(upd(json!({"task_id": "2", "add_blocked_by": ["1"]}))).unwrap();
    assert!(tasks.update(upd(json!({"task_id": "2", "status": "completed"}))).is_err());
    tasks.update(upd(json!({"task_id": "1", "status": "deleted"}))).unwrap();
    assert!(tasks.update(upd(json!({"task_id": "2", "status": "completed"}))).unwrap().ends_with(COMPLETED_HINT));
}

#[test]
fn blockers_added_in_the_same_update_count() {
    let mut tasks = with(2);
    let err = tasks.update(upd(json!({"task_id": "2", "add_blocked_by": ["1"], "status": "completed"}))).unwrap_err();
    assert!(matches!(err, TaskError::Blocked { .. }), "{err}");
    assert_eq!(tasks, with(2));
}

#[test]
fn allowed_transitions() {
    let mut tasks = with(2);
    tasks.update(upd(json!({"task_id": "2", "add_blocked_by": ["1"]}))).unwrap();
    // pending → completed directly, when unblocked.
    tasks.update(upd(json!({"task_id": "1", "status": "completed"}))).unwrap();
    // reopen: completed → pending, completed → in_progress.
    assert_eq!(tasks.update(upd(json!({"task_id": "1", "status": "pending"}))).unwrap(), "Update task (id=1) status.");
    tasks.update(upd(json!({"task_id": "1", "status": "completed"}))).unwrap();
    tasks.update(upd(json!({"task_id": "1", "status": "in_progress"}))).unwrap();
    // A blocked task can always go (back) to pending, and be deleted.
    assert_eq!(tasks.update(upd(json!({"task_id": "2", "status": "pending"}))).unwrap(), "Update task (id=2) status.");
    assert_eq!(
        tasks.update(upd(json!({"task_id": "2", "status": "deleted"}))).unwrap(),
        "Task (id=2) has been deleted."
    );
}

#[test]
fn repeating_the_current_state_is_not_a_transition() {
    // A task already in progress when a blocker was added may be told
    // "in_progress" again; completing it is what needs the blocker done.
    let mut tasks = with(2);
    tasks.update(upd(json!({"task_id": "2", "status": "in_progress"}))).unwrap();
    tasks.update(upd(json!({"task_id": "2", "add_blocked_by": ["1"]}))).unwrap();
    assert_eq!(
        tasks.update(upd(json!({"task_id": "2", "status": "in_progress"}))).unwrap(),
        "Update task (id=2) status."
    );
    assert!(tasks.update(upd(json!({"task_id": "2", "status": "completed"}))).is_err());
}

#[test]
fn lifecycle_through_serialised_state() {
    // What the components do: load, change, save, on every call.
    let mut stored: Option<String> = None;
    let mut step = |f: &dyn Fn(&mut Tasks) -> String| {
        let mut tasks = Tasks::from_state(stored.as_deref()).unwrap();
        let out = f(&mut tasks);
        stored = Some(tasks.to_state());
        out
    };
    step(&|t| create(t, "design"));
    step(&|t| create(t, "build"));
    step(&|t| t.update(upd(json!({"task_id": "2", "add_blocked_by": ["1"]}))).unwrap());
    step(&|t| t.update(upd(json!({"task_id": "1", "status": "completed"}))).unwrap());
    let out = step(&|t| t.update(upd(json!({"task_id": "2", "status": "in_progress", "owner": "me"}))).unwrap());
    assert_eq!(out, "Update task (id=2) status, owner.");
    assert_eq!(step(&|t| t.list()), "1 [completed] design\n2 [in_progress] build(me)[blocked by 1]");
}
