//! The file tools end to end (permission check, fresh instance, component
//! call, host search/walk) against `rg` and `find`, side by side, plus Read
//! paging through a 10 MB file.
//!
//! Run: `cargo bench -p toolhost-e2e --bench file_tools -- [CORPUS] [RUNS]`
//! (CORPUS defaults to ~/.cargo/registry/src, RUNS to 5). Each line gives
//! the median wall time of the tool call and of the peer (`rg` with the
//! reference's flags, or `find`, output to a pipe) and the ratio. Grep and
//! Glob answers are checked against the peer's (line counts) first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolhost::permission::Mode;
use toolhost::response::ToolResponse;
use toolhost::settings::Settings;
use toolhost::state::AgentState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};

/// `rg` with the reference's flags, before the mode flags.
fn rg_reference_argv() -> Vec<String> {
    std::iter::once("rg").chain(toolhost_e2e::RG_REFERENCE_FLAGS.iter().copied()).map(str::to_string).collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

async fn call(host: &Toolhost, state: &Arc<AgentState>, tool: &str, input: serde_json::Value) -> ToolResponse {
    host.call(CallRequest::new(tool, input.to_string()).session(state.clone()).mode(Mode::Default))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response()
}

fn run_peer(argv: &[String], cwd: &Path) -> (Duration, usize) {
    let t = Instant::now();
    let out = Command::new(&argv[0]).args(&argv[1..]).current_dir(cwd).output().expect("running the peer");
    let d = t.elapsed();
    (d, out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count())
}

fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let corpus = PathBuf::from(args.first().cloned().unwrap_or_else(|| format!("{home}/.cargo/registry/src")));
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
    let corpus = corpus.canonicalize().expect("corpus directory");
    let scratch = tempfile::tempdir().expect("tempdir");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();

    let mut settings = Settings::default();
    settings.permissions.working_dirs = vec![corpus.display().to_string(), scratch.path().display().to_string()];
    settings.cache_dir = Some(root.join("target/bench-cache"));
    let host = Toolhost::builder().settings(settings, None).build().await.expect("host");
    let state = Arc::new(AgentState::new());
    println!("corpus {} ({runs} runs, medians)", corpus.display());

    // Read: a 10 MB file, paged 2000 lines at a time.
    let big = scratch.path().join("big.txt");
    let line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTU\n";
    std::fs::write(&big, line.repeat(10 * 1024 * 1024 / line.len())).unwrap();
    let total_lines = 10 * 1024 * 1024 / line.len();
    let big_s = big.display().to_string();
    let mut cold = Vec::new();
    for _ in 0..runs {
        let fresh = Arc::new(AgentState::new());
        let t = Instant::now();
        let r = call(&host, &fresh, "Read", serde_json::json!({"file_path": big_s, "offset": 1})).await;
        cold.push(t.elapsed());
        assert!(r.text().starts_with("     1\t0123"), "{:?}", r.text().get(..100));
    }
    call(&host, &state, "Read", serde_json::json!({"file_path": big_s})).await;
    let mut warm = Vec::new();
    for i in 0..runs.max(5) {
        let offset = 1 + (i * 37_000) % (total_lines - 2000);
        let t = Instant::now();
        let r =
            call(&host, &state, "Read", serde_json::json!({"file_path": big_s, "offset": offset, "limit": 2000})).await;
        warm.push(t.elapsed());
        assert!(r.text().starts_with(&format!("{offset:>6}\t")), "offset {offset}");
    }
    println!("Read 10 MB, first page (read + cache)     {:>10}", ms(median(cold)));
    println!("Read 10 MB, a later page (from the cache) {:>10}", ms(median(warm)));

    let rg = have("rg");
    if !rg {
        println!("rg not found: Grep/Glob peers skipped");
    }
    let c = corpus.display().to_string();
    let grep_cases: &[(&str, serde_json::Value, &[&str])] = &[
        (
            "Grep content, literal",
            serde_json::json!({"pattern": "unsafe", "output_mode": "content"}),
            &["-n", "unsafe"],
        ),
        (
            "Grep content, regex",
            serde_json::json!({"pattern": r"fn [a-z_]+_with\(", "output_mode": "content"}),
            &["-n", r"fn [a-z_]+_with\("],
        ),
        ("Grep files, literal", serde_json::json!({"pattern": "unsafe"}), &["-l", "unsafe"]),
        ("Grep files, regex", serde_json::json!({"pattern": r"fn [a-z_]+_with\("}), &["-l", r"fn [a-z_]+_with\("]),
    ];
    for (name, input, rg_args) in grep_cases {
        let mut all = input.clone();
        all["head_limit"] = serde_json::json!(0);
        let r = call(&host, &state, "Grep", all).await;
        // With head_limit 0 a large answer can hit the host's output cap.
        let capped = r.text().contains("(output truncated");
        let ours_lines = r.text().lines().filter(|l| !l.is_empty() && !l.starts_with("... (output truncated")).count();
        let mut argv: Vec<String> = rg_reference_argv();
        argv.extend(rg_args.iter().map(|s| s.to_string()));
        argv.push(c.clone());
        let mut ours = Vec::new();
        let mut peer = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            let r = call(&host, &state, "Grep", input.clone()).await;
            ours.push(t.elapsed());
            assert!(!r.text().is_empty());
            if rg {
                peer.push(run_peer(&argv, &corpus).0);
            }
        }
        if rg {
            let (_, rg_lines) = run_peer(&argv, &corpus);
            let (o, p) = (median(ours), median(peer));
            println!(
                "{name:<28} tool {:>10}   rg {:>10}   ratio {:.2}   lines {ours_lines}{} vs rg {rg_lines}",
                ms(o),
                ms(p),
                o.as_secs_f64() / p.as_secs_f64(),
                if capped { " (at the output cap)" } else { "" }
            );
        } else {
            println!("{name:<28} tool {:>10}", ms(median(ours)));
        }
    }

    // Glob **/*.rs vs `rg --files -g '*.rs'` and `find -name '*.rs'`.
    let input = serde_json::json!({"pattern": "**/*.rs"});
    let text = call(&host, &state, "Glob", input.clone()).await.text();
    let total: usize = text
        .rsplit_once("of ")
        .and_then(|(_, t)| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| text.lines().count());
    let mut ours = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        call(&host, &state, "Glob", input.clone()).await;
        ours.push(t.elapsed());
    }
    let o = median(ours);
    let mut peers: Vec<(&str, Vec<String>)> = vec![(
        "find",
        ["find", &c, "-type", "f", "-name", "*.rs", "-not", "-path", "*/.git/*"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    )];
    if rg {
        let mut argv: Vec<String> = rg_reference_argv();
        argv.extend(["--files", "--glob", "*.rs", &c].iter().map(|s| s.to_string()));
        peers.insert(0, ("rg --files", argv));
    }
    // Where the Glob time goes: a walk whose entries all cross into the
    // guest but match nothing, and the fixed cost of a call on a tiny tree.
    let tiny = scratch.path().join("tiny");
    std::fs::create_dir_all(&tiny).unwrap();
    std::fs::write(tiny.join("a.rs"), "").unwrap();
    for (what, input) in [
        ("Glob, walk of everything, no match", serde_json::json!({"pattern": "**/*.no-such-extension"})),
        (
            "Glob, fixed cost (1-file tree)",
            serde_json::json!({"pattern": "**/*.rs", "path": tiny.display().to_string()}),
        ),
    ] {
        let mut t = Vec::new();
        for _ in 0..runs {
            let s = Instant::now();
            call(&host, &state, "Glob", input.clone()).await;
            t.push(s.elapsed());
        }
        println!("{what:<40} {:>10}", ms(median(t)));
    }
    for (peer_name, argv) in peers {
        let times: Vec<Duration> = (0..runs).map(|_| run_peer(&argv, &corpus).0).collect();
        let (_, n) = run_peer(&argv, &corpus);
        let p = median(times);
        println!(
            "Glob **/*.rs vs {peer_name:<11} tool {:>10}   peer {:>10}   ratio {:.2}   files {total} vs {n}",
            ms(o),
            ms(p),
            o.as_secs_f64() / p.as_secs_f64()
        );
    }
}
