//! The local sandbox's cost per process, beside the unsandboxed call
//! measured in the same run: a trivial Bash call (`echo hi`) end to end
//! through the built-in Bash tool, and a bare `spawn` of `/bin/true` on the
//! backend (where the Landlock ruleset, seccomp filter and cgroups are made).
//! Calls alternate between the two hosts so drift on a shared machine hits
//! both alike.
//!
//! Run: `cargo bench -p toolhost-e2e --bench sandbox` (`ITERATIONS`, default 300).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::backend::local::LocalBackend;
use toolhost::backend::local::sandbox::{Sandbox, SandboxMode, SandboxSettings};
use toolhost::backend::{Backend, ExecRequest};
use toolhost::permission::Mode;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, env_number, percentile};

fn report(name: &str, samples: &mut [Duration]) -> Duration {
    let p50 = percentile(samples, 0.50);
    let p99 = percentile(samples, 0.99);
    println!(
        "{name:<52} p50 {:>8.2} ms   p99 {:>8.2} ms   (n={})",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        samples.len()
    );
    p50
}

/// Reports both sides and the sandbox's cost per `unit`.
fn compare(name: &str, unsandboxed: &mut [Duration], sandboxed: &mut [Duration], unit: &str) {
    let pa = report(&format!("{name}, unsandboxed"), unsandboxed);
    let pb = report(&format!("{name}, sandboxed"), sandboxed);
    println!(
        "sandboxed / unsandboxed (p50): {:.2}x, +{:.2} ms per {unit}",
        pb.as_secs_f64() / pa.as_secs_f64(),
        (pb.as_secs_f64() - pa.as_secs_f64()) * 1e3
    );
}

async fn bash_call(host: &Toolhost) -> Duration {
    let input = json!({"command": "echo hi"}).to_string();
    let start = Instant::now();
    let r = host
        .call(CallRequest::new("Bash", input).mode(Mode::Bypass))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response();
    let took = start.elapsed();
    assert_eq!(r.text(), "hi\n");
    took
}

async fn spawn_true(backend: &LocalBackend, roots: &[std::path::PathBuf]) -> Duration {
    let request = ExecRequest {
        argv: vec!["/bin/true".into()],
        cwd: None,
        env: vec![],
        timeout: Duration::from_secs(10),
        max_output_bytes: 0,
        write_roots: roots.to_vec(),
        read_only: false,
    };
    let start = Instant::now();
    let mut process = backend.spawn(&request).await.expect("spawn");
    let status = process.wait().await;
    let took = start.elapsed();
    assert_eq!(status.code, 0);
    took
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations: usize = env_number("ITERATIONS", 300);
    let scratch = Scratch::new();
    let mut plain = scratch.settings();
    plain.backend.set_option("local", "sandbox", "off");
    let mut confined = scratch.settings();
    confined.backend.set_option("local", "sandbox", "on");
    let plain = scratch.host(plain).await;
    let confined = scratch.host(confined).await;
    for _ in 0..20 {
        bash_call(&plain).await;
        bash_call(&confined).await;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        a.push(bash_call(&plain).await);
        b.push(bash_call(&confined).await);
    }
    compare("Bash `echo hi`, end to end", &mut a, &mut b, "call");

    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into()));
    let settings = SandboxSettings { sandbox: SandboxMode::On, ..Default::default() };
    let roots = vec![scratch.work()];
    let sandbox = Sandbox::from_settings(&settings, &home, &roots, Default::default()).expect("sandbox").expect("on");
    println!("sandbox: {}", sandbox.describe());
    let open = LocalBackend::new(scratch.work(), home.clone());
    let shut = LocalBackend::new(scratch.work(), home).with_sandbox(Arc::new(sandbox));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        a.push(spawn_true(&open, &roots).await);
        b.push(spawn_true(&shut, &roots).await);
    }
    compare("spawn /bin/true on the backend", &mut a, &mut b, "process");
}
