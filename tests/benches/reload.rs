//! Issue-15 figures (hot reload), each beside its peer in the same run:
//!
//! - the time from a plugin file's last write (a rename into the watched
//!   folder) to the new version serving, on a compile-cache hit and on a
//!   miss (the bytes made new by a custom section), with the default
//!   debounce;
//! - calls per second from two tasks while the file is replaced every
//!   100 ms, against the same load with no reloads (and the failed calls);
//! - the resident memory after 10, 100 and 1,000 reloads, and the cost of
//!   the first reloads against the last.
//!
//! Run: `cargo bench --workspace --bench reload` (release), or
//! `cargo test --workspace --bench reload` for debug figures (label them).
//! `RELOADS=N` changes the 1,000.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use toolhost::capability::Policy;
use toolhost::lockfile::sha256_hex;
use toolhost::reload::{WatchOptions, Watcher};
use toolhost::response::ResultState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, env_number, guest};

/// `bytes` with a custom section named `toolhost-bench` holding `tag`
/// appended: the same component, other bytes (a new hash, a cache miss).
fn tagged(bytes: &[u8], tag: u64) -> Vec<u8> {
    let name = b"toolhost-bench";
    let payload = tag.to_le_bytes();
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name);
    section.extend_from_slice(&payload);
    let mut out = bytes.to_vec();
    out.push(0); // custom section id
    out.push(section.len() as u8); // LEB128, < 128
    out.extend_from_slice(&section);
    out
}

struct Bench {
    _scratch: Scratch,
    dir: PathBuf,
    host: Toolhost,
    watcher: Watcher,
}

impl Bench {
    async fn new() -> Self {
        let scratch = Scratch::new();
        let dir = scratch.dir.path().join("plugins");
        std::fs::create_dir(&dir).unwrap();
        std::fs::copy(guest("swap-v1"), dir.join("swap.wasm")).unwrap();
        let mut s = scratch.settings();
        s.builtins = false;
        s.plugin_dirs.push(dir.clone());
        s.lock_file = Some(scratch.dir.path().join("toolhost.lock"));
        s.grants.insert("Swap".into(), Policy::default());
        let host = scratch.host(s).await;
        let watcher = host.watch(WatchOptions::default()).await.unwrap();
        Bench { _scratch: scratch, dir, host, watcher }
    }

    /// Renames `bytes` in as `swap.wasm` and waits until that version is
    /// what the file serves; the time from the rename.
    async fn reload(&self, bytes: &[u8]) -> Duration {
        let sha = sha256_hex(bytes);
        let tmp = self.dir.parent().unwrap().join("swap.part");
        std::fs::write(&tmp, bytes).unwrap();
        let mut passes = self.watcher.passes();
        passes.borrow_and_update();
        let start = Instant::now();
        std::fs::rename(&tmp, self.dir.join("swap.wasm")).unwrap();
        loop {
            let status = self.watcher.status();
            let file = status.iter().find(|s| s.file.ends_with("swap.wasm")).expect("watched");
            if file.sha256 == sha {
                return start.elapsed();
            }
            assert!(file.last_error.is_none(), "a reload failed: {:?}", file.last_error);
            tokio::time::timeout(Duration::from_secs(120), passes.changed()).await.expect("a pass").unwrap();
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bench = Bench::new().await;
    let v1 = std::fs::read(guest("swap-v1")).unwrap();
    let v1b = tagged(&v1, 0);

    // 1. Last write to serving, cache hit (both byte sets compiled once
    // first) and cache miss (new bytes every time).
    bench.reload(&v1b).await;
    bench.reload(&v1).await;
    let mut hits = Vec::new();
    for i in 0..20 {
        hits.push(bench.reload(if i % 2 == 0 { &v1b } else { &v1 }).await);
    }
    let mut misses = Vec::new();
    // A tag no earlier run used: the compile cache is shared between runs.
    let epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    for i in 0..5 {
        misses.push(bench.reload(&tagged(&v1, epoch + i)).await);
    }
    println!(
        "last write → serving, cache hit    median {:>7.1} ms  max {:>7.1} ms  (n={}, debounce {} ms)",
        ms(median(hits.clone())),
        ms(*hits.iter().max().unwrap()),
        hits.len(),
        WatchOptions::default().debounce.as_millis()
    );
    println!(
        "last write → serving, cache miss   median {:>7.1} ms  max {:>7.1} ms  (n={})",
        ms(median(misses.clone())),
        ms(*misses.iter().max().unwrap()),
        misses.len()
    );

    // 2. Calls per second with and without a reload every 100 ms.
    let quiet = calls_per_second(&bench, None).await;
    let reloading = calls_per_second(&bench, Some([v1.clone(), v1b.clone()])).await;
    println!(
        "calls/s, no reloads {:>8.0}   reloading every 100 ms {:>8.0}  ({:+.1} %, {} reloads, failed calls: {} and {})",
        quiet.0,
        reloading.0,
        (reloading.0 / quiet.0 - 1.0) * 100.0,
        reloading.2,
        quiet.1,
        reloading.1
    );

    // 3. Memory and cost over many reloads (cache hits).
    let total: usize = env_number("RELOADS", 1_000);
    let mut costs = Vec::with_capacity(total);
    let mut marks = Vec::new();
    for i in 1..=total {
        costs.push(bench.reload(if i % 2 == 0 { &v1 } else { &v1b }).await);
        if [10, 100, 1_000, total].contains(&i) && marks.last().is_none_or(|(n, _)| *n != i) {
            marks.push((i, rss_kib()));
        }
    }
    for (n, kib) in &marks {
        println!("resident memory after {n:>5} reloads  {:>8.1} MiB", *kib as f64 / 1024.0);
    }
    let first = median(costs[..10].to_vec());
    let last = median(costs[total - 10..].to_vec());
    println!("reload cost, reloads 1-10 median {:>6.1} ms   last 10 median {:>6.1} ms", ms(first), ms(last));
    let served = bench.host.call(CallRequest::new("Swap", "{}")).finish(PermissionAnswer::Deny).await;
    assert_eq!(served.into_response().text(), "v1 v1 v1 ", "the last version serves");
}

/// Calls `Swap` from two tasks for 5 s; with `reload`, the file alternates
/// between the two byte sets every 100 ms meanwhile. Returns calls per
/// second, failed calls, reloads done.
async fn calls_per_second(bench: &Bench, reload: Option<[Vec<u8>; 2]>) -> (f64, u64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let (done, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let (host, stop, done, failed) = (bench.host.clone(), stop.clone(), done.clone(), failed.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let r = host.call(CallRequest::new("Swap", "{}")).finish(PermissionAnswer::Deny).await;
                    let r = r.into_response();
                    if r.state == ResultState::Success && r.text() == "v1 v1 v1 " {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let start = Instant::now();
    let mut reloads = 0u64;
    while start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Some(bytes) = &reload {
            let file: &Path = &bench.dir.join("swap.wasm");
            let tmp = bench.dir.parent().unwrap().join("swap.part");
            std::fs::write(&tmp, &bytes[reloads as usize % 2]).unwrap();
            std::fs::rename(&tmp, file).unwrap();
            reloads += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    (done.load(Ordering::Relaxed) as f64 / elapsed, failed.load(Ordering::Relaxed), reloads)
}
