//! The same tool in three guest languages: word-count in Rust
//! (examples/components/word-count), Python and JavaScript (the committed
//! fixtures built from examples/python and examples/js), beside AgentScope
//! 2.0.11 calling the same Python function in-process
//! (`bench/agentscope_word_count.py`, when `AGENTSCOPE_PYTHON` names a
//! Python with agentscope installed). For each: the component's size, its
//! cold compile (empty compile cache), a load from the cache, the first
//! call on a fresh host and the p50/p99 of later calls.
//!
//! Run: `cargo bench --workspace --bench guest_languages` (`ITERATIONS`,
//! default 300; `COLD_RUNS`, default 1, cold compiles per guest language;
//! `LANGUAGES=Python,JavaScript` measures only those, for a profiler).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::engine::{Runtime, RuntimeOptions};
use toolhost::tool::{Origin, load_component};
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, env_number, example, fixtures::fixture, percentile};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations: usize = env_number("ITERATIONS", 300);
    let cold_runs: usize = env_number("COLD_RUNS", 1);
    let scratch = Scratch::new();
    let file = scratch.work().join("words.txt");
    std::fs::write(&file, "one two three\nfour five\n").expect("writing the input file");
    let input = json!({"paths": [file.display().to_string()]}).to_string();
    let cache = scratch.dir.path().join("cache");

    println!(
        "{:<11} {:>9} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "language", "size", "cold compile", "cached load", "first call", "call p50", "call p99"
    );
    let only = std::env::var("LANGUAGES").ok();
    let mut rust_p50 = None;
    for (lang, path, tool) in [
        ("Rust", example("word-count"), "WordCount"),
        ("Python", fixture("word_count_py.wasm"), "word_count"),
        ("JavaScript", fixture("word_count_js.wasm"), "wordCount"),
    ] {
        if only.as_ref().is_some_and(|only| !only.split(',').any(|l| l.trim().eq_ignore_ascii_case(lang))) {
            continue;
        }
        let bytes = std::fs::read(&path).expect("reading the component");
        // Cold compiles, each in an empty cache.
        let mut cold = Vec::new();
        for _ in 0..(if lang == "Rust" { 5 } else { cold_runs }) {
            let dir = tempfile::tempdir().expect("tempdir");
            let rt = Runtime::new(&RuntimeOptions { cache_dir: Some(dir.path().into()), ..Default::default() })
                .expect("runtime");
            let start = Instant::now();
            load_component(&rt, &bytes, Origin::Builtin, lang).await.expect("load");
            cold.push(start.elapsed());
        }
        // A host over a warm cache: the load, the first call, then the rest.
        let mut settings = scratch.settings();
        settings.builtins = false;
        settings.cache_dir = Some(cache.clone());
        settings.plugins.push(path.clone());
        settings.grants.entry(tool.to_string()).or_default().add_grant("fs-read").expect("grant");
        // The first host fills the cache with optimised code (a host left
        // to itself would run baseline code while that compiles in the
        // background, and the calls below would measure both).
        let optimised = |settings| async move {
            let host = Toolhost::builder().settings(settings, None).always_optimise(true).build().await.expect("host");
            host.ready().await.expect("loading the plugin");
            host
        };
        drop(optimised(settings.clone()).await);
        let start = Instant::now();
        let host = optimised(settings).await;
        let cached_load = start.elapsed();
        let start = Instant::now();
        let r = host.call(CallRequest::new(tool, input.clone())).finish(PermissionAnswer::Deny).await.into_response();
        let first = start.elapsed();
        assert!(r.text().contains("words.txt"), "{lang}: {r:?}");
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let start = Instant::now();
            let r =
                host.call(CallRequest::new(tool, input.clone())).finish(PermissionAnswer::Deny).await.into_response();
            samples.push(start.elapsed());
            assert!(r.text().contains("       2        5       24"), "{lang}: {}", r.text());
        }
        let (p50, p99) = (percentile(&mut samples, 0.5), percentile(&mut samples, 0.99));
        if lang == "Rust" {
            rust_p50 = Some(p50);
        }
        let ratio = rust_p50.map(|rust| format!("   ({:.1}x Rust's p50)", p50.as_secs_f64() / rust.as_secs_f64()));
        println!(
            "{lang:<11} {:>6.1} MB {:>9.0} ms {:>9.1} ms {:>9.2} ms {:>9.3} ms {:>9.3} ms{}",
            bytes.len() as f64 / 1e6,
            if cold.is_empty() { f64::NAN } else { ms(percentile(&mut cold, 0.5)) },
            ms(cached_load),
            ms(first),
            ms(p50),
            ms(p99),
            ratio.unwrap_or_default()
        );
    }

    if let Ok(python) = std::env::var("AGENTSCOPE_PYTHON") {
        let script = toolhost_e2e::root().join("bench/agentscope_word_count.py");
        let out =
            Command::new(&python).arg(&script).arg(&file).arg(iterations.to_string()).output().expect("running python");
        let text = String::from_utf8_lossy(&out.stdout);
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(f64::NAN)
        };
        println!(
            "{:<11} {:>9} {:>12} {:>12} {:>9.2} ms {:>9.3} ms {:>9.3} ms   (in-process, no sandbox)",
            "AgentScope",
            "-",
            "-",
            "-",
            get("first_us ") / 1e3,
            get("p50_us ") / 1e3,
            get("p99_us ") / 1e3
        );
        if !out.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        }
    } else {
        println!("(AgentScope peer skipped: set AGENTSCOPE_PYTHON to a python with agentscope==2.0.11)");
    }
}
