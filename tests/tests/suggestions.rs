//! "Allow and remember" through the CLI: an asked Bash command shows one
//! narrow rule per part (`toolhost check`), the suggested rules given with
//! `--allow` allow that command, and they do not allow the same program
//! with another subcommand, which really does not run.

use serde_json::{Value, json};
use toolhost_e2e::{Scratch, text};

/// `toolhost check Bash` with these allow rules: the JSON answer.
fn check(scratch: &Scratch, allow: &[String], command: &str) -> Value {
    let mut args: Vec<&str> = Vec::new();
    for rule in allow {
        args.extend(["--allow", rule.as_str()]);
    }
    let input = json!({ "command": command }).to_string();
    args.extend(["check", "Bash", input.as_str(), "--json"]);
    let out = scratch.cli(&args);
    let (stdout, stderr) = text(&out);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"))
}

fn suggested(answer: &Value) -> Vec<String> {
    answer["suggested_rules"].as_array().expect("suggested_rules").iter().map(|r| r.as_str().unwrap().into()).collect()
}

#[test]
fn suggested_rules_allow_the_asked_command_and_no_other_subcommand() {
    let scratch = Scratch::new();
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "npm ci && npm run lint | tee lint.log",
            &["Bash(npm ci:*)", "Bash(npm run lint:*)", "Bash(tee lint.log:*)"],
            "npm run deploy",
        ),
        ("timeout 60 make test", &["Bash(timeout 60 make test:*)"], "timeout 60 make deploy"),
        ("git --no-pager log -p", &["Bash(git --no-pager log:*)"], "git --no-pager push --force"),
        (
            "kubectl --context dev get pods",
            &["Bash(kubectl --context dev get:*)"],
            "kubectl --context dev delete pods --all",
        ),
        ("yarn workspace app build", &["Bash(yarn workspace app build:*)"], "yarn workspace app npm publish"),
        ("FOO=1 python -m unittest", &["Bash(FOO=1 python -m unittest:*)"], "FOO=1 python -c 'print(1)'"),
    ];
    for (command, expected, other) in cases {
        let asked = check(&scratch, &[], command);
        assert_eq!(
            (asked["behavior"].as_str(), asked["source"].as_str()),
            (Some("ask"), Some("mode_fallback")),
            "{command}: {asked}"
        );
        let rules = suggested(&asked);
        assert_eq!(rules, *expected, "{command}");

        let again = check(&scratch, &rules, command);
        assert_eq!(
            (again["behavior"].as_str(), again["source"].as_str()),
            (Some("allow"), Some("allow_rule")),
            "{command} with {rules:?}: {again}"
        );

        let refused = check(&scratch, &rules, other);
        assert_eq!(refused["behavior"].as_str(), Some("ask"), "{rules:?} must not allow {other}: {refused}");
    }
}

#[test]
fn a_remembered_make_target_runs_and_another_target_does_not() {
    let scratch = Scratch::new();
    let work = scratch.work();
    std::fs::create_dir(work.join("sub")).unwrap();
    std::fs::write(
        work.join("sub/Makefile"),
        "hello:\n\techo hi > hello.txt\ndeploy:\n\techo deployed > ../canary.txt\n",
    )
    .unwrap();
    let asked = check(&scratch, &[], "make -C sub hello");
    let rules = suggested(&asked);
    assert_eq!(rules, ["Bash(make -C sub hello:*)"], "{asked}");

    let call = |command: &str| {
        let input = json!({ "command": command }).to_string();
        let mut args: Vec<&str> = Vec::new();
        for rule in &rules {
            args.extend(["--allow", rule.as_str()]);
        }
        args.extend(["call", "Bash", input.as_str()]);
        let out = scratch.cli(&args);
        let (stdout, stderr) = text(&out);
        (out.status.code(), format!("{stdout}{stderr}"))
    };
    let (code, out) = call("make -C sub hello");
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(std::fs::read_to_string(work.join("sub/hello.txt")).unwrap(), "hi\n");

    // No terminal to ask: the other target is refused and never runs.
    let (code, out) = call("make -C sub deploy");
    assert_eq!(code, Some(3), "{out}");
    assert!(!work.join("canary.txt").exists(), "the deploy target ran: {out}");
}
