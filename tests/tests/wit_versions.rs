//! Two versions of the WIT package served by one host: `DraftNote`, built
//! against the test-only draft `toolhost:tool@0.2.0-draft` (the `wit-draft`
//! feature, which the tests turn on), beside `Echo`, built against 0.1.0.
//! The draft differs from 0.1.0 in `log.log` alone; every other import
//! (files through the backend and its scope, the agent state, output) is
//! served by the same version-neutral host code, with the same grants and
//! refusals.

use toolhost_e2e::{Scratch, guest, text};

fn plugins() -> Vec<String> {
    let mut args = vec!["--no-builtins".to_string()];
    for name in ["draft-version", "echo"] {
        args.push("--plugin".into());
        args.push(guest(name).display().to_string());
    }
    args
}

fn cli(scratch: &Scratch, rest: &[&str]) -> (String, String, Option<i32>) {
    let mut args = plugins();
    args.extend(rest.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = scratch.cli(&args);
    let (stdout, stderr) = text(&out);
    (stdout, stderr, out.status.code())
}

#[test]
fn tools_of_both_versions_load_in_one_host() {
    let scratch = Scratch::new();
    for (tool, version) in [("DraftNote", "0.2.0-draft"), ("Echo", "0.1.0")] {
        let (stdout, stderr, code) = cli(&scratch, &["describe", tool]);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
        assert!(stdout.contains(&format!("WIT: toolhost:tool@{version}")), "{tool}: {stdout}");
    }
}

#[test]
fn a_draft_tool_gets_files_state_output_and_its_changed_log_from_the_same_host_code() {
    let scratch = Scratch::new();
    std::fs::write(scratch.work().join("note.txt"), "hello from the draft").expect("writing the note");
    let input = format!(r#"{{"path": "{}"}}"#, scratch.work().join("note.txt").display());
    let grants = ["--grant", "DraftNote=fs-read", "--grant", "DraftNote=state", "--allow", "DraftNote"];
    let mut args = vec!["-v"];
    args.extend(grants);
    args.extend(["call", "DraftNote", &input]);
    let (stdout, stderr, code) = cli(&scratch, &args);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(r#"kept "hello from the draft""#), "{stdout}\n{stderr}");
    // The draft's one change: the log line carries its fields.
    assert!(stderr.contains("draft note kept bytes=20 key=note"), "{stderr}");
    // Its keys and values are the guest's text: escaped into that one line,
    // never a forged line of their own nor a terminal escape.
    assert!(stderr.contains(r"forged\x0a=x\x0aINFO toolhost: Bash allowed\x1b[2J"), "{stderr}");
    // (The host's own log colours are escape sequences; the guest's clear is not among them.)
    assert!(!stderr.contains("\u{1b}[2J") && !stderr.lines().any(|l| l.starts_with("INFO toolhost: Bash")), "{stderr}");

    // The same scope as a 0.1.0 tool's: a file outside the working
    // directories is refused by the host, and nothing is read.
    let outside = scratch.outside("secret.txt");
    std::fs::write(&outside, "not for the draft").expect("writing the secret");
    let input = format!(r#"{{"path": "{}"}}"#, outside.display());
    let mut args = grants.to_vec();
    args.extend(["call", "DraftNote", &input]);
    let (stdout, stderr, code) = cli(&scratch, &args);
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("denied") && !stdout.contains("not for the draft"), "{stdout}\n{stderr}");

    // Without the state grant, the draft's state import is refused as a
    // 0.1.0 tool's would be.
    let input = format!(r#"{{"path": "{}"}}"#, scratch.work().join("note.txt").display());
    let (stdout, stderr, code) =
        cli(&scratch, &["--grant", "DraftNote=fs-read", "--allow", "DraftNote", "call", "DraftNote", &input]);
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("state") && !stdout.contains("kept"), "{stdout}\n{stderr}");

    // And the 0.1.0 tool beside it is untouched.
    let (stdout, stderr, code) = cli(&scratch, &["call", "Echo", r#"{"text": "still 0.1.0"}"#]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("still 0.1.0"), "{stdout}");
}
