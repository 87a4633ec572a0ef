//! `toolhost serve` against the Python SDK's FastMCP server
//! (`bench/mcp_fastmcp_server.py`, mcp 2.3.0), driven by the same Rust
//! client (rmcp, 2025-11-25) so that the client is never the bound: the
//! Python clients of `bench/mcp_serve_vs_fastmcp.py` take most of a core
//! per call and capped both servers at the calls/s they could send.
//!
//! The same trivial tool on both sides: `Greet` (the `greet` example
//! component, sandboxed, the permission engine deciding every call through
//! an allow rule; a Python function in FastMCP). For stdio and streamable
//! HTTP, at 1 and 32 calls in flight on one session: calls/s, p50/p99, the
//! server's CPU per call and its peak resident memory, and the ratio
//! toolhost/FastMCP of calls/s.
//!
//! Run: `cargo bench -p toolhost-e2e --bench serve` (`CALLS`, default 2 000
//! per row; the MCP venv `target/mcp-venv` is made on first use).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::json;
use toolhost_e2e::mcp::{HttpServer, PythonHttpServer};
use toolhost_e2e::{Scratch, env_number, example, mcp_python, percentile, root, toolhost_bin};

const WARMUP: usize = 200;

/// One row's figures.
struct Figures {
    calls_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    cpu_us_per_call: f64,
    peak_rss_mib: f64,
}

/// User + system CPU seconds of `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the server's /proc stat");
    let fields: Vec<&str> = stat.rsplit_once(')').expect("stat").1.split_whitespace().collect();
    // SAFETY: sysconf reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / ticks
}

fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn client_config() -> ClientConfig {
    ClientConfig::new(Default::default(), Implementation::new("serve-bench", "0"))
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

async fn greet(peer: &Peer<RoleClient>) {
    let arguments = json!({"name": "bench"}).as_object().cloned().unwrap();
    let result = peer
        .call_tool(CallToolRequestParams::new("Greet").with_arguments(arguments))
        .await
        .expect("a tools/call answered");
    let text = serde_json::to_string(&result.content).unwrap();
    assert!(text.contains("Hello, bench!") && result.is_error != Some(true), "{text}");
}

/// `calls` calls of Greet with `inflight` of them in flight at a time, on
/// the session of `service`, with the CPU of the server `pid` counted.
async fn measure(
    service: RunningService<RoleClient, ClientConfig>,
    pid: u32,
    calls: usize,
    inflight: usize,
) -> Figures {
    let peer = service.peer().clone();
    for _ in 0..WARMUP {
        greet(&peer).await;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let workers: Vec<_> = (0..inflight)
        .map(|_| {
            let (peer, next) = (peer.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let start = Instant::now();
                    greet(&peer).await;
                    latencies.push(start.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = Vec::with_capacity(calls);
    for worker in workers {
        latencies.extend(worker.await.expect("a client worker"));
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    let figures = Figures {
        calls_per_s: calls as f64 / wall,
        p50_ms: percentile(&mut latencies, 0.5).as_secs_f64() * 1e3,
        p99_ms: percentile(&mut latencies, 0.99).as_secs_f64() * 1e3,
        cpu_us_per_call: cpu / calls as f64 * 1e6,
        peak_rss_mib: peak_rss_mib(pid),
    };
    let _ = service.cancel().await;
    figures
}

/// What every row shares: the MCP venv's Python (FastMCP), the scratch
/// folder the servers run in, and the calls per row.
struct Bench<'a> {
    python: &'a Path,
    scratch: &'a Scratch,
    calls: usize,
}

impl Bench<'_> {
    /// One row: `server` (`toolhost` or `fastmcp`) over `transport`.
    async fn row(&self, server: &str, transport: &str, inflight: usize) -> Figures {
        match transport {
            "stdio" => self.stdio(server, inflight).await,
            _ => self.http(server, inflight).await,
        }
    }

    async fn stdio(&self, server: &str, inflight: usize) -> Figures {
        let mut cmd;
        if server == "toolhost" {
            cmd = tokio::process::Command::new(toolhost_bin());
            cmd.arg("--cache-dir").arg(root().join("target/test-cache"));
            cmd.args(["--no-builtins", "--plugin"]).arg(example("greet")).args(["--allow", "Greet", "serve"]);
        } else {
            cmd = tokio::process::Command::new(self.python);
            cmd.arg(root().join("bench/mcp_fastmcp_server.py")).arg("stdio");
        }
        cmd.current_dir(self.scratch.work()).env("HOME", self.scratch.dir.path()).env_remove("XDG_STATE_HOME");
        let (transport, _) =
            TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().expect("starting the server");
        let pid = transport.id().expect("the server's pid");
        let service = client_config().serve(transport).await.expect("the MCP handshake");
        measure(service, pid, self.calls, inflight).await
    }

    async fn http(&self, server: &str, inflight: usize) -> Figures {
        // Either server is killed when its guard drops.
        let (pid, url, _toolhost, _fastmcp) = if server == "toolhost" {
            let greet = example("greet").display().to_string();
            let global = ["--no-builtins", "--plugin", greet.as_str(), "--allow", "Greet"];
            let server = HttpServer::start_with(self.scratch, &global, &[]);
            (server.pid(), server.url.clone(), Some(server), None)
        } else {
            let mut command = Command::new(self.python);
            command.arg(root().join("bench/mcp_fastmcp_server.py")).arg("http");
            let server = PythonHttpServer::start(command, "FastMCP");
            (server.pid(), server.url.clone(), None, Some(server))
        };
        let transport = StreamableHttpClientTransport::from_uri(url.as_str());
        let service = client_config().serve(transport).await.expect("the MCP handshake");
        measure(service, pid, self.calls, inflight).await
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let python = mcp_python().expect("the MCP venv (target/mcp-venv, mcp 2.3.0) is needed for the FastMCP peer");
    let scratch = Scratch::new();
    let bench = Bench { python, scratch: &scratch, calls: env_number("CALLS", 2_000) };
    println!(
        "{:<9} {:>9} {:<9} {:>9} {:>8} {:>8} {:>12} {:>9}",
        "transport", "in flight", "server", "calls/s", "p50 ms", "p99 ms", "CPU µs/call", "RSS MiB"
    );
    for transport in ["stdio", "http"] {
        for inflight in [1, 32] {
            let mut rates = Vec::new();
            for server in ["fastmcp", "toolhost"] {
                let f = bench.row(server, transport, inflight).await;
                println!(
                    "{transport:<9} {inflight:>9} {server:<9} {:>9.0} {:>8.2} {:>8.2} {:>12.0} {:>9.1}",
                    f.calls_per_s, f.p50_ms, f.p99_ms, f.cpu_us_per_call, f.peak_rss_mib
                );
                rates.push(f.calls_per_s);
            }
            println!("{transport:<9} {inflight:>9} toolhost / FastMCP calls/s: {:.2}x", rates[1] / rates[0]);
        }
    }
}
