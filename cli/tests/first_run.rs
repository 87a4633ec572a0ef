//! The first run on a machine, through the real binary and the real
//! built-ins: `toolhost list` on an empty compile cache compiles nothing; a
//! first call runs on baseline code and leaves a background process that
//! stores the optimised code, which the next process runs.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn toolhost(cache: &Path, work: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("--cache-dir").arg(cache).arg("--workdir").arg(work).args(args).env_remove("RUST_LOG");
    cmd
}

fn ok(mut cmd: Command) -> Output {
    let out = cmd.output().expect("running toolhost");
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn artifacts(cache: &Path) -> usize {
    std::fs::read_dir(cache)
        .map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "cwasm")).count())
        .unwrap_or(0)
}

#[test]
fn list_on_an_empty_cache_lists_every_builtin_and_compiles_nothing() {
    let (cache, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = ok(toolhost(cache.path(), work.path(), &["list", "--json"]));
    let tools: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("list --json");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "AskUser",
            "Bash",
            "Edit",
            "Glob",
            "Grep",
            "PowerShell",
            "Read",
            "TaskCreate",
            "TaskGet",
            "TaskList",
            "TaskUpdate",
            "Write"
        ]
    );
    for t in &tools {
        assert!(!t["description"].as_str().unwrap().is_empty(), "{t}");
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
        assert_eq!(t["origin"]["kind"], "builtin", "{t}");
    }
    let bash = tools.iter().find(|t| t["name"] == "Bash").unwrap();
    assert_eq!(bash["capabilities"]["process_exec"], true);
    assert_eq!(artifacts(cache.path()), 0, "list compiled something into the cache");
    let describe = ok(toolhost(cache.path(), work.path(), &["describe", "Read"]));
    assert!(String::from_utf8_lossy(&describe.stdout).contains("Reads a file"));
    assert_eq!(artifacts(cache.path()), 0, "describe compiled something into the cache");
}

#[test]
fn a_first_call_runs_on_baseline_code_and_the_next_process_on_cached_optimised_code() {
    let (cache, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let call = |log: bool| {
        let mut cmd = toolhost(cache.path(), work.path(), &["call", "Bash", r#"{"command":"echo hi"}"#]);
        if log {
            cmd.env("RUST_LOG", "toolhost=debug");
        }
        let out = ok(cmd);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let first = call(true);
    assert!(first.contains("loaded built-in tool Bash: Baseline code (compile cache: Miss)"), "{first}");
    // stderr is not a terminal here: no progress lines.
    assert!(!first.contains("compiling"), "{first}");

    // The background process stores the optimised code beside the baseline
    // code (entries are renamed into place once complete).
    let deadline = Instant::now() + Duration::from_secs(600);
    while artifacts(cache.path()) < 2 {
        assert!(Instant::now() < deadline, "no optimised code was cached in 600 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let second = call(true);
    assert!(second.contains("loaded built-in tool Bash: Optimised code (compile cache: Hit)"), "{second}");
    assert_eq!(artifacts(cache.path()), 2, "the second process compiled nothing");
}
