//! Suggested rules ("allow and remember"): the everyday examples of
//! `docs/permissions.md`, and two invariants over generated commands:
//! (1) the suggestions, as allow rules, allow the command they were made
//! for; (2) they never allow a command whose subcommand differs.

use bash_analysis::*;
use proptest::prelude::*;

fn ctx() -> Context {
    Context { mode: Mode::Default, working_dirs: vec!["/w".into()], cwd: "/w".into(), home: "/home/u".into() }
}

/// What the engine does with a Bash call in default mode and these allow
/// rules: `true` when it is allowed (read-only, the tool's own allow, or
/// the rules cover every part and the tool raised no safety ask).
fn allowed(command: &str, rules: &[String]) -> bool {
    if check_read_only(command) {
        return true;
    }
    let v = check_permissions(command, &ctx(), &DangerLists::default());
    match v.behavior {
        Behavior::Allow => true,
        Behavior::Deny => false,
        Behavior::Ask if v.bypass_immune => false,
        _ => match_rules(RuleKind::Allow, rules, command).is_some(),
    }
}

/// The documented examples (`docs/permissions.md`, "Suggested rules").
const EXAMPLES: &[(&str, &[&str])] = &[
    ("npm ci && npm run lint | tee lint.log", &["npm ci:*", "npm run lint:*", "tee lint.log:*"]),
    ("timeout 60 make test", &["timeout 60 make test:*"]),
    ("FOO=1 python -m unittest", &["FOO=1 python -m unittest:*"]),
    ("python -m unittest", &["python -m unittest:*"]),
    ("python3 -m pip install -r requirements.txt", &["python3 -m pip install:*"]),
    ("git --no-pager log --oneline", &["git --no-pager log:*"]),
    ("git -C vendor/lib pull --rebase", &["git -C vendor/lib pull:*"]),
    ("kubectl --context dev get pods", &["kubectl --context dev get:*"]),
    ("kubectl -n staging rollout restart deploy/api", &["kubectl -n staging rollout restart:*"]),
    ("make -C docs html", &["make -C docs html:*"]),
    ("make -j 8 CC=clang all", &["make -j 8 CC=clang all:*"]),
    ("yarn workspace app build", &["yarn workspace app build:*"]),
    ("yarn workspace @org/web run test:unit", &["yarn workspace @org/web run test:unit:*"]),
    ("git commit -m 'fix'", &["git commit:*"]),
    ("git stash pop", &["git stash pop:*"]),
    ("npm install", &["npm install:*"]),
    ("cargo +nightly build --release", &["cargo +nightly build:*"]),
    ("docker compose -f ci.yml up -d", &["docker compose -f ci.yml up:*"]),
    ("pip install -r requirements.txt", &["pip install:*"]),
    ("go test ./...", &["go test:*"]),
    ("NODE_ENV=production npm run build", &["npm run build:*"]),
    ("{ cargo fmt; cargo clippy -- -D warnings; }", &["cargo fmt:*", "cargo clippy:*"]),
    ("nice -n 10 cargo bench", &["nice -n 10 cargo bench:*"]),
    ("uv run pytest -x tests", &["uv run pytest:*"]),
    ("npx prettier --write .", &["npx prettier:*"]),
    ("gh pr create --fill", &["gh pr create:*"]),
    ("pytest -x tests/", &["pytest:*"]),
    ("./gradlew build", &["./gradlew build:*"]),
    ("mkdir -p build && cmake ..", &["mkdir -p build:*", "cmake:*"]),
];

/// Asked commands that get no rule, and why.
const NONE: &[&str] = &[
    "make",                             // a program with subcommands, used without one
    "git --no-pager",                   // idem
    "npm run",                          // `run` needs the script's name
    "python script.py",                 // an interpreter running arbitrary code
    "bash -c 'npm test'",               // a shell
    "sudo make install",                // privilege escalation
    "xargs -n1 make",                   // runs whatever stdin says
    "npm test && rm -rf build",         // `rm` gets no rule, so nothing covers the command
    "(cargo test)",                     // a subshell: a safety ask no rule can silence
    "for f in a b; do pytest $f; done", // a loop: idem
    "echo x > out.txt",                 // a rule for `echo` would not name the file
];

#[test]
fn documented_examples() {
    for (command, expected) in EXAMPLES {
        assert!(!check_read_only(command), "{command} is read-only: nothing to suggest");
        let s = suggestions(command);
        assert_eq!(s, *expected, "{command}");
        assert!(allowed(command, &s), "{command}: {s:?} do not allow it");
    }
    for command in NONE {
        assert_eq!(suggestions(command), Vec::<String>::new(), "{command}");
    }
}

#[test]
fn narrow_rules_refuse_other_subcommands() {
    let cases: &[(&str, &[&str])] = &[
        ("git --no-pager log", &["git --no-pager push --force", "git push", "git --no-pager"]),
        (
            "kubectl --context dev get pods",
            &["kubectl --context dev delete pods --all", "kubectl --context prod get x"],
        ),
        ("make -C dir test", &["make -C dir deploy", "make test", "make -C other test"]),
        ("yarn workspace app build", &["yarn workspace app publish", "yarn workspace other build", "yarn npm publish"]),
        ("npm run lint", &["npm run deploy", "npm publish"]),
        ("timeout 60 make test", &["make deploy", "timeout 60 make deploy", "timeout 60 rm -rf x"]),
        ("python -m unittest", &["python -c 'import os'", "python -m pip install x", "python evil.py"]),
        ("git stash pop", &["git stash drop", "git stash clear", "git push"]),
    ];
    for (asked, others) in cases {
        let s = suggestions(asked);
        assert!(allowed(asked, &s), "{asked}: {s:?}");
        for other in *others {
            assert!(!allowed(other, &s), "{s:?} suggested for {asked} allow {other}");
        }
    }
}

