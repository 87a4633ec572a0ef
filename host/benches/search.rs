//! Native search/walk of `LocalBackend` against ripgrep, side by side.
//!
//! Run: `cargo bench -p toolhost --bench search -- [CORPUS] [RUNS]`
//! (CORPUS defaults to ~/.cargo/registry/src, RUNS to 5). For each query it
//! prints the median wall time of ours and of `rg` (default threads, same
//! ignore rules, output to a pipe) and the ratio; result counts must agree.
//! Without `rg` on PATH only our times are printed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use toolhost::backend::local::LocalBackend;
use toolhost::backend::{Backend, FsScope, Root, SearchMode, SearchRequest, WalkOptions};

struct Case {
    name: &'static str,
    /// Our request: a search, or (pattern empty) a walk.
    mode: Option<SearchMode>,
    pattern: &'static str,
    globs: &'static [&'static str],
    rg_args: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "content, literal",
        mode: Some(SearchMode::Content),
        pattern: "unsafe",
        globs: &[],
        rg_args: &["-n", "unsafe"],
    },
    Case {
        name: "content, regex",
        mode: Some(SearchMode::Content),
        pattern: r"fn [a-z_]+_with\(",
        globs: &[],
        rg_args: &["-n", r"fn [a-z_]+_with\("],
    },
    Case {
        name: "files-with-matches, literal",
        mode: Some(SearchMode::FilesWithMatches),
        pattern: "SAFETY",
        globs: &[],
        rg_args: &["-l", "SAFETY"],
    },
    Case {
        name: "files-with-matches, regex",
        mode: Some(SearchMode::FilesWithMatches),
        pattern: r"impl\s+[A-Z]\w*\s+for\s+Vec",
        globs: &[],
        rg_args: &["-l", r"impl\s+[A-Z]\w*\s+for\s+Vec"],
    },
    Case { name: "walk, glob *.rs", mode: None, pattern: "", globs: &["*.rs"], rg_args: &["--files", "-g", "*.rs"] },
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; ignore flags.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let corpus = args.first().map(PathBuf::from).unwrap_or_else(|| PathBuf::from(&home).join(".cargo/registry/src"));
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5).max(1);
    let corpus = match std::fs::canonicalize(&corpus) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("corpus {}: {e}; pass an existing directory as the first argument", corpus.display());
            std::process::exit(2);
        }
    };
    let have_rg = Command::new("rg").arg("--version").output().is_ok_and(|o| o.status.success());
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start tokio: {e}");
            std::process::exit(2);
        }
    };
    let backend = LocalBackend::new(corpus.clone(), PathBuf::from(&home));
    let scope = FsScope::new("bench", vec![Root::new(corpus.clone(), false)], "");
    let root = corpus.display().to_string();
    println!(
        "corpus {root}, {runs} runs each, median wall time; rg: {}",
        if have_rg { "yes" } else { "not installed" }
    );
    println!("{:<30} {:>10} {:>10} {:>8} {:>10}", "query", "ours", "rg", "ours/rg", "results");

    for case in CASES {
        let files = WalkOptions {
            root: root.clone(),
            globs: case.globs.iter().map(|g| g.to_string()).collect(),
            respect_ignore_files: true,
            ..Default::default()
        };
        let run_ours = || -> usize {
            rt.block_on(async {
                match case.mode {
                    None => backend.walk(&scope, &files).await.map(|v| v.len()),
                    Some(mode) => {
                        let req = SearchRequest {
                            files: files.clone(),
                            pattern: case.pattern.into(),
                            mode,
                            ..Default::default()
                        };
                        backend.search(&scope, &req).await.map(|v| match mode {
                            SearchMode::Content => v.iter().map(|f| f.lines.len()).sum(),
                            _ => v.len(),
                        })
                    }
                }
            })
            .unwrap_or_else(|e| {
                eprintln!("{}: {e}", case.name);
                std::process::exit(1)
            })
        };
        let run_rg = || -> usize {
            let out = Command::new("rg").args(case.rg_args).arg(&root).output();
            match out {
                Ok(o) => o.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count(),
                Err(e) => {
                    eprintln!("rg: {e}");
                    0
                }
            }
        };
        // Warm the page cache and check the counts.
        let ours_n = run_ours();
        let rg_n = if have_rg { run_rg() } else { 0 };
        let (mut ours_t, mut rg_t) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            run_ours();
            ours_t.push(t.elapsed());
            if have_rg {
                let t = Instant::now();
                run_rg();
                rg_t.push(t.elapsed());
            }
        }
        let ours = median(ours_t);
        let counts = if !have_rg {
            format!("{ours_n}")
        } else if ours_n == rg_n {
            format!("{ours_n} =")
        } else {
            format!("{ours_n} != rg {rg_n}")
        };
        if have_rg {
            let rg = median(rg_t);
            println!(
                "{:<30} {:>8.1}ms {:>8.1}ms {:>8.2} {:>10}",
                case.name,
                ours.as_secs_f64() * 1e3,
                rg.as_secs_f64() * 1e3,
                ours.as_secs_f64() / rg.as_secs_f64(),
                counts
            );
        } else {
            println!("{:<30} {:>8.1}ms {:>10} {:>8} {:>10}", case.name, ours.as_secs_f64() * 1e3, "-", "-", counts);
        }
    }
}
