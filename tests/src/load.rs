//! The load generator: many calls in flight against the library or against
//! `toolhost serve` over HTTP, a mix of built-ins, a plugin, a tool behind
//! middleware, and allowed, denied and failing calls. Each call's outcome is
//! checked against what its kind must give, so a call that failed because of
//! load (an exhausted instance pool, a refused connection, a timeout) is
//! counted, never mistaken for one that failed as it should.
//!
//! Used by the `load` bench (`tests/benches/load.rs`, the full figures) and
//! the `load` test (`tests/tests/load.rs`, a short run in CI).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use toolhost::response::ResultState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};

use crate::{Scratch, guest};

/// The kinds of call in the mix, in the order they rotate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Read of a small file (built-in, allowed as read-only).
    Read,
    /// Glob through the `mw-pass` middleware (built-in, allowed).
    GlobThroughMiddleware,
    /// TaskList (built-in, agent state).
    TaskList,
    /// The `echo` plugin.
    Plugin,
    /// Bash, refused by a deny rule before anything runs.
    Denied,
    /// Read of a file that does not exist: the tool's own error.
    Failing,
}

/// Every kind, one call of each per turn of the mix.
pub const KINDS: [Kind; 6] =
    [Kind::Read, Kind::GlobThroughMiddleware, Kind::TaskList, Kind::Plugin, Kind::Denied, Kind::Failing];

/// The content of the file Read reads.
const CONTENT: &str = "line one\nline two\n";

/// The working directory and settings every target of a run shares.
pub struct Fixture {
    /// The scratch directory (its `work/` holds `toolhost.toml` and the files).
    pub scratch: Scratch,
    read_path: PathBuf,
    missing_path: PathBuf,
}

impl Fixture {
    /// Writes the files the mix reads and a `toolhost.toml` loading the
    /// `echo` plugin, `mw-pass` attached to Glob, and a deny rule on Bash.
    pub fn new() -> Self {
        let scratch = Scratch::new();
        let work = scratch.work();
        std::fs::write(work.join("small.txt"), CONTENT).expect("writing small.txt");
        for i in 0..5 {
            std::fs::write(work.join(format!("f{i}.rs")), "fn main() {}\n").expect("writing a .rs file");
        }
        let toml = format!(
            "plugins = [{echo:?}]\n\
             [permissions]\n\
             deny = [\"Bash\"]\n\
             [middleware]\n\
             files = [{mw:?}]\n\
             [middleware.attach]\n\
             Glob = [\"mw-pass\"]\n",
            echo = guest("echo").display().to_string(),
            mw = guest("mw-pass").display().to_string(),
        );
        std::fs::write(work.join("toolhost.toml"), toml).expect("writing toolhost.toml");
        Self { read_path: work.join("small.txt"), missing_path: work.join("missing.txt"), scratch }
    }

    /// A host over this fixture's `toolhost.toml`.
    pub async fn host(&self) -> Toolhost {
        let text = std::fs::read_to_string(self.scratch.work().join("toolhost.toml")).expect("toolhost.toml");
        let settings = self.scratch.settings_file(&text);
        self.scratch.host(settings).await
    }

