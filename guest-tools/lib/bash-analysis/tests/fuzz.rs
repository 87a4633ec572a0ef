//! Property tests: no panic, no hang, and nothing is allowed while a part of
//! the command is not read-only.

use bash_analysis::*;
use proptest::prelude::*;

fn ctx(mode: Mode) -> Context {
    Context { mode, working_dirs: vec!["/tmp/project".into()], cwd: "/tmp/project".into(), home: "/home/user".into() }
}

const RO: &[&str] =
    &["ls", "ls -la", "cat f.txt", "pwd", "git status", "grep -r x .", "echo hi", "git log -n 3", "wc -l f", "head f"];
const BAD: &[&str] = &[
    "rm x",
    "rm -rf /",
    "curl http://x",
    "sh",
    "git push",
    "touch f",
    "tee /etc/passwd",
    "mv a b",
    "npm install",
    "python -c 'import os'",
    "git branch -D main",
    "dd if=a of=b",
    "chmod 777 f",
    "find . -delete",
    "sed -i s/a/b/ f",
];
const SEPS: &[&str] = &[";", " ; ", "&&", " && ", "||", "|", " | ", "|&", " & ", "&", "\n", " ;\n", "\n\n"];

/// Disguises a simple command's program the ways people try to sneak it past rules.
fn disguise(cmd: &str, how: u8) -> String {
    let (prog, rest) = cmd.split_once(' ').map(|(p, r)| (p, format!(" {r}"))).unwrap_or((cmd, String::new()));
    match how % 9 {
        0 => cmd.to_string(),
        1 => format!("'{prog}'{rest}"),
        2 => format!("\"{prog}\"{rest}"),
        3 => format!("\\{prog}{rest}"),
        4 => format!("/usr/bin/{prog}{rest}"),
        5 => format!("command {prog}{rest}"),
        6 => format!("env FOO=1 {prog}{rest}"),
        7 => format!("  {cmd}  "),
        _ => format!("LANG=C {cmd}"),
    }
}

fn compound() -> impl Strategy<Value = (String, Vec<&'static str>)> {
    prop::collection::vec((any::<bool>(), 0usize..16, 0u8..9, 0usize..SEPS.len()), 1..5).prop_map(|items| {
        let mut s = String::new();
        let mut used: Vec<&'static str> = Vec::new();
        for (k, (bad, i, how, sep)) in items.iter().enumerate() {
            if k > 0 {
                s.push_str(SEPS[*sep]);
            }
            let part = if *bad { BAD[i % BAD.len()] } else { RO[i % RO.len()] };
            if *bad {
                used.push(part);
            }
            s.push_str(&disguise(part, *how));
        }
        (s, used)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn never_allows_a_non_read_only_part((cmd, used) in compound()) {
        let has_bad = !used.is_empty();
        let lists = DangerLists::default();
        if has_bad {
            prop_assert!(!check_read_only(&cmd), "read-only: {cmd:?}");
            let v = check_permissions(&cmd, &ctx(Mode::Default), &lists);
            prop_assert_ne!(v.behavior, Behavior::Allow, "{:?}", cmd);
            // A rule for a read-only part never covers the bad part.
            let rules = vec!["ls:*".to_string(), "git status:*".to_string(), "cat:*".to_string(), "echo *".to_string()];
            prop_assert!(match_rules(RuleKind::Allow, &rules, &cmd).is_none(), "allow matched {cmd:?}");
        }
        // Deny rules for the bad programs cannot be dodged.
        for bad in &used {
            let prog = bad.split(' ').next().unwrap_or(bad);
            {
                let rule = vec![format!("{prog}:*")];
                prop_assert!(match_rules(RuleKind::Deny, &rule, &cmd).is_some(), "deny {prog}:* dodged by {cmd:?}");
            }
        }
        let s = suggestions(&cmd);
        if !s.is_empty() {
            prop_assert!(match_rules(RuleKind::Allow, &s, &cmd).is_some(), "suggestions {s:?} do not cover {cmd:?}");
        }
    }

    #[test]
    fn arbitrary_text_never_panics(cmd in "[ -~\\n\\t]{0,160}") {
        let c = ctx(Mode::AcceptEdits);
        let lists = DangerLists::default();
        let ro = check_read_only(&cmd);
        let v = check_permissions(&cmd, &c, &lists);
        if ro {
            prop_assert_eq!(v.behavior, Behavior::Allow);
        }
        let s = suggestions(&cmd);
        if !s.is_empty() {
            prop_assert!(match_rules(RuleKind::Allow, &s, &cmd).is_some(), "suggestions {s:?} do not cover {cmd:?}");
        }
        let _ = match_rules(RuleKind::Deny, &["rm:*".to_string(), "*x*".to_string()], &cmd);
    }

    #[test]
    fn shellish_text_never_panics(cmd in prop::collection::vec(prop::sample::select(vec![
        "ls", "rm", "-rf", "/", "~", "..", "'", "\"", "$(", ")", "`", "${", "}", "<(", ">", ">>", "2>&1", "<<EOF\n", "\nEOF\n",
        ";", "&&", "||", "|", "&", "\n", "(", "{", "[", "]", "[[", "]]", "if", "then", "fi", "for", "do", "done", "$X",
        "\\", "*", "sed", "-i", "s/a/b/", ".env", "eval", "bash", "-c", "sudo", "env", "=", "a=b", "#", "$((", "))",
    ]), 0..40)) {
        let cmd = cmd.join(" ");
        let c = ctx(Mode::DontAsk);
        let lists = DangerLists::default();
        let ro = check_read_only(&cmd);
        let v = check_permissions(&cmd, &c, &lists);
        if ro {
            prop_assert_eq!(v.behavior, Behavior::Allow);
        }
        let _ = suggestions(&cmd);
        let _ = match_rules(RuleKind::Allow, &["ls:*".to_string()], &cmd);
    }
}

#[test]
fn long_input_is_bounded() {
    let long = "ls && ".repeat(20_000) + "ls";
    let v = check_permissions(&long, &ctx(Mode::Default), &DangerLists::default());
    assert_eq!(v.behavior, Behavior::Ask);
    assert!(v.message.contains("parsing failed"));
    let nested = "$(".repeat(40) + &")".repeat(40);
    let _ = check_permissions(&format!("echo {nested}"), &ctx(Mode::Default), &DangerLists::default());
}
