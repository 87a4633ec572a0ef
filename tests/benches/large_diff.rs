//! Write and Edit of a 60 000-line file (1.6 MB) through the built-in
//! components, which put a unified diff of the change in their metadata,
//! beside GNU `diff -u` of the same two files and AgentScope 2.0.11's own
//! Write and Edit (`bench/agentscope_large_diff.py`, `difflib`), in the same
//! run. Each toolhost figure is the median wall time of the Write or Edit
//! call alone (a Read of the file before each, as the tools require), end
//! to end: schema, permission engine, the component, the write, the diff.
//!
//! Run: `AGENTSCOPE_PYTHON=/tmp/as-venv/bin/python cargo bench --workspace
//! --profile dev --bench large_diff` (`RUNS`, default 3; the guests are
//! release builds whatever the profile, and the diff is in the guest).
//! Without `AGENTSCOPE_PYTHON` the AgentScope column is left out; a peer
//! run still going after `PEER_CAP_S` seconds (default 300) is stopped and
//! shown as such.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::permission::Mode;
use toolhost::response::{ResultState, ToolResponse};
use toolhost::state::AgentState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::Scratch;
use toolhost_e2e::env_number;

const LINES: usize = 60_000;

/// One change of the file: a Write of `new`, or an Edit that turns `old`
/// into `new`.
struct Scenario {
    name: &'static str,
    old: String,
    new: String,
    edit: Option<(String, String, bool)>,
}

fn line(i: usize) -> String {
    format!("    let value_{i:05} = compute(\"{i:05}\", {}); // line {i}\n", i % 97)
}

fn scenarios() -> Vec<Scenario> {
    let old: String = (0..LINES).map(line).collect();
    let every_other: String =
        (0..LINES).map(|i| if i % 2 == 0 { line(i) } else { line(i).replace("compute", "COMPUTE") }).collect();
    let halves: String = (LINES / 2..LINES).chain(0..LINES / 2).map(line).collect();
    let rewritten: String = (0..LINES).map(|i| format!("fn rewritten_{i:05}() -> u32 {{ {i} }}\n")).collect();
    let one = old.replacen(&line(31_337), &line(31_337).replace("compute", "recompute"), 1);
    let odd_old: String =
        (0..LINES).map(|i| if i % 2 == 1 { line(i).replace("compute", "old_api") } else { line(i) }).collect();
    let odd_new = odd_old.replace("old_api(", "new_api(");
    vec![
        Scenario {
            name: "Write: the same content (empty diff; the cost of moving 1.6 MB)",
            old: old.clone(),
            new: old.clone(),
            edit: None,
        },
        Scenario { name: "Write: every line new", old: old.clone(), new: rewritten, edit: None },
        Scenario { name: "Write: every other line changed", old: old.clone(), new: every_other, edit: None },
        Scenario { name: "Write: the two halves swapped", old: old.clone(), new: halves, edit: None },
        Scenario {
            name: "Edit: one line",
            old: old.clone(),
            new: one,
            edit: Some((line(31_337), line(31_337).replace("compute", "recompute"), false)),
        },
        Scenario {
            name: "Edit: replace_all on every other line",
            old: odd_old,
            new: odd_new,
            edit: Some(("old_api(".into(), "new_api(".into(), true)),
        },
    ]
}

async fn call(host: &Toolhost, state: &Arc<AgentState>, tool: &str, input: &Value) -> ToolResponse {
    host.call(CallRequest::new(tool, input.to_string()).session(state.clone()).mode(Mode::AcceptEdits))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response()
}