/// A program with subcommands, where-options before them, and the
/// subcommands a generated command picks from.
struct Program {
    name: &'static str,
    options: &'static [&'static str],
    subs: &'static [&'static str],
}

const PROGRAMS: &[Program] = &[
    Program {
        name: "git",
        options: &["", "--no-pager ", "-C sub ", "-c core.quotepath=off ", "-C 'my dir' --no-pager "],
        subs: &["commit", "push", "pull", "fetch", "add", "checkout", "rebase", "merge", "branch", "tag", "reset"],
    },
    Program {
        name: "cargo",
        options: &["", "+nightly ", "--locked "],
        subs: &["build", "test", "run", "publish", "fmt"],
    },
    Program {
        name: "npm",
        options: &["", "--prefix web ", "-w app "],
        subs: &["install", "ci", "test", "publish", "run lint", "run deploy", "exec eslint"],
    },
    Program {
        name: "yarn",
        options: &["", "--cwd web "],
        subs: &["install", "build", "test", "workspace app build", "workspace app publish", "run lint", "npm publish"],
    },
    Program { name: "pnpm", options: &["", "--filter app ", "-C web "], subs: &["install", "run build", "publish"] },
    Program {
        name: "kubectl",
        options: &["", "--context dev ", "-n ns ", "--context prod -n kube-system "],
        subs: &["get", "apply", "delete", "logs", "rollout restart", "rollout undo", "config use-context"],
    },
    Program {
        name: "docker",
        options: &["", "--context remote "],
        subs: &["build", "run", "push", "compose up", "compose down", "image prune", "system prune"],
    },
    Program {
        name: "make",
        options: &["", "-C dir ", "-j 4 ", "-j4 ", "CC=clang "],
        subs: &["test", "install", "clean"],
    },
    Program { name: "go", options: &["", "-C mod "], subs: &["test", "build", "run", "mod tidy", "mod vendor"] },
    Program { name: "pip", options: &["", "-q "], subs: &["install", "uninstall", "download"] },
    Program { name: "python -m", options: &[""], subs: &["pytest", "unittest", "pip install", "pip uninstall"] },
    Program { name: "gh", options: &[""], subs: &["pr create", "pr merge", "release create", "repo delete"] },
];

const ARGS: &[&str] = &["", " -v", " --release", " x", " origin main", " -m 'msg'", " ./...", " --all", " -- -q"];
const WRAPS: &[&str] = &["", "timeout 60 ", "time ", "nice -n 5 ", "nohup ", "env CI=1 ", "FOO=1 ", "LANG=C "];

/// One generated simple command: (text, program index, the text before
/// the subcommand, the subcommand).
fn simple() -> impl Strategy<Value = (String, usize, String, &'static str)> {
    (0..PROGRAMS.len(), any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0..ARGS.len(), 0..WRAPS.len())
        .prop_map(|(p, o, s, a, w)| {
            let prog = &PROGRAMS[p];
            let sub = prog.subs[s.index(prog.subs.len())];
            let head = format!("{}{} {}", WRAPS[w], prog.name, prog.options[o.index(prog.options.len())]);
            (format!("{head}{sub}{}", ARGS[a]), p, head, sub)
        })
}

const SEPS: &[&str] = &[" && ", "; ", " || ", " | ", "\n"];

/// Several generated commands joined as a list, pipeline or brace group.
fn compound() -> impl Strategy<Value = Vec<(String, usize, String, &'static str)>> {
    prop::collection::vec(simple(), 1..4)
}

fn join(parts: &[(String, usize, String, &'static str)], sep: usize, group: bool) -> String {
    let texts: Vec<&str> = parts.iter().map(|(t, ..)| t.as_str()).collect();
    let joined = texts.join(SEPS[sep % SEPS.len()]);
    if group { format!("{{ {joined}; }}") } else { joined }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Invariant 1: every generated everyday command gets suggestions, and
    /// they allow it (through the same decision as the engine's).
    #[test]
    fn suggestions_allow_the_command(parts in compound(), sep in 0usize..8, group in any::<bool>()) {
        let command = join(&parts, sep, group);
        let s = suggestions(&command);
        prop_assert!(!s.is_empty(), "no suggestion for {command:?}");
        prop_assert!(allowed(&command, &s), "{s:?} do not allow {command:?}");
        for rule in &s {
            let words: Vec<&str> = rule.trim_end_matches(":*").split_whitespace().collect();
            prop_assert!(words.len() > 1, "the program alone: {rule} for {command:?}");
        }
    }

    /// Invariant 2: the suggestions for a command never allow the same
    /// program with another subcommand (same options, wrapper and arguments).
    #[test]
    fn suggestions_keep_the_subcommand((command, p, head, sub) in simple(), other in any::<prop::sample::Index>(), a in 0..ARGS.len()) {
        let prog = &PROGRAMS[p];
        let other_sub = prog.subs[other.index(prog.subs.len())];
        prop_assume!(other_sub != sub);
        let s = suggestions(&command);
        // The same command with the other subcommand in the asked one's place.
        let tricked = format!("{head}{other_sub}{}", ARGS[a]);
        prop_assert!(!allowed(&tricked, &s) || check_read_only(&tricked), "{s:?} for {command:?} allow {tricked:?}");
        // Nor hidden behind an allowed part.
        let chained = format!("{command} && {tricked}");
        prop_assert!(!allowed(&chained, &s) || check_read_only(&tricked), "{s:?} for {command:?} allow {chained:?}");
    }
}
