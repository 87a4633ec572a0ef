//! One contract for every agent-state store — `MemoryStore`, `FileStore`
//! and `RedisStore` against a real `redis-server` — and for every nonce
//! store (`MemoryNonces`, `RedisStore`), and what only a shared store
//! promises: compare-and-set atomic across processes, a nonce consumed by
//! exactly one of several processes, group changes seen by another
//! process, idle states dropped, an outage reported as the typed error
//! within the timeout and survived without a restart.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::coordination::{
    EventLog, MemoryEventLog, MemoryNonces, MemoryRecords, MemoryReplicas, NonceStore, RecordStore, RememberedRule,
    ReplicaRecord, ReplicaRegistry, RuleStore, START,
};
use toolhost::state::{
    AgentState, CachedFile, FileStore, MAX_CACHE_BYTES, MAX_CACHE_FILES, MemoryStore, ReadForm, StateBounds,
    StateError, StateKey, StateStore,
};
use toolhost_e2e::redis::RedisServer;
use toolhost_redis::RedisStore;

/// A fresh named key of its own.
fn fresh(label: &str) -> StateKey {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    StateKey::named(&format!("{label}-{}-{n}", std::process::id())).unwrap()
}

fn record(path: &str, size: u64) -> CachedFile {
    CachedFile { path: path.into(), mtime_ns: 7, size, sha256: "ab".repeat(32), form: ReadForm::Text }
}

/// What every store does the same.
async fn contract(store: Arc<dyn StateStore>) {
    values_and_compare_and_set(&store).await;
    bounds_hold_under_concurrency(&store).await;
    read_cache_is_bounded_and_least_recently_used_first(&store).await;
    group_changes_are_signalled_for_a_changed_set_only(&store).await;
}

async fn values_and_compare_and_set(store: &Arc<dyn StateStore>) {
    let s = AgentState::open(store.clone(), fresh("values")).await.unwrap();
    let any = StateBounds::NONE;
    assert_eq!(s.get("k").await.unwrap(), None);
    assert!(s.compare_and_set("k", None, json!(1), any).await.unwrap());
    assert!(!s.compare_and_set("k", None, json!(2), any).await.unwrap(), "someone wrote first");
    assert!(!s.compare_and_set("k", Some(json!(5)), json!(2), any).await.unwrap());
    assert!(s.compare_and_set("k", Some(json!(1)), json!(2), any).await.unwrap());
    assert_eq!(s.get("k").await.unwrap(), Some(json!(2)));
    s.set("k", json!({"nested": [1, "two", null]}), any).await.unwrap();
    assert_eq!(s.get("k").await.unwrap(), Some(json!({"nested": [1, "two", null]})));

    // Equal JSON is equal whatever the order of object keys.
    let ordered: Value = serde_json::from_str(r#"{"a": 1, "b": {"x": true, "y": [{"p": 1, "q": 2}]}}"#).unwrap();
    let reordered: Value = serde_json::from_str(r#"{"b": {"y": [{"q": 2, "p": 1}], "x": true}, "a": 1}"#).unwrap();
    s.set("tasks", ordered, any).await.unwrap();
    assert!(s.compare_and_set("tasks", Some(reordered), json!([]), any).await.unwrap(), "reordered keys match");
    assert_eq!(s.get("tasks").await.unwrap(), Some(json!([])));
    let data = s.snapshot().await.unwrap();
    assert_eq!(data.values.keys().collect::<Vec<_>>(), ["k", "tasks"]);
}

async fn bounds_hold_under_concurrency(store: &Arc<dyn StateStore>) {
    // 16 writers race for 5 keys: exactly 5 are stored, the rest refused.
    let s = AgentState::open(store.clone(), fresh("keys")).await.unwrap();
    let bounds = StateBounds { max_bytes: u64::MAX, max_keys: 5 };
    let writers: Vec<_> = (0..16)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move { s.set(&format!("k{i}"), json!(i), bounds).await })
        })
        .collect();
    let mut stored = 0;
    for w in writers {
        match w.await.unwrap() {
            Ok(()) => stored += 1,
            Err(StateError::Full(full)) => assert!(full.to_string().contains("max_state_keys"), "{full}"),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((stored, s.snapshot().await.unwrap().values.len()), (5, 5));

    // 16 writers of 30 bytes each race for 100 bytes: never more stored.
    let s = AgentState::open(store.clone(), fresh("bytes")).await.unwrap();
    let bounds = StateBounds { max_bytes: 100, max_keys: u64::MAX };
    let writers: Vec<_> = (0..16)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move { s.set(&format!("k{i:02}"), json!("x".repeat(25)), bounds).await })
        })
        .collect();
    let results: Vec<_> = futures_join(writers).await;
    let stored = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(stored, 3, "3 × (3 + 27) bytes fit in 100: {results:?}");
    let err = results.iter().find_map(|r| r.as_ref().err()).unwrap().to_string();
    assert!(err.contains("limits.max_state_bytes"), "{err}");
    // Replacing a value with a smaller one is always taken.
    let first = s.snapshot().await.unwrap().values.keys().next().unwrap().clone();
    s.set(&first, json!(1), bounds).await.unwrap();
    s.set("zz", json!(2), bounds).await.unwrap();
}

