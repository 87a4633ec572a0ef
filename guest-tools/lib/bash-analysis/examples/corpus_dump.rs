//! Every command of the corpus (tests/corpus.tsv) with the analysis's answer
//! in each mode, one line per command: diff two runs to list what a change
//! of the analysis changes (`cargo run --release -p bash-analysis --example
//! corpus_dump > before.txt`).

#[path = "common/corpus.rs"]
mod corpus;

use bash_analysis::{Behavior, Context, DangerLists, Mode, check_permissions, check_read_only};

fn main() {
    // An argument names another corpus.
    let commands = corpus::commands(std::env::args().nth(1).as_deref());
    let mut seen = std::collections::HashSet::new();
    let lists = DangerLists::default();
    for c in commands {
        if !seen.insert(c.clone()) {
            continue;
        }
        let mut line = format!("{c:?}\tro={}", check_read_only(&c));
        for mode in [Mode::Default, Mode::AcceptEdits, Mode::DontAsk, Mode::Bypass] {
            let ctx = Context {
                mode,
                working_dirs: vec!["/tmp/project".into()],
                cwd: "/tmp/project".into(),
                home: "/home/user".into(),
            };
            let v = check_permissions(&c, &ctx, &lists);
            let b = match v.behavior {
                Behavior::Allow => "allow",
                Behavior::Deny => "deny",
                Behavior::Ask if v.bypass_immune => "ASK!",
                Behavior::Ask => "ask",
                Behavior::Passthrough => "pass",
            };
            line.push_str(&format!("\t{mode:?}={b}"));
        }
        println!("{line}");
    }
}
