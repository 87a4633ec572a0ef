//! Issue-17 figures: the per-call cost of the built-ins an agent calls most
//! (Read of a small file, Glob of a small folder, TaskList), each against
//! the trivial call (the `echo` plugin) measured in the same run, and
//! against AgentScope 2.0.11's own Read, Glob and TaskList called in-process
//! when `AGENTSCOPE_PYTHON` names a Python with agentscope installed
//! (`bench/agentscope_file_tools.py`, same fixture).
//!
//! Every call is end to end through the library, as an agent makes it: a
//! session's agent state, schema validation, the permission engine in the
//! default mode, fresh instances, the call, the accumulated response. The
//! tools are measured in interleaved rounds, so a change in the machine's
//! load reaches every row alike.
//!
//! Run: `AGENTSCOPE_PYTHON=/tmp/as-venv/bin/python cargo bench --workspace --bench per_call`
//! (`ITERATIONS`, default 5 000 per tool; `ONLY=Read` for one tool beside
//! the trivial call, e.g. under `perf record`).

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::Toolhost;
use toolhost::state::AgentState;
use toolhost_e2e::{Scratch, env_number, guest, percentile};

const ROUNDS: usize = 10;

struct Case {
    name: &'static str,
    tool: &'static str,
    input: String,
    expect: &'static str,
}

async fn call(host: &Toolhost, state: &Arc<AgentState>, case: &Case) -> String {
    toolhost_e2e::session_call(host, state, case.tool, &case.input).await
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations: usize = env_number("ITERATIONS", 5_000);
    let scratch = Scratch::new();
    let work = scratch.work();
    let lines: String = (1..=20).map(|i| format!("line {i} of a small file\n")).collect();
    std::fs::write(work.join("s.txt"), lines).expect("writing s.txt");
    for i in 0..5 {
        std::fs::write(work.join(format!("f{i}.rs")), format!("fn f{i}() {{}}\n")).expect("writing f.rs");
    }
    let mut settings = scratch.settings();
    settings.plugins.push(guest("echo"));
    let host = scratch.host(settings).await;
    let state = Arc::new(AgentState::new());
    for i in 0..3 {
        let create = Case {
            name: "create",
            tool: "TaskCreate",
            input: json!({"subject": format!("task {i}"), "description": "something to do"}).to_string(),
            expect: "created",
        };
        let text = call(&host, &state, &create).await;
        assert!(text.contains(create.expect), "TaskCreate: {text}");
    }

    let dir = work.display().to_string();
    let cases = [
        Case {
            name: "trivial call (echo plugin)",
            tool: "Echo",
            input: json!({"text": "hi"}).to_string(),
            expect: "hi",
        },
        Case {
            name: "Read, 20-line file",
            tool: "Read",
            input: json!({"file_path": format!("{dir}/s.txt")}).to_string(),
            expect: "line 20",
        },
        Case {
            name: "Glob *.rs, 5 matches",
            tool: "Glob",
            input: json!({"pattern": "*.rs", "path": dir}).to_string(),
            expect: "f4.rs",
        },
        Case { name: "TaskList, 3 tasks", tool: "TaskList", input: "{}".into(), expect: "task 2" },
    ];
    // `ONLY=Read` measures one tool (for a profiler); the trivial call stays as the yardstick.
    let only = std::env::var("ONLY").ok();
    let cases: Vec<Case> =
        cases.into_iter().filter(|c| only.as_deref().is_none_or(|o| c.tool == "Echo" || c.tool == o)).collect();
    for case in &cases {
        for _ in 0..200 {
            let text = call(&host, &state, case).await;
            assert!(text.contains(case.expect), "{}: {text}", case.name);
        }
    }
    // On an empty compile cache the first use ran baseline (Winch) code and
    // the host compiles the optimised code in the background: measured is
    // what a long-running host settles on.
    wait_for_optimised_code(&host, &cases).await;
    let mut samples: Vec<Vec<Duration>> = cases.iter().map(|_| Vec::with_capacity(iterations)).collect();
    for _ in 0..ROUNDS {
        for (case, samples) in cases.iter().zip(&mut samples) {
            for _ in 0..iterations / ROUNDS {
                let start = Instant::now();
                let text = call(&host, &state, case).await;
                samples.push(start.elapsed());
                assert!(text.contains(case.expect), "{}: {text}", case.name);
            }
        }
    }

    let peer = agentscope(&dir, iterations);
    let trivial = percentile(&mut samples[0], 0.50);
    println!(
        "{:<28} {:>10} {:>10} {:>9} {:>14} {:>10}",
        "toolhost", "p50 µs", "p99 µs", "/trivial", "AgentScope p50", "faster"
    );
    for (case, samples) in cases.iter().zip(&mut samples) {
        let peer_name = if case.tool == "Echo" { "echo" } else { case.tool };
        let p50 = percentile(samples, 0.50);
        let p99 = percentile(samples, 0.99);
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let (peer_p50, faster) = match peer.get(peer_name) {
            Some(p) => (format!("{p:.1}"), format!("{:.1}x", p / us(p50))),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<28} {:>10.1} {:>10.1} {:>8.2}x {:>14} {:>10}",
            case.name,
            us(p50),
            us(p99),
            us(p50) / us(trivial),
            peer_p50,
            faster
        );
    }
}

/// Waits (at most 10 minutes, saying so) until every tool of `cases` runs
/// optimised code.
async fn wait_for_optimised_code(host: &Toolhost, cases: &[Case]) {
    let started = Instant::now();
    let mut said = false;
    while cases.iter().any(|c| host.code_tier(c.tool) == Some(toolhost::engine::Tier::Baseline)) {
        if !said {
            eprintln!("waiting for the built-ins' optimised code (compiled in the background)…");
            said = true;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "the optimised code never came");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// AgentScope's p50 per tool in microseconds, from the peer script, when
/// `AGENTSCOPE_PYTHON` is set.
fn agentscope(dir: &str, iterations: usize) -> BTreeMap<String, f64> {
    let Ok(python) = std::env::var("AGENTSCOPE_PYTHON") else {
        println!("(AgentScope peer skipped: set AGENTSCOPE_PYTHON to a python with agentscope==2.0.11)");
        return BTreeMap::new();
    };
    let script = toolhost_e2e::root().join("bench/agentscope_file_tools.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .arg(iterations.to_string())
        .output()
        .expect("running the AgentScope peer");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the AgentScope peer failed: {}", String::from_utf8_lossy(&out.stderr));
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (tool, key, value) = (words.next()?, words.next()?, words.next()?);
            if key != "p50_us" {
                return None;
            }
            Some((tool.to_string(), value.parse::<f64>().ok()?))
        })
        .collect()
}