async fn futures_join<T: Send + 'static>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

async fn read_cache_is_bounded_and_least_recently_used_first(store: &Arc<dyn StateStore>) {
    let s = AgentState::open(store.clone(), fresh("cache")).await.unwrap();
    for i in 0..(MAX_CACHE_FILES + 5) {
        s.cache_file(record(&format!("/f{i}"), 10)).await.unwrap();
        if i == MAX_CACHE_FILES - 1 {
            // /f0 used again as the cache fills: /f1 is now the least
            // recently used.
            assert_eq!(s.cached_file("/f0").await.unwrap(), Some(record("/f0", 10)));
        }
    }
    let data = s.snapshot().await.unwrap();
    assert_eq!(data.read_cache.len(), MAX_CACHE_FILES);
    assert_eq!(s.cached_file("/f1").await.unwrap(), None, "the least recently used went first");
    assert!(s.cached_file("/f0").await.unwrap().is_some(), "a recently used one stayed");
    s.forget_file("/f0").await.unwrap();
    assert_eq!(s.cached_file("/f0").await.unwrap(), None);

    // The bytes bound, by the files' sizes; a file larger than it is not kept.
    let s = AgentState::open(store.clone(), fresh("cache-bytes")).await.unwrap();
    s.cache_file(record("/a", MAX_CACHE_BYTES / 2)).await.unwrap();
    s.cache_file(record("/b", MAX_CACHE_BYTES / 2)).await.unwrap();
    s.cache_file(record("/c", 1)).await.unwrap();
    assert_eq!(s.cached_file("/a").await.unwrap(), None, "evicted for room");
    assert!(s.cached_file("/b").await.unwrap().is_some() && s.cached_file("/c").await.unwrap().is_some());
    s.cache_file(record("/huge", MAX_CACHE_BYTES + 1)).await.unwrap();
    assert_eq!(s.cached_file("/huge").await.unwrap(), None);
    // Re-recording a path replaces it.
    s.cache_file(record("/c", 2)).await.unwrap();
    assert_eq!(s.cached_file("/c").await.unwrap().unwrap().size, 2);
    let paths: Vec<String> = s.snapshot().await.unwrap().read_cache.into_iter().map(|e| e.path).collect();
    assert_eq!(paths, ["/b", "/c"], "least recently used first");
}

async fn group_changes_are_signalled_for_a_changed_set_only(store: &Arc<dyn StateStore>) {
    let s = AgentState::open(store.clone(), fresh("groups")).await.unwrap();
    let mut changes = s.group_changes();
    assert!(s.set_active_groups(vec!["a".into(), "b".into()]).await.unwrap());
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();
    assert!(!s.set_active_groups(vec!["b".into(), "a".into()]).await.unwrap(), "the same set in another order");
    assert!(!changes.has_changed().unwrap());
    assert_eq!(s.active_groups().await.unwrap(), ["b", "a"]);
    assert!(s.set_active_groups(Vec::new()).await.unwrap());
    assert!(changes.has_changed().unwrap());
    assert_eq!(s.active_groups().await.unwrap(), Vec::<String>::new());
}

