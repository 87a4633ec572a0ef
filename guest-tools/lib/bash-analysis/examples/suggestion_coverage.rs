//! How many asked commands of the corpus (tests/corpus.tsv) get suggested
//! rules, and how many suggestions are the program alone (`make:*`, which
//! allows every target). "Asked" is what `toolhost check` asks about in
//! default mode with no rules: not read-only and not allowed by the tool.
//!
//! `cargo run -p bash-analysis --example suggestion_coverage [FILE] [-v]`
//! (`-v` lists each asked command and its rules).

#[path = "common/corpus.rs"]
mod corpus;

use bash_analysis::{Behavior, DangerLists, check_permissions, check_read_only, suggestions};

/// Words that only set up how the program runs: leading assignments,
/// wrappers and their options or durations.
fn is_setup_word(w: &str) -> bool {
    const WRAPPERS: &[&str] = &["time", "timeout", "nice", "nohup", "env", "stdbuf"];
    WRAPPERS.contains(&w)
        || w.starts_with('-')
        || w.contains('=')
        || w.trim_end_matches(['s', 'm', 'h', 'd']).parse::<f64>().is_ok()
}

/// A rule that names nothing but the program (after setup words).
fn program_alone(rule: &str) -> bool {
    let prefix = rule.strip_suffix(":*").unwrap_or(rule);
    prefix.split_whitespace().skip_while(|w| is_setup_word(w)).count() == 1
}

fn main() {
    // A file given as the first argument (`tests/everyday.txt` holds the
    // documented everyday commands) replaces the corpus.
    let file = std::env::args().nth(1).filter(|a| a != "-v");
    let mut commands = corpus::commands(file.as_deref());
    commands.sort();
    commands.dedup();
    let ctx = corpus::context();
    let lists = DangerLists::default();
    let (mut asked, mut immune, mut with, mut rules, mut alone) = (0, 0, 0, 0, 0);
    let verbose = std::env::args().any(|a| a == "-v");
    for c in &commands {
        if check_read_only(c) {
            continue;
        }
        let v = check_permissions(c, &ctx, &lists);
        if matches!(v.behavior, Behavior::Allow | Behavior::Deny) {
            continue;
        }
        asked += 1;
        immune += usize::from(v.bypass_immune);
        // As the Bash tool: nothing for a safety ask, no rule can silence it.
        let s = if v.bypass_immune { Vec::new() } else { suggestions(c) };
        with += usize::from(!s.is_empty());
        rules += s.len();
        alone += s.iter().filter(|r| program_alone(r)).count();
        if verbose {
            let tag = if v.bypass_immune { "immune" } else { "asked" };
            println!("{tag}\t{c:?}\t{s:?}");
        }
    }
    println!("{} distinct commands; {asked} asked ({immune} of them safety asks no rule can silence)", commands.len());
    println!(
        "with a suggestion: {with} of the {} other asks; {rules} rules, {alone} the program alone",
        asked - immune
    );
}