    /// The tool and input of a call of `kind`.
    pub fn request(&self, kind: Kind) -> (&'static str, Value) {
        match kind {
            Kind::Read => ("Read", json!({"file_path": self.read_path})),
            Kind::GlobThroughMiddleware => ("Glob", json!({"pattern": "*.rs"})),
            Kind::TaskList => ("TaskList", json!({})),
            Kind::Plugin => ("Echo", json!({"text": "hello"})),
            Kind::Denied => ("Bash", json!({"command": "echo no"})),
            Kind::Failing => ("Read", json!({"file_path": self.missing_path})),
        }
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

/// What a call gave, whoever ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The response's state and text.
    Tool {
        /// `success`, `error`, `denied`, ...
        state: String,
        /// The text blocks.
        text: String,
    },
    /// The call did not reach a response (transport or protocol failure).
    Broken(String),
}

/// Whether `answer` is what a call of `kind` must give; the reason if not.
pub fn check(kind: Kind, answer: &Answer) -> Result<(), String> {
    let Answer::Tool { state, text } = answer else { return Err(format!("{answer:?}")) };
    let ok = match kind {
        Kind::Read => state == "success" && text.contains("line two"),
        Kind::GlobThroughMiddleware => state == "success" && (0..5).all(|i| text.contains(&format!("f{i}.rs"))),
        Kind::TaskList => state == "success",
        Kind::Plugin => state == "success" && text == "hello",
        // MCP carries only "error or not": over `serve` a denial is an
        // error whose text says so.
        Kind::Denied => state == "denied" || (state == "error" && text.to_lowercase().contains("denied")),
        Kind::Failing => state == "error" && text.contains("does not exist"),
    };
    if ok { Ok(()) } else { Err(format!("{kind:?} gave {state}: {}", text.chars().take(300).collect::<String>())) }
}

/// Something that runs calls.
pub trait Target: Send + Sync + 'static {
    /// Runs one call.
    fn call(&self, tool: &'static str, input: Value) -> impl std::future::Future<Output = Answer> + Send;
}

impl Target for Toolhost {
    async fn call(&self, tool: &'static str, input: Value) -> Answer {
        let response = Toolhost::call(self, CallRequest::new(tool, input.to_string()))
            .finish(PermissionAnswer::Deny)
            .await
            .into_response();
        Answer::Tool { state: state_name(response.state), text: response.text() }
    }
}

fn state_name(state: ResultState) -> String {
    serde_json::to_value(state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// A measured run.
pub struct Report {
    /// Calls made.
    pub calls: usize,
    /// Calls in flight.
    pub in_flight: usize,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// Every call's latency, sorted.
    pub latencies: Vec<Duration>,
    /// Calls whose outcome was not their kind's, with the first reasons.
    pub wrong: usize,
    /// Up to ten of the reasons.
    pub reasons: Vec<String>,
    /// Resident memory (KiB) and open descriptors of the measured process,
    /// sampled every `calls / 50` calls: `(calls done, rss, fds)`.
    pub samples: Vec<(usize, u64, usize)>,
    /// The measured process's peak resident memory (VmHWM), KiB.
    pub peak_rss_kib: u64,
}

impl Report {
    /// The latency at quantile `q` (0..=1).
    pub fn quantile(&self, q: f64) -> Duration {
        let i = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
        self.latencies[i]
    }

    /// The samples after warm-up (the first fifth of the run).
    pub fn steady(&self) -> &[(usize, u64, usize)] {
        let skip = self.samples.len() / 5;
        &self.samples[skip..]
    }

    /// Steady resident memory: (least, most), KiB.
    pub fn steady_rss(&self) -> (u64, u64) {
        let s = self.steady();
        (s.iter().map(|x| x.1).min().unwrap_or(0), s.iter().map(|x| x.1).max().unwrap_or(0))
    }

    /// Steady open descriptors: (least, most).
    pub fn steady_fds(&self) -> (usize, usize) {
        let s = self.steady();
        (s.iter().map(|x| x.2).min().unwrap_or(0), s.iter().map(|x| x.2).max().unwrap_or(0))
    }

    /// The figures as lines of text.
    pub fn summary(&self, label: &str) -> String {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let (rss_lo, rss_hi) = self.steady_rss();
        let (fd_lo, fd_hi) = self.steady_fds();
        format!(
            "{label}: {} calls, {} in flight, {:.1} s, {:.0} calls/s\n  \
             latency p50 {:.0} µs  p99 {:.0} µs  p999 {:.0} µs  max {:.0} µs\n  \
             resident memory: peak {:.1} MiB, steady {:.1}..{:.1} MiB (+{:.1} %)\n  \
             open descriptors: steady {fd_lo}..{fd_hi}\n  \
             wrong outcomes: {}{}",
            self.calls,
            self.in_flight,
            self.elapsed.as_secs_f64(),
            self.calls as f64 / self.elapsed.as_secs_f64(),
            us(self.quantile(0.5)),
            us(self.quantile(0.99)),
            us(self.quantile(0.999)),
            us(*self.latencies.last().unwrap_or(&Duration::ZERO)),
            self.peak_rss_kib as f64 / 1024.0,
            rss_lo as f64 / 1024.0,
            rss_hi as f64 / 1024.0,
            (rss_hi as f64 / rss_lo.max(1) as f64 - 1.0) * 100.0,
            self.wrong,
            if self.reasons.is_empty() { String::new() } else { format!(" (first: {})", self.reasons.join(" | ")) },
        )
    }
}

/// Resident memory (VmRSS) and peak (VmHWM) of process `pid`, KiB.
pub fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Open descriptors of process `pid`.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// Runs `calls` calls with `in_flight` of them in flight at all times,
/// rotating through [`KINDS`], measuring process `pid` (this one for the
/// library, the server for `serve`).
pub async fn drive<T: Target>(target: Arc<T>, fixture: &Fixture, calls: usize, in_flight: usize, pid: u32) -> Report {
    let requests: Arc<Vec<(Kind, &'static str, Value)>> = Arc::new(
        KINDS
            .iter()
            .map(|&k| {
                let (tool, input) = fixture.request(k);
                (k, tool, input)
            })
            .collect(),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let every = (calls / 50).max(1);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..in_flight {
        let (target, requests, next, done, samples) =
            (target.clone(), requests.clone(), next.clone(), done.clone(), samples.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut wrong = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= calls {
                    break;
                }
                let (kind, tool, input) = requests[n % requests.len()].clone();
                let start = Instant::now();
                let answer = target.call(tool, input).await;
                latencies.push(start.elapsed());
                if let Err(reason) = check(kind, &answer) {
                    wrong.push(reason);
                }
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                if finished % every == 0 {
                    let (rss, _) = memory_kib(pid);
                    samples.lock().await.push((finished, rss, open_fds(pid)));
                }
            }
            (latencies, wrong)
        }));
    }
    let mut latencies = Vec::with_capacity(calls);
    let mut reasons = Vec::new();
    let mut wrong = 0;
    for worker in workers {
        let (l, w) = worker.await.expect("a load worker panicked");
        latencies.extend(l);
        wrong += w.len();
        reasons.extend(w.into_iter().take(10usize.saturating_sub(reasons.len())));
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let mut samples = std::mem::take(&mut *samples.lock().await);
    samples.sort();
    Report { calls, in_flight, elapsed, latencies, wrong, reasons, samples, peak_rss_kib: memory_kib(pid).1 }
}

/// The most connections [`HttpTarget`] opens: below the 512 `toolhost
/// serve` serves at once (HTTP/1.1 carries one call at a time on a
/// connection, so calls past this wait for a connection in the client).
pub const HTTP_CONNECTIONS: usize = 500;

/// `toolhost serve --http` over a [`Fixture`]: a pool of at most
/// [`HTTP_CONNECTIONS`] keep-alive connections, each carrying one
/// 2025-11-25 `tools/call` at a time (a thin JSON-RPC client, so the client
/// is not what is measured).
pub struct HttpTarget {
    addr: String,
    path: String,
    session: Option<String>,
    idle: std::sync::Mutex<Vec<BufReader<TcpStream>>>,
    connections: Arc<tokio::sync::Semaphore>,
    id: AtomicUsize,
}

impl HttpTarget {
    /// Opens an MCP session at `url` (`http://HOST:PORT/PATH`).
    pub async fn connect(url: &str) -> Self {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (addr, path) = rest.split_once('/').map(|(a, p)| (a.to_string(), format!("/{p}"))).expect("a path");
        let connections = Arc::new(tokio::sync::Semaphore::new(HTTP_CONNECTIONS));
        let mut target =
            Self { addr, path, session: None, idle: Default::default(), connections, id: AtomicUsize::new(1) };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "load", "version": "0"}}});
        let (headers, _) = target.post(&init).await.expect("initialize");
        target.session = headers
            .lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")))
            .map(|(_, v)| v.trim().to_string());
        target.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.expect("initialized");
        target
    }

    async fn post(&self, body: &Value) -> Result<(String, String), String> {
        let _connection = self.connections.acquire().await.expect("never closed");
        let body = body.to_string();
        let session = self.session.as_ref().map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
        let request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
             {session}Content-Length: {}\r\n\r\n{body}",
            self.path,
            self.addr,
            body.len()
        );
        let pooled = self.idle.lock().expect("idle connections").pop();
        // A pooled connection the server closed meanwhile (idle past its
        // header timeout) fails before any reply: retried once on a new one,
        // as HTTP clients do.
        if let Some(mut conn) = pooled
            && let Ok(reply) = exchange(&mut conn, &request).await
        {
            self.idle.lock().expect("idle connections").push(conn);
            return Ok(reply);
        }
        let stream = TcpStream::connect(&self.addr).await.map_err(|e| format!("connect: {e}"))?;
        let mut conn = BufReader::new(stream);
        let reply = exchange(&mut conn, &request).await?;
        self.idle.lock().expect("idle connections").push(conn);
        Ok(reply)
    }
}

