//! Validation, schema shape and flags (run natively: `cargo test -p tool-ask-user`).

use super::*;

fn input(v: Value) -> Input {
    serde_json::from_value(v).expect("fits the input types")
}

fn option(label: &str) -> Value {
    json!({"label": label, "description": format!("pick {label}")})
}

fn question(text: &str, labels: &[&str]) -> Value {
    json!({"question": text, "header": "Choice", "options": labels.iter().map(|l| option(l)).collect::<Vec<_>>()})
}

#[test]
fn valid_input_has_no_problems_and_defaults_apply() {
    let i = input(json!({"questions": [question("Which database?", &["Postgres (Recommended)", "SQLite"])]}));
    assert!(problems(&i).is_empty());
    assert!(!i.questions[0].multi_select);
    assert_eq!(i.questions[0].context, None);
    assert_eq!(i.questions[0].options[0].preview, None);
    assert!(AskUser::check_read_only(&i));
}

#[test]
fn duplicate_labels_within_a_question() {
    let i = input(json!({"questions": [question("Which?", &["A", "B", "A", "A"])]}));
    let p = problems(&i);
    assert_eq!(
        p,
        ["question 1 (\"Which?\") has the option label \"A\" more than once; labels must be unique within a question"],
        "reported once per label"
    );
    // The same label in two different questions is fine.
    let i = input(json!({"questions": [question("One?", &["Yes", "No"]), question("Two?", &["Yes", "No"])]}));
    assert!(problems(&i).is_empty());
}

#[test]
fn duplicate_question_texts() {
    let i = input(
        json!({"questions": [question("Same?", &["A", "B"]), question("Other?", &["A", "B"]), question("Same?", &["C", "D"])]}),
    );
    assert_eq!(problems(&i), ["questions 1 and 3 ask the same question \"Same?\"; question texts must be unique"]);
}

#[test]
fn preview_only_on_single_select() {
    let mut q = question("Layout?", &["Grid", "List"]);
    q["options"][0]["preview"] = json!("[][][]");
    assert!(problems(&input(json!({"questions": [q.clone()]}))).is_empty(), "single-select may preview");
    q["multi_select"] = json!(true);
    assert_eq!(
        problems(&input(json!({"questions": [q.clone()]}))),
        [
            "question 1 (\"Layout?\") is multi_select, but its option \"Grid\" has a preview; previews are only for single-select questions"
        ]
    );
    // null or empty previews are no previews.
    q["options"][0]["preview"] = json!(null);
    q["options"][1]["preview"] = json!("");
    assert!(problems(&input(json!({"questions": [q]}))).is_empty());
}

#[test]
fn schema_limits_are_checked_again() {
    let too_many = json!({"questions": (0..5).map(|i| question(&format!("Q{i}?"), &["A", "B"])).collect::<Vec<_>>()});
    assert_eq!(problems(&input(too_many)), ["ask between 1 and 4 questions, not 5"]);
    assert_eq!(problems(&input(json!({"questions": []}))), ["ask between 1 and 4 questions, not 0"]);
    let mut q = question("Q?", &["A"]);
    q["header"] = json!("Thirteen char");
    assert_eq!(
        problems(&input(json!({"questions": [q]}))),
        [
            "question 1 (\"Q?\") has a header of 13 characters (\"Thirteen char\"); at most 12 are allowed",
            "question 1 (\"Q?\") has 1 options; give between 2 and 4"
        ]
    );
    // 12 characters counted as characters, not bytes.
    let mut q = question("Q?", &["A", "B"]);
    q["header"] = json!("éééééééééééé");
    assert!(problems(&input(json!({"questions": [q]}))).is_empty());
}

