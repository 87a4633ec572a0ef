//! Loading a big Python or JavaScript plugin (issue 19): what a host with
//! one configured waits for, and what the other tools wait for meanwhile.
//!
//! For each fixture (word-count in Python, 19.0 MB, and in JavaScript, 12.4
//! MB): its compile with Cranelift (the optimising compiler) and with Winch
//! (the baseline one), each in an empty cache; its first load (`build()`
//! then `ready()`, empty cache) and its second (the same on the cache the
//! first filled). Then the time from `build()` until a call to another tool
//! is answered (the small Echo plugin, cached, and the TaskList built-in),
//! with the Python plugin configured on an empty cache and without it.
//!
//! Run: `cargo bench --profile dev --workspace --bench guest_load` (a dev
//! build, as the tests use; `cargo bench --workspace --bench guest_load`
//! for release). `RUNS` (default 1): repetitions of each row.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use toolhost::runtime::{Runtime, RuntimeOptions, Tier};
use toolhost::settings::Settings;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, fixtures::fixture, guest};

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(async_main());
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

async fn async_main() {
    let runs: usize = std::env::var("RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let scratch = Scratch::new();
    let fresh = || tempfile::tempdir().expect("tempdir");

    println!("{:<26} {:>12} {:>12} {:>12} {:>12}", "fixture", "Cranelift", "Winch", "first load", "second load");
    for file in ["word_count_py.wasm", "word_count_js.wasm"] {
        let path = fixture(file);
        let bytes = std::fs::read(&path).expect("reading the fixture");
        for _ in 0..runs {
            let mut tiers = Vec::new();
            for tier in [Tier::Optimised, Tier::Baseline] {
                let dir = fresh();
                let options = RuntimeOptions { cache_dir: Some(dir.path().into()), ..Default::default() };
                let rt = Runtime::new(&options).expect("runtime");
                let start = Instant::now();
                let (_, _, got) = rt.compile_in_background(&bytes, file, tier).expect("compiles");
                tiers.push(start.elapsed());
                assert_eq!(got, tier, "{file}: compiled by the asked compiler");
            }
            let cache = fresh();
            let s = settings(&scratch, cache.path(), std::slice::from_ref(&path), false);
            let mut loads = Vec::new();
            for _ in 0..2 {
                let start = Instant::now();
                let host = host(s.clone()).await;
                host.ready().await.expect("the plugin loads");
                loads.push(start.elapsed());
            }
            println!(
                "{file:<26} {:>12} {:>12} {:>12} {:>12}",
                secs(tiers[0]),
                secs(tiers[1]),
                secs(loads[0]),
                secs(loads[1])
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
                // The compile goes on on its own thread; the next row waits for it.
                host.ready().await.expect("the plugin loads");
            }
            let label = if big { "with word_count_py.wasm (empty cache)" } else { "without it" };
            println!("{label:<44} {:>16} {:>16}", secs(answers[0]), secs(answers[1]));
        }
    }
}
