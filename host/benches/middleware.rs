//! The extra cost of one pass-through middleware component per call.
//!
//! Run: `cargo bench -p toolhost --bench middleware`
//!
//! Calls the `Echo` test tool through the whole pipeline (validation,
//! permission engine, fresh instance, streaming, response) without and with
//! `mw-pass` (tests/guests/mw-pass: `next.run(input)?.forward(out)`)
//! attached, in the same process and run. Criterion reports the mean of
//! each; then a second pass alternates the two, `SAMPLES` calls each, and
//! prints p50/p99 and the difference. The components are built from
//! tests/guests first (a no-op when fresh).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolhost::{CallRequest, PermissionAnswer, Toolhost};

const SAMPLES: usize = 2000;

fn guests() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let out = target.join("test-components").join("guests");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root.join("tests/guests"))
        .args([
            "build",
            "--quiet",
            "--release",
            "--target",
            "wasm32-wasip2",
            "-p",
            "echo",
            "-p",
            "mw-pass",
            "--target-dir",
        ])
        .arg(&out)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .expect("running cargo to build the bench components");
    assert!(status.success(), "building tests/guests/echo and mw-pass failed");
    out.join("wasm32-wasip2").join("release")
}

async fn host(dir: &Path) -> Toolhost {
    let settings = toolhost::settings::Settings {
        builtins: false,
        cache_dir: Some(std::env::temp_dir().join("toolhost-bench-cache")),
        plugins: vec![dir.join("echo.wasm")],
        ..Default::default()
    };
    let host = Toolhost::builder().settings(settings, None).build().await.expect("host");
    host.load_middleware(&dir.join("mw_pass.wasm")).await.expect("mw-pass");
    host
}

async fn one_call(host: &Toolhost, tool: &str) {
    let r =
        host.call(CallRequest::new(tool, r#"{"text":"hello"}"#)).finish(PermissionAnswer::Deny).await.into_response();
    assert_eq!(r.text(), "hello");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn bench(c: &mut Criterion) {
    let dir = guests();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let plain = rt.block_on(host(&dir));
    let wrapped = rt.block_on(host(&dir));
    wrapped.attach("Echo", ["mw-pass"]).expect("attach");

    let mut group = c.benchmark_group("echo call");
    group.bench_function("no middleware", |b| b.to_async(&rt).iter(|| one_call(&plain, "Echo")));
    group.bench_function("one pass-through middleware", |b| b.to_async(&rt).iter(|| one_call(&wrapped, "Echo")));
    group.finish();

    let (mut without, mut with) = (Vec::with_capacity(SAMPLES), Vec::with_capacity(SAMPLES));
    rt.block_on(async {
        for _ in 0..SAMPLES {
            let t = Instant::now();
            one_call(&plain, "Echo").await;
            without.push(t.elapsed());
            let t = Instant::now();
            one_call(&wrapped, "Echo").await;
            with.push(t.elapsed());
        }
    });
    without.sort();
    with.sort();
    println!(
        "\nper-call latency, {SAMPLES} alternating calls each (pooling allocator: {}):",
        plain.runtime().pooling()
    );
    for (label, p) in [("p50", 0.50), ("p99", 0.99)] {
        let (a, b) = (percentile(&without, p), percentile(&with, p));
        println!(
            "  {label}: no middleware {:>8.1} µs | one pass-through middleware {:>8.1} µs | extra {:>7.1} µs ({:.2}x)",
            a.as_secs_f64() * 1e6,
            b.as_secs_f64() * 1e6,
            (b.as_secs_f64() - a.as_secs_f64()) * 1e6,
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
