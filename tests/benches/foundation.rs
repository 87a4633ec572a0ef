//! Issue-2 figures, each beside a peer measured in the same run:
//!
//! - a trivial tool call end to end (schema validation, permission check,
//!   fresh instance, call, response), p50/p99, against the same work done by
//!   a native Rust function, and against AgentScope 2.0.11 in-process when
//!   `AGENTSCOPE_PYTHON` names a Python with agentscope installed
//!   (`bench/agentscope_call.py`);
//! - loading one component on a compile-cache miss and on a hit.
//!
//! Run: `cargo bench --workspace --bench foundation`. The `toolhost list`
//! figures come from the CLI's own bench (`cli/benches/startup.rs`).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::engine::{Runtime, RuntimeOptions};
use toolhost::tool::{Origin, load_component};
use toolhost::{CallRequest, PermissionAnswer};
use toolhost_e2e::{Scratch, env_number, guest, percentile};

fn report(name: &str, samples: &mut [Duration]) -> (Duration, Duration) {
    let p50 = percentile(samples, 0.50);
    let p99 = percentile(samples, 0.99);
    println!(
        "{name:<48} p50 {:>9.1} µs   p99 {:>9.1} µs   (n={})",
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6,
        samples.len()
    );
    (p50, p99)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations: usize = env_number("ITERATIONS", 5_000);
    let scratch = Scratch::new();
    let mut settings = scratch.settings();
    settings.builtins = false;
    settings.plugins.push(guest("echo"));
    let host = scratch.host(settings).await;
    println!("pooling allocator: {}", host.runtime().pooling());

    // 1. Trivial call end to end.
    let input = json!({"text": "hi"}).to_string();
    for _ in 0..200 {
        host.call(CallRequest::new("Echo", input.clone())).finish(PermissionAnswer::Deny).await;
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let r = host.call(CallRequest::new("Echo", input.clone())).finish(PermissionAnswer::Deny).await.into_response();
        samples.push(start.elapsed());
        assert_eq!(r.text(), "hi");
    }
    let (call_p50, _) = report("toolhost: trivial call, end to end", &mut samples);

    // The same work natively: parse, validate, a permission decision, the call.
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let validator = jsonschema::validator_for(&schema).expect("schema");
    let mut native = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let value: serde_json::Value = serde_json::from_str(&input).expect("json");
        assert!(validator.is_valid(&value));
        let read_only = std::hint::black_box(true);
        let text = if read_only { value["text"].as_str().unwrap_or_default().to_string() } else { String::new() };
        std::hint::black_box(text);
        native.push(start.elapsed());
    }
    let (native_p50, _) = report("native Rust function, same work", &mut native);
    println!("ratio toolhost / native (p50): {:.1}x", call_p50.as_secs_f64() / native_p50.as_secs_f64());

    if let Ok(python) = std::env::var("AGENTSCOPE_PYTHON") {
        let script = toolhost_e2e::root().join("bench/agentscope_call.py");
        let out = Command::new(&python).arg(&script).arg(iterations.to_string()).output().expect("running python");
        let text = String::from_utf8_lossy(&out.stdout);
        print!("{text}");
        if let Some(p50) =
            text.lines().find_map(|l| l.strip_prefix("p50_us ")).and_then(|v| v.trim().parse::<f64>().ok())
        {
            println!("ratio AgentScope / toolhost (p50): {:.2}x faster", p50 / (call_p50.as_secs_f64() * 1e6));
        }
    } else {
        println!("(AgentScope peer skipped: set AGENTSCOPE_PYTHON to a python with agentscope==2.0.11)");
    }

    // 2. Loading one component, compile-cache miss vs hit.
    let bytes = std::fs::read(guest("escape")).expect("escape.wasm");
    let mut misses = Vec::new();
    let mut hits = Vec::new();
    for _ in 0..5 {
        let dir = tempfile::tempdir().expect("tempdir");
        let rt = Runtime::new(&RuntimeOptions { cache_dir: Some(dir.path().into()), ..Default::default() })
            .expect("runtime");
        let start = Instant::now();
        load_component(&rt, &bytes, Origin::Builtin, "escape").await.expect("load");
        misses.push(start.elapsed());
        let start = Instant::now();
        load_component(&rt, &bytes, Origin::Builtin, "escape").await.expect("load");
        hits.push(start.elapsed());
    }
    let (miss, _) = report(&format!("load a {} KB component, cache miss", bytes.len() / 1024), &mut misses);
    let (hit, _) = report("load the same component, cache hit", &mut hits);
    println!("ratio miss / hit (p50): {:.0}x", miss.as_secs_f64() / hit.as_secs_f64());
}
