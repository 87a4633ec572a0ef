//! AskUser through the CLI on a real terminal: the questions and options
//! are shown with an "Other" choice, the typed answer completes the call.
//! `script` (util-linux) gives the CLI a pseudo-terminal.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;
use toolhost_e2e::{Scratch, root, toolhost_bin};

#[test]
fn ask_user_on_a_terminal_shows_the_questions_and_returns_the_answer() {
    if Command::new("script").arg("--version").output().is_err() {
        assert!(std::env::var("CI").is_err(), "`script` (util-linux) is missing; CI must have it");
        eprintln!("skipped: `script` is not installed");
        return;
    }
    let scratch = Scratch::new();
    let input = json!({"questions": [{
        "question": "Which database?",
        "header": "DB",
        "options": [
            {"label": "Postgres (Recommended)", "description": "relational, durable"},
            {"label": "SQLite", "description": "a single file"}
        ]
    }]});
    let input_file = scratch.dir.path().join("input.json");
    std::fs::write(&input_file, input.to_string()).unwrap();
    let cmd = format!(
        "{} --cache-dir {} call AskUser \"$(cat {})\"",
        toolhost_bin().display(),
        root().join("target/test-cache").display(),
        input_file.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(scratch.work())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    // Pick "Other" (3), then type a free-text answer.
    child.stdin.take().expect("stdin").write_all(b"3\nMySQL, we already run it\n").unwrap();
    let out = child.wait_with_output().expect("wait");
    let screen = String::from_utf8_lossy(&out.stdout);
    for expected in
        ["[DB] Which database?", "1. Postgres (Recommended)", "2. SQLite", "3. Other (type your own answer)"]
    {
        assert!(screen.contains(expected), "missing {expected:?} in:\n{screen}");
    }
    assert!(
        screen.contains("The user answered:") && screen.contains("Which database?: Other: MySQL, we already run it"),
        "{screen}"
    );
    assert!(out.status.success(), "{screen}");
}
