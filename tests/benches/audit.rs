//! The audit log's cost (issue #17): a trivial call end to end (the Echo
//! guest, as in `foundation`), p50 and p99, on two hosts in the same run,
//! one without an audit log and one writing every call to a file, their
//! calls interleaved so both see the same machine. The budget is +10 % at
//! p50. Also reports how many records were written and dropped.
//!
//! Run: `cargo bench --workspace --bench audit` (`ITERATIONS`, default 20 000).

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, env_number, guest, percentile};

fn report(name: &str, samples: &mut [Duration]) -> Duration {
    let p50 = percentile(samples, 0.50);
    let p99 = percentile(samples, 0.99);
    println!(
        "{name:<40} p50 {:>8.1} µs   p99 {:>8.1} µs   (n={})",
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6,
        samples.len()
    );
    p50
}

async fn once(host: &Toolhost, input: &str) -> Duration {
    let start = Instant::now();
    let r = host.call(CallRequest::new("Echo", input)).finish(PermissionAnswer::Deny).await.into_response();
    let elapsed = start.elapsed();
    assert_eq!(r.text(), "hi");
    elapsed
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations: usize = env_number("ITERATIONS", 20_000);
    let scratch = Scratch::new();
    let mut settings = scratch.settings();
    settings.builtins = false;
    settings.plugins.push(guest("echo"));
    let plain = scratch.host(settings.clone()).await;
    let log = scratch.outside("audit.jsonl");
    settings.audit.path = Some(log.clone());
    let audited = scratch.host(settings).await;

    let input = json!({"text": "hi"}).to_string();
    for _ in 0..500 {
        once(&plain, &input).await;
        once(&audited, &input).await;
    }
    let (mut without, mut with) = (Vec::with_capacity(iterations), Vec::with_capacity(iterations));
    for i in 0..iterations {
        // Alternate which goes first, so neither always follows the other.
        if i % 2 == 0 {
            without.push(once(&plain, &input).await);
            with.push(once(&audited, &input).await);
        } else {
            with.push(once(&audited, &input).await);
            without.push(once(&plain, &input).await);
        }
    }
    let base = report("trivial call, no audit log", &mut without);
    let logged = report("trivial call, audit log to a file", &mut with);
    let overhead = (logged.as_secs_f64() / base.as_secs_f64() - 1.0) * 100.0;
    println!("audit overhead at p50: {overhead:+.1} % (budget +10 %)");
    let audit = audited.audit_log().expect("audit log");
    audit.close();
    let stats = audit.stats();
    let bytes = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    println!(
        "records written {}, dropped {}, failed {}; {} bytes ({} per record)",
        stats.written,
        stats.dropped,
        stats.failed,
        bytes,
        bytes / stats.written.max(1)
    );
}
