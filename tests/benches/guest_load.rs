//! Loading a big Python or JavaScript plugin (issue 19): what a host with
//! one configured waits for, and what the other tools wait for meanwhile.
//!
//! For each fixture (word-count in Python, 19.0 MB, and in JavaScript, 12.4
//! MB): its compile with Cranelift (the optimising compiler) and with Winch
//! (the baseline one), each in an empty cache; its first load (`build()`
//! then `ready()`, empty cache: Winch code), the p50 of 50 calls on that
//! code and, once its optimised code is swapped in, on that; its second
//! load (on the cache the first filled). Then the time from `build()` until
//! a call to another tool is answered (the small Echo plugin, cached, and
//! the TaskList built-in), with the Python plugin configured on an empty
//! cache and without it.
//!
//! Run: `cargo bench --profile dev --workspace --bench guest_load` (a dev
//! build, as the tests use; `cargo bench --workspace --bench guest_load`
//! for release). `RUNS` (default 1): repetitions of each row.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use toolhost::engine::{Runtime, RuntimeOptions, Tier};
use toolhost::settings::Settings;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, env_number, fixtures::fixture, guest};

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// Settings with `plugins`, no built-ins unless `builtins`, and `cache`.
fn settings(scratch: &Scratch, cache: &std::path::Path, plugins: &[PathBuf], builtins: bool) -> Settings {
    let mut s = scratch.settings();
    s.builtins = builtins;
    s.cache_dir = Some(cache.to_path_buf());
    s.plugins = plugins.to_vec();
    s
}

async fn host(settings: Settings) -> Toolhost {
    Toolhost::builder().settings(settings, None).build().await.expect("building the host")
}

/// The time from `build()` until a call of `tool` is answered.
async fn first_answer(settings: Settings, tool: &str, input: &str) -> (Duration, Toolhost) {
    let start = Instant::now();
    let host = host(settings).await;
    let r = host.call(CallRequest::new(tool, input)).finish(PermissionAnswer::Deny).await.into_response();
    let took = start.elapsed();
    assert!(!r.text().is_empty(), "{tool}: {r:?}");
    (took, host)
}

/// Waits until `host` loads nothing and runs no plugin on baseline code.
async fn settled(host: &Toolhost) {
    host.ready().await.expect("the plugins load");
    let mut changes = host.load_changes();
    while !host.plugins_to_optimise().is_empty() {
        changes.changed().await.expect("the host is alive");
    }
}

/// The p50 of 50 calls of `tool`.
async fn call_p50(host: &Toolhost, tool: &str, input: &str) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..50 {
        let start = Instant::now();
        let r = host.call(CallRequest::new(tool, input)).finish(PermissionAnswer::Deny).await.into_response();
        samples.push(start.elapsed());
        assert!(r.text().contains("       2        5       24"), "{tool}: {}", r.text());
    }
    toolhost_e2e::percentile(&mut samples, 0.5)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = env_number("RUNS", 1);
    let scratch = Scratch::new();
    let fresh = || tempfile::tempdir().expect("tempdir");

    let words = scratch.work().join("words.txt");
    std::fs::write(&words, "one two three\nfour five\n").expect("writing the input file");
    let input = serde_json::json!({"paths": [words]}).to_string();
    println!(
        "{:<20} {:>10} {:>10} {:>11} {:>13} {:>13} {:>12}",
        "fixture", "Cranelift", "Winch", "first load", "call p50 (W)", "call p50 (C)", "second load"
    );
    for (file, tool) in [("word_count_py.wasm", "word_count"), ("word_count_js.wasm", "wordCount")] {
        let path = fixture(file);
        let bytes = std::fs::read(&path).expect("reading the fixture");
        for _ in 0..runs {
            let mut tiers = Vec::new();
            for tier in [Tier::Optimised, Tier::Baseline] {
                let dir = fresh();
                let options = RuntimeOptions { cache_dir: Some(dir.path().into()), ..Default::default() };
                let rt = Runtime::new(&options).expect("runtime");
                let start = Instant::now();
                let (_, got) = rt.precompile(&bytes, file, tier).expect("compiles");
                tiers.push(start.elapsed());
                assert_eq!(got, tier, "{file}: compiled by the asked compiler");
            }
            let cache = fresh();
            let mut s = settings(&scratch, cache.path(), std::slice::from_ref(&path), false);
            s.grants.entry(tool.to_string()).or_default().add_grant("fs-read").expect("grant");
            let start = Instant::now();
            let first = host(s.clone()).await;
            first.ready().await.expect("the plugin loads");
            let first_load = start.elapsed();
            let on_baseline = call_p50(&first, tool, &input).await;
            assert!(!first.plugins_to_optimise().is_empty(), "{file}: measured on baseline code");
            settled(&first).await;
            let on_optimised = call_p50(&first, tool, &input).await;
            let start = Instant::now();
            host(s).await.ready().await.expect("the plugin loads");
            let second_load = start.elapsed();
            println!(
                "{file:<20} {:>10} {:>10} {:>11} {:>10.1} ms {:>10.1} ms {:>12}",
                secs(tiers[0]),
                secs(tiers[1]),
                secs(first_load),
                on_baseline.as_secs_f64() * 1e3,
                on_optimised.as_secs_f64() * 1e3,
                secs(second_load)
            );
        }
    }

    // The Echo plugin cached, the Python one not: a call to Echo, then to
    // a built-in, answered while the Python plugin compiles.
    let echo = guest("echo");
    let warm = fresh();
    host(settings(&scratch, warm.path(), std::slice::from_ref(&echo), false)).await;
    println!("\n{:<44} {:>16} {:>16}", "time from build() to the first answer", "Echo plugin", "TaskList built-in");
    for _ in 0..runs {
        for big in [false, true] {
            let mut answers = Vec::new();
            for (tool, input) in [("Echo", r#"{"text":"hi"}"#), ("TaskList", "{}")] {
                // A fresh copy of the warm cache: Echo cached, Python not.
                let cache = fresh();
                for entry in std::fs::read_dir(warm.path()).expect("the warm cache") {
                    let entry = entry.expect("an entry");
                    std::fs::copy(entry.path(), cache.path().join(entry.file_name())).expect("copying the cache");
                }
                let mut plugins = vec![echo.clone()];
                if big {
                    plugins.push(fixture("word_count_py.wasm"));
                }
                let (took, host) = first_answer(settings(&scratch, cache.path(), &plugins, true), tool, input).await;
                assert_eq!(!host.pending_loads().is_empty(), big, "the Python plugin was still compiling");
                answers.push(took);
                // The compiles go on on their own thread; the next row waits for them.
                settled(&host).await;
            }
            let label = if big { "with word_count_py.wasm (empty cache)" } else { "without it" };
            println!("{label:<44} {:>16} {:>16}", secs(answers[0]), secs(answers[1]));
        }
    }
}
