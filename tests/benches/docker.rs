//! The Docker backend beside AgentScope 2.0.11's own Docker workspace, in
//! the same run, on the same engine and image (`toolhost-busybox`, from
//! `.ci/docker.sh`) and the same files: a trivial Bash call (`echo hi`), a
//! Read of a 1 MB file, a Grep over a source tree (this repository's
//! `host/src`, copied into the working directory). toolhost is measured end
//! to end through its built-in tools (schema, permission engine, the
//! component instances); AgentScope through its `DockerBackend` on an
//! aiodocker container (`bench/agentscope_docker.py`, which prints its
//! p50s), the calls its tools make on that backend.
//!
//! Run: `source .ci/docker.sh; AGENTSCOPE_PYTHON=/tmp/as-venv-docker/bin/python
//! cargo bench --workspace --profile dev --bench docker` (`ITERATIONS`,
//! default 100).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::permission::Mode;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::Scratch;
use toolhost_e2e::env_number;

fn p50(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

fn p99(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * 0.99).round() as usize].as_secs_f64() * 1e3
}

async fn timed(host: &Toolhost, tool: &str, input: &Value, check: &dyn Fn(&str) -> bool) -> Duration {
    let start = Instant::now();
    let r = host
        .call(CallRequest::new(tool, input.to_string()).mode(Mode::Bypass))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response();
    let took = start.elapsed();
    assert!(check(&r.text()), "{tool}: {}", &r.text()[..r.text().len().min(300)]);
    took
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn main() {
    let iterations: usize = env_number("ITERATIONS", 100);
    let image = std::env::var("TOOLHOST_DOCKER_IMAGE").unwrap_or_else(|_| "toolhost-busybox".into());
    let scratch = Scratch::new();
    let work = scratch.work();
    let big = work.join("big.txt");
    let line = "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 the quick brown fox\n";
    std::fs::write(&big, line.repeat((1 << 20) / line.len() + 1)).unwrap();
    let src = work.join("src");
    copy_tree(&toolhost_e2e::root().join("host/src"), &src);

    let mut settings = scratch.settings();
    settings.backend.kind = "docker".into();
    settings.backend.set_option("docker", "image", image.as_str());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let host = rt.block_on(scratch.host(settings));

    let bash = json!({"command": "echo hi"});
    let read = json!({"file_path": big, "limit": 2000});
    let grep = json!({"pattern": "fn [a-z_]+\\(", "path": src, "output_mode": "content"});
    let is_hi = |t: &str| t == "hi\n";
    let is_big = |t: &str| t.len() > 100_000;
    let is_grep = |t: &str| t.contains("fn ");
    let mut samples = [Vec::new(), Vec::new(), Vec::new()];
    rt.block_on(async {
        for i in 0..iterations + 10 {
            let t = [
                timed(&host, "Bash", &bash, &is_hi).await,
                timed(&host, "Read", &read, &is_big).await,
                timed(&host, "Grep", &grep, &is_grep).await,
            ];
            if i >= 10 {
                for (s, t) in samples.iter_mut().zip(t) {
                    s.push(t);
                }
            }
        }
    });
    let names = ["Bash `echo hi`", "Read of a 1 MB file", "Grep over host/src"];
    let ours: Vec<f64> = samples.iter_mut().map(|s| p50(s)).collect();
    let ours99: Vec<f64> = samples.iter_mut().map(|s| p99(s)).collect();
    drop(host);
    rt.shutdown_timeout(Duration::from_secs(5));

    let peer = std::env::var("AGENTSCOPE_PYTHON").ok().map(|python| {
        let script = toolhost_e2e::root().join("bench/agentscope_docker.py");
        let out = Command::new(&python)
            .arg(&script)
            .args([&image, &work.display().to_string(), &iterations.to_string()])
            .output()
            .expect("running the AgentScope peer");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let value = |key: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {key} in the peer's output: {text}"))
        };
        [value("bash_p50_ms"), value("read_p50_ms"), value("grep_p50_ms")]
    });
    for (i, name) in names.iter().enumerate() {
        print!("{name:<24} toolhost p50 {:>8.2} ms  p99 {:>8.2} ms", ours[i], ours99[i]);
        match &peer {
            Some(p) => println!("   AgentScope p50 {:>8.2} ms   {:.1}x faster", p[i], p[i] / ours[i]),
            None => println!(),
        }
    }
    if peer.is_none() {
        println!("(AgentScope peer skipped: set AGENTSCOPE_PYTHON to a python with agentscope==2.0.11 and aiodocker)");
    }
}
