//! What keeping the agent state in Redis costs a call, beside the same
//! calls on the local stores in the same run: TaskCreate (a get and a
//! compare-and-set), TaskList (a get) and Read of a small file (a
//! read-cache record), one call in flight, through the library, on a
//! state in `MemoryStore`, `FileStore` and `RedisStore` (a `redis-server`
//! of the bench's own on loopback, persistence as Debian ships it:
//! `appendonly no`, snapshots off here).
//!
//! Run: `cargo bench -p toolhost-e2e --bench state_store` (`CALLS=N` per
//! row, default 2000). Per row: p50 and p99, the p50 over the memory
//! store's, and for Redis the commands per call from `INFO commandstats`
//! (EVALSHA round trips, and every command with those run inside the
//! scripts), counted in a pass of its own after the timed one.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::permission::Mode;
use toolhost::state::{AgentState, FileStore, MemoryStore, StateBounds, StateKey, StateStore};
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::redis::RedisServer;
use toolhost_e2e::{Scratch, env_number, percentile};
use toolhost_redis::RedisStore;

/// Calls of the task tools on one list before it is emptied again (outside
/// the timing), so each TaskCreate does the same work.
const LIST_LENGTH: usize = 10;

async fn call(host: &Toolhost, state: &Arc<AgentState>, tool: &str, input: &serde_json::Value) {
    let r = host
        .call(CallRequest::new(tool, input.to_string()).session(state.clone()).mode(Mode::Default))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response();
    assert_eq!(r.state, toolhost::response::ResultState::Success, "{tool}: {}", r.text());
}

/// The `INFO commandstats` calls of `server`: EVALSHA, and all commands.
fn command_counts(server: &RedisServer) -> (u64, u64) {
    let out = Command::new("redis-cli")
        .args(["-p", &server.port.to_string(), "--no-auth-warning", "-a", &server.password, "INFO", "commandstats"])
        .output()
        .expect("running redis-cli");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut evalsha = 0;
    let mut all = 0;
    for line in text.lines().filter(|l| l.starts_with("cmdstat_")) {
        let calls: u64 = line
            .split_once("calls=")
            .and_then(|(_, rest)| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        // redis-cli's own: its handshake and this very command.
        if ["info", "auth", "hello", "command", "client"].iter().any(|c| line.starts_with(&format!("cmdstat_{c}"))) {
            continue;
        }
        all += calls;
        if line.starts_with("cmdstat_evalsha:") {
            evalsha += calls;
        }
    }
    (evalsha, all)
}

struct Row {
    p50: Duration,
    p99: Duration,
    commands: Option<(f64, f64)>,
}

async fn measure(
    host: &Toolhost,
    state: &Arc<AgentState>,
    tool: &str,
    input: &serde_json::Value,
    calls: usize,
    redis: Option<&RedisServer>,
) -> Row {
    let reset = || async { state.set("tasks", json!([]), StateBounds::NONE).await.unwrap() };
    for _ in 0..50 {
        call(host, state, tool, input).await;
        reset().await;
    }
    let mut samples = Vec::with_capacity(calls);
    for i in 0..calls {
        if i % LIST_LENGTH == 0 && tool == "TaskCreate" {
            reset().await;
        }
        let started = Instant::now();
        call(host, state, tool, input).await;
        samples.push(started.elapsed());
    }
    // Counted apart from the timing (redis-cli is a process of its own):
    // batches of calls between two readings, the resets outside them.
    let commands = redis.map(|server| {
        let (mut evalsha, mut all, mut counted) = (0u64, 0u64, 0usize);
        for _ in 0..20 {
            futures_lite_block(reset());
            let before = command_counts(server);
            for _ in 0..LIST_LENGTH {
                futures_lite_block(call(host, state, tool, input));
            }
            let after = command_counts(server);
            evalsha += after.0 - before.0;
            all += after.1 - before.1;
            counted += LIST_LENGTH;
        }
        (evalsha as f64 / counted as f64, all as f64 / counted as f64)
    });
    Row { p50: percentile(&mut samples, 0.50), p99: percentile(&mut samples, 0.99), commands }
}

/// Runs `work` to its end from inside the runtime (the counting pass,
/// where blocking on redis-cli is wanted).
fn futures_lite_block<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(work))
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let calls = env_number("CALLS", 2000);
    let server = RedisServer::start().expect("redis-server (apt-get install redis-server)");
    let scratch = Scratch::new();
    let mut settings = scratch.settings();
    settings.permissions.allow = vec!["TaskCreate".into(), "TaskList".into(), "Read".into()];
    let host = scratch.host(settings).await;
    let file = scratch.work().join("small.txt");
    std::fs::write(&file, "one line\nand another\n").unwrap();

    let key = StateKey::named("bench").unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let stores: Vec<(&str, Arc<dyn StateStore>)> = vec![
        ("memory", Arc::new(MemoryStore::default())),
        ("file", Arc::new(FileStore::new(sessions.path()))),
        ("redis", Arc::new(RedisStore::connect(&server.options("bench")).await.unwrap())),
    ];
    let work: [(&str, serde_json::Value); 3] = [
        ("TaskCreate", json!({"subject": "a task", "description": "what to do"})),
        ("TaskList", json!({})),
        ("Read", json!({"file_path": file})),
    ];
    println!("{} calls per row, 1 in flight, {} cores", calls, std::thread::available_parallelism().unwrap());
    for (tool, input) in &work {
        let mut memory_p50 = None;
        for (name, store) in &stores {
            let state = Arc::new(AgentState::open(store.clone(), key.clone()).await.unwrap());
            state.set("tasks", json!([]), StateBounds::NONE).await.unwrap();
            let redis = (*name == "redis").then_some(&server);
            let row = measure(&host, &state, tool, input, calls, redis).await;
            if *tool == "Read" {
                let cached = state.snapshot().await.unwrap().read_cache;
                assert_eq!(cached.len(), 1, "{name}: Read recorded what it read: {cached:?}");
            }
            let base = *memory_p50.get_or_insert(row.p50);
            let over = row.p50.as_secs_f64() - base.as_secs_f64();
            let commands = row
                .commands
                .map(|(evalsha, all)| format!("   {evalsha:.1} EVALSHA, {all:.1} commands per call"))
                .unwrap_or_default();
            println!(
                "{tool:<10} {name:<6}  p50 {:>9}  p99 {:>9}  p50 over memory {:>+8.1} µs{commands}",
                us(row.p50),
                us(row.p99),
                over * 1e6
            );
        }
    }
}