async fn exchange(conn: &mut BufReader<TcpStream>, request: &str) -> Result<(String, String), String> {
    conn.get_mut().write_all(request.as_bytes()).await.map_err(|e| format!("write: {e}"))?;
    read_response(conn).await
}

/// Reads one HTTP/1.1 response: its header block and its body (by
/// `Content-Length` or chunked).
async fn read_response(conn: &mut BufReader<TcpStream>) -> Result<(String, String), String> {
    let mut headers = String::new();
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line).await.map_err(|e| format!("read: {e}"))? == 0 {
            return Err("the server closed the connection".into());
        }
        if line == "\r\n" {
            break;
        }
        headers.push_str(&line);
    }
    if !headers.starts_with("HTTP/1.1 2") {
        return Err(format!("HTTP error: {}", headers.lines().next().unwrap_or_default()));
    }
    let header = |name: &str| {
        headers
            .lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
            .map(str::to_string)
    };
    let mut body = Vec::new();
    if let Some(len) = header("content-length") {
        let len: usize = len.parse().map_err(|_| "bad Content-Length")?;
        body.resize(len, 0);
        conn.read_exact(&mut body).await.map_err(|e| format!("read body: {e}"))?;
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            conn.read_line(&mut size).await.map_err(|e| format!("read chunk: {e}"))?;
            let size = usize::from_str_radix(size.trim(), 16).map_err(|_| format!("bad chunk size {size:?}"))?;
            let mut chunk = vec![0; size + 2];
            conn.read_exact(&mut chunk).await.map_err(|e| format!("read chunk: {e}"))?;
            chunk.truncate(size);
            body.extend(chunk);
            if size == 0 {
                break;
            }
        }
    }
    Ok((headers, String::from_utf8_lossy(&body).into_owned()))
}

impl Target for HttpTarget {
    async fn call(&self, tool: &'static str, input: Value) -> Answer {
        let id = self.id.fetch_add(1, Ordering::Relaxed);
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": input}});
        let text = match self.post(&body).await {
            Ok((_, text)) => text,
            Err(e) => return Answer::Broken(e),
        };
        let reply = if text.trim_start().starts_with('{') {
            serde_json::from_str::<Value>(&text).ok()
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m["id"] == json!(id))
        };
        let Some(reply) = reply else { return Answer::Broken(format!("no reply: {}", &text[..text.len().min(200)])) };
        if let Some(error) = reply.get("error") {
            return Answer::Broken(format!("JSON-RPC error: {error}"));
        }
        let result = &reply["result"];
        let text: String = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("");
        let state = if result["isError"] == json!(true) { "error" } else { "success" }.to_string();
        Answer::Tool { state, text }
    }
}
