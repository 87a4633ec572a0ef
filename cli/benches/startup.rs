//! How long people wait for the `toolhost` command, each figure beside a
//! peer measured in the same run:
//!
//! - `toolhost list` with the built-ins in a new process, compile cache
//!   warm: wall time and peak RSS, against `/bin/true`;
//! - the first `toolhost list` on a machine, compile cache empty, against
//!   `python -c 'import agentscope.tool'` when `AGENTSCOPE_PYTHON` names a
//!   Python with agentscope 2.0.11 installed;
//! - the first `toolhost call Bash '{"command":"echo hi"}'`, compile cache
//!   empty (baseline code; the optimised compile it starts in the
//!   background is waited for between rounds, not timed), against the same
//!   call with the cache warm.
//!
//! Run: `cargo bench --workspace --bench startup` (the workspace, so that the
//! release binary measured here is the one every other bench and test of
//! that build starts; see `toolhost_e2e::toolhost_bin`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let bin = Path::new(env!("CARGO_BIN_EXE_toolhost"));
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let scratch = tempfile::tempdir().expect("scratch dir");

    let warm_cache = scratch.path().join("warm-cache");
    let list = |cache: &Path| run_with_peak_rss(toolhost_list(bin, cache));
    list(&warm_cache);
    let (mut walls, mut peak_kib) = (Vec::new(), 0);
    for _ in 0..rounds {
        let start = Instant::now();
        peak_kib = peak_kib.max(list(&warm_cache));
        walls.push(start.elapsed());
    }
    let mut trues = timed(rounds, || {
        Command::new("/bin/true").status().expect("/bin/true");
    });
    let list_p50 = report("`toolhost list`, compile cache warm, wall", &mut walls);
    let true_p50 = report("`/bin/true`, wall (process start peer)", &mut trues);
    println!(
        "`toolhost list` peak RSS: {:.1} MiB; ratio list / true (p50): {:.0}x",
        peak_kib as f64 / 1024.0,
        list_p50.as_secs_f64() / true_p50.as_secs_f64()
    );

    let first_rounds = rounds.min(3);
    let mut round = 0;
    let mut firsts = timed(first_rounds, || {
        round += 1;
        list(&scratch.path().join(format!("empty-cache-{round}")));
    });
    let first_p50 = report("first `toolhost list`, compile cache empty", &mut firsts);
    match std::env::var_os("AGENTSCOPE_PYTHON") {
        Some(python) => {
            let mut imports = timed(first_rounds, || {
                let status = Command::new(&python).args(["-c", "import agentscope.tool"]).status().expect("python");
                assert!(status.success(), "`import agentscope.tool` failed");
            });
            let import_p50 = report("`python -c 'import agentscope.tool'`", &mut imports);
            println!(
                "ratio agentscope import / first list (p50): {:.0}x faster",
                import_p50.as_secs_f64() / first_p50.as_secs_f64()
            );
        }
        None => println!("(AgentScope peer skipped: set AGENTSCOPE_PYTHON to a python with agentscope==2.0.11)"),
    }

    let work = scratch.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let call = |cache: &Path| toolhost_call_bash(bin, cache, &work);
    let mut round = 0;
    let mut first_calls = Vec::new();
    for _ in 0..first_rounds {
        round += 1;
        let cache = scratch.path().join(format!("empty-call-cache-{round}"));
        let start = Instant::now();
        call(&cache);
        first_calls.push(start.elapsed());
        wait_for_optimised(&cache);
    }
    let first_call_p50 = report("first `toolhost call Bash`, compile cache empty", &mut first_calls);
    let warm_call_cache = scratch.path().join("warm-call-cache");
    call(&warm_call_cache);
    wait_for_optimised(&warm_call_cache);
    let mut warm_calls = timed(rounds, || call(&warm_call_cache));
    let warm_call_p50 = report("`toolhost call Bash`, compile cache warm", &mut warm_calls);
    println!("ratio first call / warm call (p50): {:.1}x", first_call_p50.as_secs_f64() / warm_call_p50.as_secs_f64());
}

fn toolhost_call_bash(bin: &Path, cache: &Path, work: &Path) {
    let out = Command::new(bin)
        .arg("--cache-dir")
        .arg(cache)
        .arg("--workdir")
        .arg(work)
        .args(["call", "Bash", r#"{"command":"echo hi"}"#])
        .output()
        .expect("starting toolhost call");
    assert!(out.status.success(), "toolhost call Bash failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
}

/// Waits until the background compile a first call starts has stored the
/// optimised code (a second entry beside the baseline one).
fn wait_for_optimised(cache: &Path) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let entries = std::fs::read_dir(cache)
            .map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "cwasm")).count())
            .unwrap_or(0);
        if entries >= 2 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the background compile did not fill {} in 300 s", cache.display());
}

fn toolhost_list(bin: &Path, cache: &Path) -> Child {
    Command::new(bin)
        .arg("--cache-dir")
        .arg(cache)
        .arg("list")
        .stdout(Stdio::null())
        .spawn()
        .expect("starting toolhost list")
}

fn timed(rounds: usize, mut f: impl FnMut()) -> Vec<Duration> {
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect()
}

fn report(name: &str, samples: &mut [Duration]) -> Duration {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{name:<48} p50 {:>9.1} ms   max {:>9.1} ms   (n={})",
        at(0.50).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3,
        samples.len()
    );
    at(0.50)
}

/// Waits for `child` and returns its own peak RSS in KiB (wait4's rusage
/// is the child's alone, unlike RUSAGE_CHILDREN).
fn run_with_peak_rss(child: Child) -> i64 {
    let pid = child.id() as libc::pid_t;
    // SAFETY: wait4 writes only into the status and rusage we pass; the
    // child is ours and is reaped exactly once (std's handle is forgotten).
    unsafe {
        let mut status = 0;
        let mut usage: libc::rusage = std::mem::zeroed();
        let reaped = libc::wait4(pid, &mut status, 0, &mut usage);
        std::mem::forget(child);
        assert_eq!(reaped, pid, "wait4 failed");
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "toolhost list failed");
        usage.ru_maxrss
    }
}
