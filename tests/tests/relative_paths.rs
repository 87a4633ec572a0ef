//! A relative `file_path` in Write and Edit is taken against the call's
//! `cwd`, never the host process's own directory (issue #22 item 5): with
//! `cwd` a working directory, `a.py`, `./a.py` and `src/a.py` are edits
//! inside it, while a bare name that is a symlink out of it stays asked.
//!
//! toolhost runs from another directory (`elsewhere`, which is also its
//! first working directory, so the backend's own directory is not the
//! call's); every request says `cwd` = `work`.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolhost_e2e::{Scratch, root, toolhost_bin};

/// How a case must be judged.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// An edit inside the working directory.
    Inside,
    /// Outside (or leading outside): the mode's fallback decides.
    Asked,
}

impl Expect {
    /// The behaviour expected in `mode`.
    fn behavior(self, mode: &str) -> &'static str {
        match (self, mode) {
            (_, "explore") => "deny",
            (_, "bypass") => "allow",
            (_, "default") => "ask",
            (Expect::Inside, _) => "allow",
            (Expect::Asked, "accept_edits") => "ask",
            (Expect::Asked, _) => "deny",
        }
    }
}

const MODES: [&str; 5] = ["default", "accept_edits", "explore", "bypass", "dont_ask"];

#[test]
fn relative_file_paths_are_judged_against_the_calls_cwd_in_every_mode() {
    let scratch = Scratch::new();
    let work = scratch.work();
    let elsewhere = scratch.outside("elsewhere");
    let outside = scratch.outside("outside");
    for dir in [&elsewhere, &outside, &work.join("src")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for file in [work.join("a.py"), work.join("src/a.py"), elsewhere.join("a.py"), outside.join("x.py")] {
        std::fs::write(file, "x = 1\n").unwrap();
    }
    std::os::unix::fs::symlink(outside.join("x.py"), work.join("out.py")).unwrap();
    std::os::unix::fs::symlink(&outside, work.join("outdir")).unwrap();
    std::os::unix::fs::symlink(work.join("src/a.py"), work.join("link-in.py")).unwrap();
    let w = work.display().to_string();

    let write = |p: &str| ("Write", json!({"file_path": p, "content": "y = 2\n"}));
    let edit = |p: &str| ("Edit", json!({"file_path": p, "old_string": "x", "new_string": "y"}));
    use Expect::*;
    let cases: Vec<((&str, Value), Expect)> = vec![
        (write("a.py"), Inside),
        (write("./a.py"), Inside),
        (edit("a.py"), Inside),
        (edit("./a.py"), Inside),
        (write("src/a.py"), Inside),
        (write("./src/a.py"), Inside),
        (edit("src/../a.py"), Inside),
        (write("src/./b.py"), Inside),
        (write("new.py"), Inside),
        (write("newdir/new.py"), Inside),
        (write("link-in.py"), Inside),
        (edit("link-in.py"), Inside),
        (write(&format!("{w}/a.py")), Inside),
        (edit(&format!("{w}/src/a.py")), Inside),
        // The opposite cases: they must stay asked.
        (write("out.py"), Asked),
        (edit("./out.py"), Asked),
        (write("outdir/new.py"), Asked),
        (edit("outdir/x.py"), Asked),
        (write("../elsewhere/a.py"), Asked),
        (write(&outside.join("x.py").display().to_string()), Asked),
    ];

    let mut lines = Vec::new();
    let mut expected = Vec::new();
    for ((tool, input), expect) in &cases {
        for mode in MODES {
            lines.push(
                json!({"id": lines.len(), "tool": tool, "input": input, "mode": mode, "cwd": w, "working_dirs": [w]})
                    .to_string(),
            );
            expected.push((format!("{tool} {input} in {mode}"), expect.behavior(mode)));
        }
    }
    let mut child = Command::new(toolhost_bin())
        .current_dir(&elsewhere)
        .arg("--cache-dir")
        .arg(root().join("target/test-cache"))
        .args(["--workdir", elsewhere.to_str().unwrap(), "--workdir", &w, "check", "--batch"])
        .env("HOME", scratch.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("toolhost check --batch");
    child.stdin.take().unwrap().write_all(lines.join("\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answers: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), expected.len());
    let wrong: Vec<String> = answers
        .iter()
        .zip(&expected)
        .filter(|(a, (_, want))| a["behavior"] != *want)
        .map(|(a, (case, want))| format!("{case}: want {want}, got {} ({})", a["behavior"], a["message"]))
        .collect();
    assert!(wrong.is_empty(), "{} of {} wrong:\n{}", wrong.len(), expected.len(), wrong.join("\n"));
}
