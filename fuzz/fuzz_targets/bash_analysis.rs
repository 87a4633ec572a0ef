//! The Bash tool's static analysis of a command (hostile model input):
//! every entry point terminates without panicking, whatever the command.
//! The first line of the data is a rule content, the rest the command.
#![no_main]

use bash_analysis::{Context, DangerLists, RuleKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (rule, command) = text.split_once('\n').unwrap_or(("", text));
    let lists = DangerLists::default();
    let _ = bash_analysis::check_read_only(command);
    for mode in [bash_analysis::Mode::Default, bash_analysis::Mode::AcceptEdits, bash_analysis::Mode::DontAsk] {
        let ctx = Context {
            mode,
            working_dirs: vec!["/work/project".into()],
            cwd: "/work/project".into(),
            home: "/home/user".into(),
        };
        let _ = bash_analysis::check_permissions(command, &ctx, &lists);
    }
    let rules = vec![rule.to_string(), "git:*".to_string()];
    for kind in [RuleKind::Allow, RuleKind::Deny, RuleKind::Ask] {
        if let Some(i) = bash_analysis::match_rules(kind, &rules, command) {
            assert!(i < rules.len(), "the matched index is one of the rules");
        }
    }
    let _ = bash_analysis::suggestions(command);
});
