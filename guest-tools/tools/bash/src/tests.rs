use serde_json::json;
use toolhost_sdk::{Context, PermissionBehavior, PermissionMode, Tool, backend::OsFamily};

use crate::{Bash, Input, argv, decide, schema};

fn ctx(mode: PermissionMode) -> Context {
    Context {
        mode,
        working_dirs: vec!["/work/p".into()],
        cwd: "/work/p".into(),
        home: "/home/u".into(),
        tool_config: json!({}),
    }
}

fn input(command: &str) -> Input {
    serde_json::from_value(json!({"command": command})).unwrap()
}

#[test]
fn spec_matches_the_reference_identity() {
    let s = Bash::spec();
    assert_eq!(s.name, "Bash");
    assert!(!s.read_only && !s.concurrency_safe && !s.external && !s.state_injected);
    assert!(s.capabilities.process_exec);
    assert!(s.capabilities.fs_read.is_empty() && s.capabilities.fs_write.is_empty());
    let t = &schema()["properties"]["timeout"];
    assert_eq!(
        (t["minimum"].clone(), t["maximum"].clone(), t["default"].clone()),
        (json!(0), json!(600000), json!(120000))
    );
    assert!(t["description"].as_str().unwrap().contains("milliseconds"));
    assert_eq!(schema()["required"], json!(["command"]));
    assert!(s.description.contains("Nothing persists between calls"));
}

#[test]
fn input_parses_with_and_without_optional_fields() {
    let i: Input = serde_json::from_value(json!({"command": "ls", "description": "list", "timeout": 5})).unwrap();
    assert_eq!((i.command.as_str(), i.description.as_deref()), ("ls", Some("list")));
    assert_eq!(shell_exec::timeout_ms(i.timeout.as_ref()), Ok(5));
    assert_eq!(shell_exec::timeout_ms(input("ls").timeout.as_ref()), Ok(120_000));
}

#[test]
fn argv_follows_the_backend_os() {
    assert_eq!(argv(OsFamily::Posix, "ls -la"), ["/bin/sh", "-c", "ls -la"]);
    assert_eq!(argv(OsFamily::Windows, "dir"), ["cmd", "/c", "dir"]);
}

#[test]
fn read_only_check_delegates_to_the_analysis() {
    assert!(Bash::check_read_only(&input("ls -la && git status")));
    assert!(!Bash::check_read_only(&input("ls\nrm -rf /")));
    assert!(!Bash::check_read_only(&input("")));
}

#[test]
fn permission_layers_map_to_decisions() {
    let d = decide("ls -la", &ctx(PermissionMode::Default));
    assert_eq!(d.behavior, PermissionBehavior::Allow);
    assert_eq!(d.reason.as_deref(), Some("Read-only command is allowed"));

    let d = decide("rm -rf /", &ctx(PermissionMode::Default));
    assert_eq!(d.behavior, PermissionBehavior::Ask);
    assert!(d.bypass_immune);

    let d = decide("npm install", &ctx(PermissionMode::Default));
    assert_eq!(d.behavior, PermissionBehavior::Passthrough);
    assert_eq!(d.message, "Execute bash command: npm install");
    assert!(!d.bypass_immune);

    // Layer 6: filesystem edits inside the working directory.
    assert_eq!(decide("touch x", &ctx(PermissionMode::AcceptEdits)).behavior, PermissionBehavior::Allow);
    assert_eq!(decide("touch x", &ctx(PermissionMode::Default)).behavior, PermissionBehavior::Passthrough);
    assert_eq!(decide("touch /etc/x", &ctx(PermissionMode::AcceptEdits)).behavior, PermissionBehavior::Passthrough);
}

#[test]
fn tool_config_feeds_the_dangerous_lists() {
    let mut c = ctx(PermissionMode::Default);
    c.tool_config = json!({"dangerous_files": ["secrets.txt"]});
    let d = decide("rm secrets.txt", &c);
    assert_eq!(d.behavior, PermissionBehavior::Ask);
    assert!(d.bypass_immune, "{d:?}");
    assert!(d.message.contains("sensitive paths"), "{}", d.message);
}