/// What every nonce store does the same: a nonce is consumed once, by one
/// of racing callers, and never after its lifetime.
async fn nonce_contract(nonces: Arc<dyn NonceStore>) {
    let tag = std::process::id();
    nonces.issue(&format!("n1-{tag}"), Duration::from_secs(60)).await.unwrap();
    assert!(nonces.consume(&format!("n1-{tag}")).await.unwrap());
    assert!(!nonces.consume(&format!("n1-{tag}")).await.unwrap(), "consumed once");
    assert!(!nonces.consume(&format!("never-{tag}")).await.unwrap());
    nonces.issue(&format!("short-{tag}"), Duration::from_millis(200)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!nonces.consume(&format!("short-{tag}")).await.unwrap(), "expired");
    for round in 0..20 {
        let nonce = format!("race-{tag}-{round}");
        nonces.issue(&nonce, Duration::from_secs(60)).await.unwrap();
        let racers: Vec<_> = (0..8)
            .map(|_| {
                let (nonces, nonce) = (nonces.clone(), nonce.clone());
                tokio::spawn(async move { nonces.consume(&nonce).await.unwrap() })
            })
            .collect();
        let winners = futures_join(racers).await.into_iter().filter(|won| *won).count();
        assert_eq!(winners, 1, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_nonces_keep_the_contract_and_their_bound() {
    nonce_contract(Arc::new(MemoryNonces::default())).await;
    let nonces = MemoryNonces::with_capacity(2);
    nonces.issue("a", Duration::from_secs(60)).await.unwrap();
    nonces.issue("b", Duration::from_secs(60)).await.unwrap();
    let full = nonces.issue("c", Duration::from_secs(60)).await.unwrap_err().to_string();
    assert!(full.contains("too many questions"), "{full}");
    assert!(nonces.consume("a").await.unwrap());
    nonces.issue("c", Duration::from_secs(60)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_nonces_keep_the_contract_across_processes_and_bound_the_deployment() {
    let Some(server) = RedisServer::start() else { return };
    let store = Arc::new(RedisStore::connect(&server.options("contract")).await.unwrap());
    nonce_contract(store.clone()).await;

    // 8 processes race for one nonce: exactly one gets it.
    let nonce = format!("across-{}", std::process::id());
    store.issue(&nonce, Duration::from_secs(60)).await.unwrap();
    let job = json!({"kind": "consume", "url": server.url(), "password": server.password, "nonce": nonce,
        "key": "unused"});
    let racers: Vec<_> = (0..8).map(|_| worker(job.clone())).collect();
    let won: Vec<String> = racers.into_iter().map(worker_output).collect();
    assert_eq!(won.iter().filter(|w| *w == "won true").count(), 1, "{won:?}");

    // The bound holds for the deployment, not per process.
    let mut options = server.options("bounded");
    options.max_pending_questions = 2;
    let (one, two) = (RedisStore::connect(&options).await.unwrap(), RedisStore::connect(&options).await.unwrap());
    one.issue("a", Duration::from_secs(60)).await.unwrap();
    two.issue("b", Duration::from_secs(60)).await.unwrap();
    let full = one.issue("c", Duration::from_secs(60)).await.unwrap_err().to_string();
    assert!(full.contains("too many questions"), "{full}");
    assert!(two.consume("a").await.unwrap(), "consumed through the other process");
    one.issue("c", Duration::from_secs(60)).await.unwrap();
}

/// The remembered rules of a deployment: every change moves the version,
/// a rule is kept once whoever remembers it again, and a second process
/// reads what the first wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_keeps_the_remembered_rules_of_the_deployment_with_a_version() {
    let Some(server) = RedisServer::start() else { return };
    let (one, two) = (
        RedisStore::connect(&server.options("rules")).await.unwrap(),
        RedisStore::connect(&server.options("rules")).await.unwrap(),
    );
    assert_eq!(one.remembered_rules().await.unwrap(), (0, Vec::new()));
    let record = |rule: &str, by: &str| RememberedRule {
        rule: rule.into(),
        behavior: toolhost::permission::Behavior::Allow,
        by: by.into(),
        at: "2026-12-07T03:00:00.000Z".into(),
    };
    one.remember_rule(record("Bash(git status:*)", "a")).await.unwrap();
    let v1 = two.rules_version().await.unwrap();
    two.remember_rule(record("Bash(git status:*)", "b")).await.unwrap();
    two.remember_rule(record("Read(/work/**)", "b")).await.unwrap();
    let (v3, mut rules) = one.remembered_rules().await.unwrap();
    assert!(v1 >= 1 && v3 > v1, "every change moves the version: {v1} {v3}");
    rules.sort_by(|a, b| a.rule.cmp(&b.rule));
    assert_eq!(rules, [record("Bash(git status:*)", "b"), record("Read(/work/**)", "b")]);
    assert!(one.forget_rule("Read(/work/**)").await.unwrap());
    assert!(!one.forget_rule("Read(/work/**)").await.unwrap(), "forgotten already");
    let (v4, rules) = two.remembered_rules().await.unwrap();
    assert_eq!((v4 > v3, rules.len()), (true, 1));
    // Another deployment's prefix sees none of them.
    let other = RedisStore::connect(&server.options("other")).await.unwrap();
    assert_eq!(other.remembered_rules().await.unwrap(), (0, Vec::new()));
}

/// What every replica registry does the same: a heartbeat keeps a record
/// alive for its lifetime; a second instance under one id is told of the
/// first while the first is alive, not after; only the holder's leave
/// removes the record.
async fn replica_contract(registry: Arc<dyn ReplicaRegistry>) {
    let record = |id: &str, instance: &str| ReplicaRecord {
        id: id.into(),
        instance: instance.into(),
        host: "h".into(),
        pid: 1,
        version: "0".into(),
        tools: "t".into(),
        policy: [("grants".to_string(), "g".to_string())].into(),
        reload_errors: Vec::new(),
        clash: None,
        started: "s".into(),
        heartbeat: "b".into(),
    };
    let ttl = Duration::from_secs(60);
    assert_eq!(registry.heartbeat(&record("r1", "i1"), ttl).await.unwrap(), None);
    assert_eq!(registry.heartbeat(&record("r1", "i1"), ttl).await.unwrap(), None, "its own record is no clash");
    assert_eq!(registry.heartbeat(&record("r2", "i2"), Duration::from_millis(300)).await.unwrap(), None);
    let ids = |list: Vec<ReplicaRecord>| list.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(registry.replicas().await.unwrap()), ["r1", "r2"]);
    let other = registry.heartbeat(&record("r1", "i3"), ttl).await.unwrap();
    assert_eq!(other.map(|r| r.instance).as_deref(), Some("i1"), "a live instance under the id is told");
    registry.leave("r1", "i1").await.unwrap();
    assert_eq!(ids(registry.replicas().await.unwrap()), ["r1", "r2"], "i1 no longer holds r1: it stays");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(ids(registry.replicas().await.unwrap()), ["r1"], "r2's time is up");
    assert_eq!(registry.heartbeat(&record("r2", "i4"), ttl).await.unwrap(), None, "an expired holder is no clash");
    registry.leave("r1", "i3").await.unwrap();
    assert_eq!(ids(registry.replicas().await.unwrap()), ["r2"]);
}

/// What every record store and event log does the same: a record lives
/// for its lifetime, renewed when read, and is dropped once; an event log
/// gives the entries after one, in order, only of its own stream, and is
/// gone after its lifetime.
async fn records_and_events_contract(records: Arc<dyn RecordStore>, events: Arc<dyn EventLog>) {
    let short = Duration::from_millis(300);
    records.put_record("r", "one", short).await.unwrap();
    assert_eq!(records.record("r", Duration::from_secs(60)).await.unwrap().as_deref(), Some("one"));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(records.record("r", short).await.unwrap().as_deref(), Some("one"), "renewed when read");
    assert!(records.drop_record("r").await.unwrap());
    assert!(!records.drop_record("r").await.unwrap(), "dropped once");
    records.put_record("gone", "x", Duration::from_millis(100)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(records.record("gone", short).await.unwrap(), None);

    let first = events.append("s1", b"\x00binary one", Duration::from_secs(60)).await.unwrap();
    let second = events.append("s1", b"two", Duration::from_secs(60)).await.unwrap();
    events.append("s2", b"other", Duration::from_secs(60)).await.unwrap();
    let after_first = events.read_after("s1", &first, 10).await.unwrap();
    assert_eq!(after_first.iter().map(|e| e.data.as_slice()).collect::<Vec<_>>(), [b"two".as_slice()]);
    assert_eq!(after_first[0].id, second);
    assert!(events.read_after("s1", &second, 10).await.unwrap().is_empty());
    let from_start = events.read_after("s1", START, 10).await.unwrap();
    assert_eq!(from_start.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), [first.as_str(), second.as_str()]);
    assert!(events.read_after("not-yet", START, 10).await.unwrap().is_empty(), "a log with no entry yet");
    events.append("brief", b"x", Duration::from_millis(100)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(events.read_after("brief", "0", 10).await.unwrap().is_empty(), "gone after its lifetime");
}

#[tokio::test]
async fn memory_records_and_events_keep_the_contract() {
    records_and_events_contract(Arc::new(MemoryRecords::default()), Arc::new(MemoryEventLog::default())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_records_and_events_keep_the_contract() {
    let Some(server) = RedisServer::start() else { return };
    let store = Arc::new(RedisStore::connect(&server.options("records")).await.unwrap());
    records_and_events_contract(store.clone(), store).await;
}

#[tokio::test]
async fn memory_replicas_keep_the_contract() {
    replica_contract(Arc::new(MemoryReplicas::default())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_replicas_keep_the_contract_for_the_deployment() {
    let Some(server) = RedisServer::start() else { return };
    replica_contract(Arc::new(RedisStore::connect(&server.options("replicas")).await.unwrap())).await;
    let other = RedisStore::connect(&server.options("other-replicas")).await.unwrap();
    assert!(ReplicaRegistry::replicas(&other).await.unwrap().is_empty(), "another prefix sees none");
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract_and_drops_ended_states() {
    let store = Arc::new(MemoryStore::default());
    contract(store.clone()).await;
    let key = fresh("ends");
    store.set(&key, "k", json!(1), StateBounds::NONE).await.unwrap();
    store.end(&key).await.unwrap();
    assert_eq!(store.get(&key, "k").await.unwrap(), None);
}

#[tokio::test]
async fn the_file_store_keeps_the_contract_and_its_sessions_outlive_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::new(dir.path()));
    contract(store.clone()).await;
    let key = fresh("kept");
    store.set(&key, "k", json!(1), StateBounds::NONE).await.unwrap();
    store.end(&key).await.unwrap();
    drop(store);
    let again = FileStore::new(dir.path());
    assert_eq!(again.get(&key, "k").await.unwrap(), Some(json!(1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_store_keeps_the_contract() {
    let Some(server) = RedisServer::start() else { return };
    let store = Arc::new(RedisStore::connect(&server.options("contract")).await.unwrap());
    contract(store.clone()).await;
    let key = fresh("ends");
    store.set(&key, "k", json!(1), StateBounds::NONE).await.unwrap();
    store.end(&key).await.unwrap();
    assert_eq!(store.get(&key, "k").await.unwrap(), None);

    // Two deployments on one server see nothing of each other.
    let other = RedisStore::connect(&server.options("other-team")).await.unwrap();
    store.set(&key, "k", json!("mine"), StateBounds::NONE).await.unwrap();
    assert_eq!(other.get(&key, "k").await.unwrap(), None);
    // A wrong password is refused, never an empty state.
    let mut wrong = server.options("contract");
    wrong.password = Some("not-it".into());
    let err = RedisStore::connect(&wrong).await.unwrap_err();
    assert!(matches!(&err, StateError::Unavailable(m) if !m.contains("not-it")), "{err}");
}

// ---- across processes -----------------------------------------------------

/// Runs this test binary as a worker process doing `job` (see
/// [`zz_worker_process_entry`]); its stdout.
fn worker(job: Value) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["zz_worker_process_entry", "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env("TOOLHOST_STATE_WORKER", job.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap()
}

fn worker_output(child: std::process::Child) -> String {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "worker failed: {text}");
    text.lines().filter_map(|l| l.strip_prefix("worker: ")).collect::<Vec<_>>().join("\n")
}

/// Not a test of its own: the body of the worker processes the tests above
/// start (this binary with `TOOLHOST_STATE_WORKER` set to the job).
#[tokio::test]
async fn zz_worker_process_entry() {
    let Ok(job) = std::env::var("TOOLHOST_STATE_WORKER") else { return };
    let job: Value = serde_json::from_str(&job).unwrap();
    let key = StateKey::named(job["key"].as_str().unwrap()).unwrap();
    let redis = || {
        let mut options = toolhost_redis::RedisOptions::new(job["url"].as_str().unwrap(), "contract");
        options.password = job["password"].as_str().map(String::from);
        options
    };
    match job["kind"].as_str().unwrap() {
        "increment" => {
            let store = RedisStore::connect(&redis()).await.unwrap();
            let mut conflicts = 0;
            for _ in 0..job["times"].as_u64().unwrap() {
                loop {
                    let now = store.get(&key, "counter").await.unwrap();
                    let next = json!(now.as_ref().and_then(Value::as_u64).unwrap_or(0) + 1);
                    if store.compare_and_set(&key, "counter", now, next, StateBounds::NONE).await.unwrap() {
                        break;
                    }
                    conflicts += 1;
                }
            }
            println!("worker: conflicts {conflicts}");
        }
        "groups" => {
            let store = RedisStore::connect(&redis()).await.unwrap();
            let groups: Vec<String> = serde_json::from_value(job["groups"].clone()).unwrap();
            println!("worker: changed {}", store.set_active_groups(&key, groups).await.unwrap());
        }
        "consume" => {
            let store = RedisStore::connect(&redis()).await.unwrap();
            println!("worker: won {}", store.consume(job["nonce"].as_str().unwrap()).await.unwrap());
        }
        "open-file" => {
            let store = Arc::new(FileStore::new(job["dir"].as_str().unwrap()));
            match AgentState::open(store, key).await {
                Ok(_) => println!("worker: opened"),
                Err(e) => println!("worker: refused: {e}"),
            }
        }
        other => panic!("unknown job {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_is_atomic_across_eight_processes() {
    let Some(server) = RedisServer::start() else { return };
    let key = fresh("counter");
    let job = json!({"kind": "increment", "url": server.url(), "password": server.password, "key": key
        .session_name(), "times": 50});
    let workers: Vec<_> = (0..8).map(|_| worker(job.clone())).collect();
    let conflicts: u64 = workers
        .into_iter()
        .map(|w| worker_output(w).trim().strip_prefix("conflicts ").unwrap().parse::<u64>().unwrap())
        .sum();
    let store = RedisStore::connect(&server.options("contract")).await.unwrap();
    assert_eq!(store.get(&key, "counter").await.unwrap(), Some(json!(400)), "8 × 50 increments, none lost");
    eprintln!("{conflicts} compare-and-set conflicts over 400 increments");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_change_in_one_process_reaches_the_listeners_of_another() {
    let Some(server) = RedisServer::start() else { return };
    let key = fresh("groups");
    let store = RedisStore::connect(&server.options("contract")).await.unwrap();
    let mut changes = store.group_changes(&key);
    let job = json!({"kind": "groups", "url": server.url(), "password": server.password,
        "key": key.session_name(), "groups": ["web"]});
    assert_eq!(worker_output(worker(job)), "changed true");
    tokio::time::timeout(Duration::from_secs(5), changes.changed()).await.expect("told within 5 s").unwrap();
    assert_eq!(store.active_groups(&key).await.unwrap(), ["web"]);
    // Another state's change is not this state's.
    let untouched = store.group_changes(&key);
    let other = fresh("groups");
    let job = json!({"kind": "groups", "url": server.url(), "password": server.password,
        "key": other.session_name(), "groups": ["db"]});
    assert_eq!(worker_output(worker(job)), "changed true");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!untouched.has_changed().unwrap());
}

#[tokio::test]
async fn the_file_store_refuses_a_second_process() {
    let dir = tempfile::tempdir().unwrap();
    let key = fresh("held");
    let _held = AgentState::open(Arc::new(FileStore::new(dir.path())), key.clone()).await.unwrap();
    let job = json!({"kind": "open-file", "dir": dir.path(), "key": key.session_name()});
    let said = worker_output(worker(job));
    let holder = format!("in use by toolhost pid {}", std::process::id());
    assert!(said.starts_with("refused:") && said.contains(&holder), "{said}");
}

// ---- lifetimes and outages ----------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_state_is_dropped_and_a_named_one_kept() {
    let Some(server) = RedisServer::start() else { return };
    let mut options = server.options("contract");
    options.idle = Duration::from_millis(300);
    let store = RedisStore::connect(&options).await.unwrap();
    let (session, named) = (StateKey::of_session("some-mcp-session-id"), fresh("named"));
    for key in [&session, &named] {
        store.set(key, "k", json!(1), StateBounds::NONE).await.unwrap();
        store.cache_file(key, record("/a", 1)).await.unwrap();
        store.set_active_groups(key, vec!["web".into()]).await.unwrap();
    }
    // Used again within the lifetime: kept.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(store.get(&session, "k").await.unwrap(), Some(json!(1)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(store.active_groups(&session).await.unwrap(), ["web"], "each use renews the lifetime");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let gone = store.snapshot(&session).await.unwrap();
    assert!(gone.values.is_empty() && gone.read_cache.is_empty() && gone.active_groups.is_empty(), "{gone:?}");
    let kept = store.snapshot(&named).await.unwrap();
    assert_eq!((kept.values.len(), kept.read_cache.len(), kept.active_groups.len()), (1, 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_the_typed_error_within_the_timeout_and_survived_without_a_restart() {
    let Some(mut server) = RedisServer::start() else { return };
    let mut options = server.options("contract");
    options.command_timeout = Duration::from_millis(500);
    let store = RedisStore::connect(&options).await.unwrap();
    let key = fresh("outage");
    store.set(&key, "k", json!(1), StateBounds::NONE).await.unwrap();
    let mut changes = store.group_changes(&key);

    server.stop();
    for attempt in 0..3 {
        let started = Instant::now();
        let err = store.set(&key, "k", json!(2), StateBounds::NONE).await.unwrap_err();
        assert!(matches!(err, StateError::Unavailable(_)), "{err}");
        assert!(err.to_string().contains("nothing was changed") && err.to_string().contains(&server.url()), "{err}");
        assert!(!err.to_string().contains(&server.password), "{err}");
        assert!(started.elapsed() < Duration::from_millis(1500), "attempt {attempt} took {:?}", started.elapsed());
        let err = store.get(&key, "k").await.unwrap_err();
        assert!(matches!(err, StateError::Unavailable(_)), "never a silent empty state: {err}");
    }

    // Back (without persistence: empty), the same store carries on, and
    // every listener hears of a change it may have missed.
    server.restart();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match store.set(&key, "k", json!(3), StateBounds::NONE).await {
            Ok(()) => break,
            Err(e) => assert!(Instant::now() < deadline, "no recovery: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(store.get(&key, "k").await.unwrap(), Some(json!(3)));
    tokio::time::timeout(Duration::from_secs(15), changes.changed())
        .await
        .expect("listeners are told after the subscription is back")
        .unwrap();
}