#[test]
fn every_problem_is_named_in_one_denial() {
    let mut q1 = question("Same?", &["A", "A"]);
    q1["multi_select"] = json!(true);
    q1["options"][1]["preview"] = json!("x");
    let i = input(json!({"questions": [q1, question("Same?", &["B", "C"])]}));
    let p = problems(&i);
    assert_eq!(p.len(), 3, "{p:#?}");
    let msg = denial(&p);
    assert!(
        msg.starts_with("Invalid AskUser input: question 1 (\"Same?\") has the option label \"A\" more than once"),
        "{msg}"
    );
    assert!(msg.contains("; questions 1 and 2 ask the same question"), "{msg}");
    assert!(msg.ends_with(". Fix the questions and call AskUser again."), "{msg}");
    assert!(!AskUser::check_read_only(&i), "invalid input is not read-only, so the engine consults check_permissions");
}

#[test]
fn flags_and_metadata() {
    let spec = AskUser::spec();
    assert_eq!(spec.name, "AskUser");
    assert!(spec.external && spec.read_only && spec.concurrency_safe && !spec.state_injected);
    assert_eq!(spec.result_metadata_schema, Some(result_metadata_schema()));
}

#[test]
fn input_schema_shape() {
    let s = input_schema();
    assert_eq!(s["type"], "object");
    assert_eq!(s["required"], json!(["questions"]));
    let qs = &s["properties"]["questions"];
    assert_eq!((qs["minItems"].as_u64(), qs["maxItems"].as_u64()), (Some(1), Some(4)));
    assert_eq!(qs["items"]["$ref"], "#/$defs/_Question");
    let q = &s["$defs"]["_Question"];
    assert_eq!(q["required"], json!(["question", "header", "options"]));
    assert_eq!(q["properties"]["header"]["maxLength"], 12);
    assert_eq!(q["properties"]["multi_select"]["default"], false);
    assert_eq!(q["properties"]["context"]["default"], Value::Null);
    assert_eq!(q["properties"]["options"]["items"]["$ref"], "#/$defs/_Option");
    let o = &s["$defs"]["_Option"];
    assert_eq!(o["required"], json!(["label", "description"]));
    assert_eq!(o["properties"]["preview"]["anyOf"][1]["type"], "null");
    assert!(!s.to_string().contains("\"title\""), "titles are removed, as AgentScope exports it");
}

#[test]
fn metadata_schema_shape() {
    let m = result_metadata_schema();
    let a = &m["$defs"]["AskUserAnswer"];
    assert_eq!(a["required"], json!(["question"]));
    assert_eq!(a["properties"]["selected"]["default"], json!([]));
    assert_eq!(a["properties"]["other"]["default"], Value::Null);
    assert_eq!(m["properties"]["answers"]["items"]["$ref"], "#/$defs/AskUserAnswer");
}

#[test]
fn check_permissions_allows_valid_and_denies_invalid() {
    use toolhost_sdk::{PermissionBehavior, PermissionMode};
    let ctx = Context {
        mode: PermissionMode::Default,
        working_dirs: vec![],
        cwd: "/".into(),
        home: "/root".into(),
        tool_config: json!({}),
    };
    let ok = AskUser::check_permissions(&input(json!({"questions": [question("Q?", &["A", "B"])]})), &ctx);
    assert_eq!(ok.behavior, PermissionBehavior::Allow);
    assert_eq!(ok.message, "The AskUser tool is always permitted.");
    let bad = AskUser::check_permissions(&input(json!({"questions": [question("Q?", &["A", "A"])]})), &ctx);
    assert_eq!(bad.behavior, PermissionBehavior::Deny);
    assert!(bad.message.contains("has the option label \"A\" more than once"), "{}", bad.message);
}

#[test]
fn call_is_unsupported() {
    let err =
        AskUser::call(input(json!({"questions": [question("Q?", &["A", "B"])]})), &mut Output::new()).unwrap_err();
    match err {
        ToolError::Unsupported(m) => assert_eq!(
            m,
            "AskUser is an external tool: the host shows the questions and returns the answer; it is never called directly"
        ),
        other => panic!("{other:?}"),
    }
}