/// The toolhost call of `s` on `file`, timed, or `None` when it ran out
/// of the call's time limit; checks the file and the diff.
async fn toolhost_once(host: &Toolhost, s: &Scenario, file: &Path) -> Option<Duration> {
    std::fs::write(file, &s.old).unwrap();
    let state = Arc::new(AgentState::new());
    let path = file.display().to_string();
    let read = call(host, &state, "Read", &json!({"file_path": path})).await;
    assert_eq!(read.state, ResultState::Success, "{}", read.text());
    let (tool, input) = match &s.edit {
        None => ("Write", json!({"file_path": path, "content": s.new})),
        Some((old, new, all)) => {
            ("Edit", json!({"file_path": path, "old_string": old, "new_string": new, "replace_all": all}))
        }
    };
    let start = Instant::now();
    let r = call(host, &state, tool, &input).await;
    let took = start.elapsed();
    if r.state == ResultState::Error && r.text().contains("time limit") {
        return None;
    }
    assert_eq!(r.state, ResultState::Success, "{}: {}", s.name, r.text());
    assert_eq!(std::fs::read_to_string(file).unwrap(), s.new, "{}", s.name);
    let diff = r.metadata["diff"].as_str().expect("a diff");
    assert!(
        (s.old == s.new && diff.is_empty()) || (diff.starts_with("--- a/") && diff.contains("\n@@ -")),
        "{}: {}",
        s.name,
        &diff[..diff.len().min(200)]
    );
    Some(took)
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// The median of the runs, or how long the runs that timed out were given.
fn ours(v: Vec<Option<Duration>>, limit_ms: u64) -> String {
    match v.into_iter().collect::<Option<Vec<_>>>() {
        Some(v) => format!("{:.1}", median(v)),
        None => format!("> {} s (the call's time limit)", limit_ms / 1000),
    }
}

/// `diff -u old new`, timed (output to a pipe, as the tools' diff is kept).
fn gnu_diff(old: &Path, new: &Path) -> Duration {
    let start = Instant::now();
    let out = Command::new("diff").arg("-u").arg(old).arg(new).output().expect("running diff");
    let took = start.elapsed();
    assert!(matches!(out.status.code(), Some(0 | 1)), "diff failed: {}", String::from_utf8_lossy(&out.stderr));
    took
}

/// AgentScope's median for the scenario `name`, or `None` when it had not
/// finished after `cap` (it is stopped: difflib is quadratic on some).
fn agentscope(python: &str, scenarios: &Path, runs: usize, name: &str, cap: Duration) -> Option<f64> {
    let script = toolhost_e2e::root().join("bench/agentscope_large_diff.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(scenarios)
        .arg(runs.to_string())
        .arg(name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running python");
    let start = Instant::now();
    while child.try_wait().expect("waiting for python").is_none() {
        if start.elapsed() > cap {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("python's output");
    assert!(out.status.success(), "the AgentScope peer failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let (_, ms) = text.lines().find_map(|l| l.split_once('\t')).expect("a figure from the AgentScope peer");
    Some(ms.parse().unwrap())
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs: usize = env_number("RUNS", 3);
    let scratch = Scratch::new();
    let settings = scratch.settings();
    let limit_ms = settings.limits.timeout_ms;
    let host = scratch.host(settings).await;
    let work = scratch.work();
    let file = work.join("big.rs");
    let scenarios = scenarios();
    let mut manifest = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let (old, new): (PathBuf, PathBuf) = (work.join(format!("{i}.old")), work.join(format!("{i}.new")));
        std::fs::write(&old, &s.old).unwrap();
        std::fs::write(&new, &s.new).unwrap();
        let mut entry = json!({"name": s.name, "old": old, "new": new, "file": work.join(format!("as-{i}.rs")),
            "tool": if s.edit.is_some() { "Edit" } else { "Write" }});
        if let Some((old_string, new_string, all)) = &s.edit {
            entry["old_string"] = json!(old_string);
            entry["new_string"] = json!(new_string);
            entry["replace_all"] = json!(all);
        }
        manifest.push(entry);
    }
    let manifest_path = work.join("scenarios.json");
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    // The first call compiles the components (cached): not measured.
    toolhost_once(&host, &scenarios[4], &file).await;

    let python = std::env::var("AGENTSCOPE_PYTHON").ok();
    let cap = Duration::from_secs(env_number("PEER_CAP_S", 300) as u64);
    println!("{LINES}-line file, {runs} runs, medians (ms)");
    println!("| change | toolhost | diff -u | AgentScope 2.0.11 |");
    println!("|---|---|---|---|");
    for (i, s) in scenarios.iter().enumerate() {
        let mut mine = Vec::new();
        let mut gnu = Vec::new();
        for _ in 0..runs {
            mine.push(toolhost_once(&host, s, &file).await);
            gnu.push(gnu_diff(&work.join(format!("{i}.old")), &work.join(format!("{i}.new"))));
        }
        let theirs = match &python {
            None => "—".to_string(),
            Some(py) => agentscope(py, &manifest_path, runs, s.name, cap)
                .map_or(format!("> {} s (stopped)", cap.as_secs()), |ms| format!("{ms:.1}")),
        };
        println!("| {} | {} | {:.1} | {theirs} |", s.name, ours(mine, limit_ms), median(gnu));
    }
}
