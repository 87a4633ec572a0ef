//! AskUser through the CLI on a real terminal: the questions and options
//! are shown with an "Other" choice, the typed answer completes the call;
//! the model's text cannot drive the terminal. `script` (util-linux) gives
//! the CLI a pseudo-terminal.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;
use toolhost_e2e::{Scratch, have_script, root, toolhost_bin};

/// `toolhost call AskUser INPUT` on a pseudo-terminal, typing `typed`;
/// returns the screen and whether the call succeeded.
fn ask_on_terminal(scratch: &Scratch, input: &serde_json::Value, typed: &[u8]) -> (String, bool) {
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
    child.stdin.take().expect("stdin").write_all(typed).unwrap();
    let out = child.wait_with_output().expect("wait");
    (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.success())
}

#[test]
fn ask_user_on_a_terminal_shows_the_questions_and_returns_the_answer() {
    if !have_script() {
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
    // Pick "Other" (3), then type a free-text answer.
    let (screen, ok) = ask_on_terminal(&scratch, &input, b"3\nMySQL, we already run it\n");
    for expected in
        ["[DB] Which database?", "1. Postgres (Recommended)", "2. SQLite", "3. Other (type your own answer)"]
    {
        assert!(screen.contains(expected), "missing {expected:?} in:\n{screen}");
    }
    assert!(
        screen.contains("The user answered:") && screen.contains("Which database?: Other: MySQL, we already run it"),
        "{screen}"
    );
    assert!(ok, "{screen}");
}

/// The model's question, options and preview try to clear the screen and
/// reverse the text: every control reaches the screen escaped.
#[test]
fn ask_user_shows_the_model_text_escaped() {
    if !have_script() {
        return;
    }
    let scratch = Scratch::new();
    let input = json!({"questions": [{
        "question": "Delete?\u{1b}[2J\u{202e}on",
        "header": "H\u{1b}[2J",
        "context": "line one\nline two\u{1b}]0;title\u{7}",
        "options": [
            {"label": "Yes\u{9b}2J", "description": "d\u{202e}", "preview": "p\u{1b}[1A"},
            {"label": "No", "description": "keep"}
        ]
    }]});
    let (screen, ok) = ask_on_terminal(&scratch, &input, b"2\n");
    assert!(ok, "{screen}");
    for escaped in
        ["[H\\x1b[2J] Delete?\\x1b[2J\\u{202e}on", "line two\\x1b]0;title\\x07", "Yes\\u{009b}2J", "p\\x1b[1A"]
    {
        assert!(screen.contains(escaped), "missing {escaped:?} in:\n{screen}");
    }
    for raw in ["\u{1b}[2J", "\u{1b}[1A", "\u{1b}]0", "\u{202e}", "\u{9b}", "\u{7}"] {
        assert!(!screen.contains(raw), "a raw {raw:?} reached the screen:\n{screen:?}");
    }
}