#[test]
fn a_bad_tool_config_denies_and_says_how_to_fix_it() {
    let mut c = ctx(PermissionMode::Bypass);
    c.tool_config = json!({"dangerous_files": "secrets.txt"});
    let d = decide("ls", &c);
    assert_eq!(d.behavior, PermissionBehavior::Deny);
    assert!(d.message.contains("dangerous_files") && d.message.contains("[tools.Bash]"), "{}", d.message);
}

#[test]
fn rules_are_matched_per_part() {
    let c = ctx(PermissionMode::Default);
    let rules = vec!["npm test:*".to_string(), "git commit:*".to_string()];
    assert_eq!(Bash::match_rules(PermissionBehavior::Allow, &rules, &input("git commit -m x"), &c), Some(1));
    assert_eq!(Bash::match_rules(PermissionBehavior::Allow, &rules, &input("git commit -m x; curl x | sh"), &c), None);
    let deny = vec!["curl:*".to_string()];
    assert_eq!(Bash::match_rules(PermissionBehavior::Deny, &deny, &input("ls && curl x"), &c), Some(0));
    assert_eq!(Bash::match_rules(PermissionBehavior::Passthrough, &deny, &input("curl x"), &c), None);
}

#[test]
fn suggestions_are_bash_prefix_rules() {
    let c = ctx(PermissionMode::Default);
    let s = Bash::suggestions(&input("git commit -m 'fix'"), &c);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].tool_name.as_str(), s[0].rule_content.as_deref()), ("Bash", Some("git commit:*")));
    assert_eq!(s[0].behavior, PermissionBehavior::Allow);
    assert!(Bash::suggestions(&input("rm -rf x"), &c).is_empty());
}

#[test]
fn the_settings_lists_cover_every_word_of_a_writing_part() {
    // Issue 12: `[tools.Bash] dangerous_files` reaches option values,
    // `key=value` words and assignments of any program, not only file commands.
    let mut c = ctx(PermissionMode::Default);
    c.tool_config = json!({"dangerous_files": ["secrets.txt"]});
    for cmd in
        ["curl -o secrets.txt https://x", "somecmd --output=./secrets.txt", "dd of=secrets.txt", "F=secrets.txt make"]
    {
        let d = decide(cmd, &c);
        assert_eq!((d.behavior, d.bypass_immune), (PermissionBehavior::Ask, true), "{cmd}: {d:?}");
    }
    // The defaults were replaced: `.bashrc` is not on this list.
    assert!(!decide("curl -o ~/.bashrc https://x", &c).bypass_immune);
    // Issue 22: read-only sed is allowed by the tool's read-only check.
    assert!(Bash::check_read_only(&input("sed -n '/a/,/b/p' notes.md")));
    assert!(!Bash::check_read_only(&input("sed -i 's/a/b/' notes.md")));
}

#[test]
fn suggestions_allow_their_command_through_match_rule_and_never_a_safety_ask() {
    let c = ctx(PermissionMode::Default);
    for command in ["npm ci && npm run lint | tee lint.log", "timeout 60 make test", "git --no-pager log"] {
        let contents: Vec<String> =
            Bash::suggestions(&input(command), &c).into_iter().filter_map(|r| r.rule_content).collect();
        assert!(!contents.is_empty(), "{command}");
        assert!(Bash::match_rules(PermissionBehavior::Allow, &contents, &input(command), &c).is_some(), "{command}");
    }
    // A safety ask (a sensitive path, a subshell): no allow rule can
    // silence it, so none is offered.
    for command in ["tee ~/.bashrc", "npm test > ~/.profile", "(cargo test)"] {
        assert!(decide(command, &c).bypass_immune, "{command}");
        assert!(Bash::suggestions(&input(command), &c).is_empty(), "{command}");
    }
}
