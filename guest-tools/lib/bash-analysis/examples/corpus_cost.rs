//! The analysis's cost per command over the corpus (tests/corpus.tsv): each
//! command goes through what one `toolhost check` decision asks of the Bash
//! tool (`check_read_only`, `check_permissions`, `suggestions`).
//!
//! Run natively, for deterministic instruction counts:
//! `cargo build --release -p bash-analysis --example corpus_cost &&
//! valgrind --tool=callgrind target/release/examples/corpus_cost`
//! (or plain, for a time per command: `... corpus_cost 20` runs 20 passes;
//! `... corpus_cost 1 FILE` measures the commands of FILE instead).

#[path = "common/corpus.rs"]
mod corpus;

use bash_analysis::{DangerLists, check_permissions, check_read_only, suggestions};

fn main() {
    // A second argument names another corpus, e.g. the bench's.
    let commands = corpus::commands(std::env::args().nth(2).as_deref());
    let passes: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let ctx = corpus::context();
    let lists = DangerLists::default();
    let start = std::time::Instant::now();
    let mut allowed = 0usize;
    for _ in 0..passes {
        for c in &commands {
            if check_read_only(c) {
                allowed += 1;
                continue;
            }
            let verdict = check_permissions(c, &ctx, &lists);
            if verdict.behavior == bash_analysis::Behavior::Allow {
                allowed += 1;
            } else {
                // An ask ends with the rules to offer.
                std::hint::black_box(suggestions(c));
            }
        }
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / (passes * commands.len()) as f64;
    println!("{} commands x {passes}: {per:.2} µs per command ({allowed} allowed)", commands.len());
}
