//! Runs `tests/corpus.tsv`: several hundred commands across every layer,
//! mode and bypass trick (format described at the top of the file).

use bash_analysis::*;

fn ctx(mode: Mode) -> Context {
    Context {
        mode,
        working_dirs: vec!["/tmp/project".into(), "/private/tmp/project".into()],
        cwd: "/tmp/project".into(),
        home: "/home/user".into(),
    }
}

fn behavior(s: &str) -> Option<Behavior> {
    Some(match s {
        "allow" => Behavior::Allow,
        "deny" => Behavior::Deny,
        "ask" => Behavior::Ask,
        "passthrough" => Behavior::Passthrough,
        _ => return None,
    })
}

#[test]
fn corpus() {
    let text = include_str!("corpus.tsv");
    let mut failures = Vec::new();
    let mut n = 0;
    for (lineno, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        n += 1;
        let cols: Vec<&str> = line.split('\t').collect();
        let (head, cmd, exp) = (cols[0], cols[1].replace('⏎', "\n").replace("\\t", "\t"), cols[2]);
        let flags: Vec<&str> =
            cols.get(3).map(|f| f.split(' ').filter(|s| !s.is_empty()).collect()).unwrap_or_default();
        let mut fail = |what: String| failures.push(format!("line {}: {head} {cmd:?}: {what}", lineno + 1));
        if let Some((kind, rules)) = head.split_once(':') {
            let kind = match kind {
                "allow" => RuleKind::Allow,
                "deny" => RuleKind::Deny,
                _ => RuleKind::Ask,
            };
            let rules: Vec<String> = rules.split(" ;; ").map(str::to_string).collect();
            let got = match_rules(kind, &rules, &cmd);
            let ok = match exp {
                "match" => got.is_some(),
                "nomatch" => got.is_none(),
                i => got == i.parse().ok(),
            };
            if !ok {
                fail(format!("expected {exp}, got {got:?}"));
            }
            continue;
        }
        let mode = match head {
            "default" => Mode::Default,
            "acceptedits" => Mode::AcceptEdits,
            "dontask" => Mode::DontAsk,
            "bypass" => Mode::Bypass,
            "explore" => Mode::Explore,
            other => panic!("bad mode {other}"),
        };
        let v = check_permissions(&cmd, &ctx(mode), &DangerLists::default());
        if mode != Mode::Explore {
            let ok = match exp {
                "*" => true,
                "!allow" => v.behavior != Behavior::Allow,
                e => Some(v.behavior) == behavior(e),
            };
            if !ok {
                fail(format!("expected {exp}, got {v:?}"));
            }
        }
        let ro = check_read_only(&cmd);
        for f in &flags {
            let ok = match *f {
                "ro" => ro,
                "!ro" => !ro,
                "immune" => v.bypass_immune,
                "!immune" => !v.bypass_immune,
                m => match m.strip_prefix("msg=") {
                    Some(sub) => v.message.contains(&sub.replace('+', " ")),
                    None => panic!("bad flag {m}"),
                },
            };
            if !ok {
                fail(format!("flag {f} failed (ro={ro}, {v:?})"));
            }
        }
        // The invariant holds on every row: allowed ⇒ nothing unsafe got through.
        if ro {
            assert_ne!(v.behavior, Behavior::Ask, "line {}: read-only but asks", lineno + 1);
        }
    }
    assert!(n > 500, "corpus too small: {n}");
    assert!(failures.is_empty(), "{} of {n} rows failed:\n{}", failures.len(), failures.join("\n"));
}
