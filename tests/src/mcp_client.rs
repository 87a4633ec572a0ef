//! Driving `toolhost serve` with the real Python MCP client
//! (`tests/mcp/client.py`, `mcp` 2.3.0) over stdio and streamable HTTP, in
//! both protocol generations, for the tests of features that reach MCP
//! clients (tool groups, skills, upstream servers).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::{Scratch, root, toolhost_bin};

/// The client's modes: `auto` negotiates 2026-07-28, `legacy` 2025-11-25.
pub const MODES: [&str; 2] = ["auto", "legacy"];

/// How the client reaches the server.
pub enum Transport {
    /// The client starts `toolhost serve` with these arguments.
    Stdio(Vec<String>),
    /// A running `toolhost serve --http`.
    Http(String),
}

/// `toolhost serve` and its arguments (the shared compile cache).
pub fn serve_args(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        toolhost_bin().display().to_string(),
        "--cache-dir".to_string(),
        root().join("target/test-cache").display().to_string(),
        "serve".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// A `toolhost serve --http 127.0.0.1:0` in the scratch working directory,
/// killed when dropped.
pub struct HttpServe {
    child: Child,
    /// Its MCP endpoint.
    pub url: String,
}

impl HttpServe {
    /// Starts it and waits until it listens.
    pub fn start(scratch: &Scratch, extra: &[&str]) -> Self {
        let args = serve_args(&[&["--http", "127.0.0.1:0"], extra].concat());
        let mut child = Command::new(&args[0])
            .args(&args[1..])
            .current_dir(scratch.work())
            .env("HOME", scratch.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting toolhost serve --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines.next().expect("toolhost serve exited before listening").expect("stderr line");
            if let Some(url) = line.strip_prefix("toolhost serve: listening on ") {
                break url.to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        HttpServe { child, url }
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs one scenario of `tests/mcp/client.py` in the scratch working
/// directory and returns the JSON it printed.
pub fn run_client(
    python: &Path,
    scratch: &Scratch,
    transport: &Transport,
    mode: &str,
    scenario: &str,
    params: Value,
) -> Value {
    let mut cmd = Command::new(python);
    cmd.arg(root().join("tests/mcp/client.py"));
    match transport {
        Transport::Stdio(args) => {
            cmd.arg("--stdio").args(args).arg("--");
        }
        Transport::Http(url) => {
            cmd.args(["--http", url]);
        }
    }
    cmd.args(["--mode", mode, scenario, &params.to_string()]);
    let out = cmd
        .current_dir(scratch.work())
        .env("HOME", scratch.dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("running the Python MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client {scenario} ({mode}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("client printed no JSON ({e}): {stdout}"))
}

/// Runs `check(transport, mode, label)` over stdio and HTTP, each in both
/// modes, against `toolhost serve` with `extra` arguments.
pub fn each_transport(scratch: &Scratch, extra: &[&str], mut check: impl FnMut(&Transport, &str, &str)) {
    let stdio = Transport::Stdio(serve_args(extra));
    for mode in MODES {
        check(&stdio, mode, "stdio");
    }
    let server = HttpServe::start(scratch, extra);
    let http = Transport::Http(server.url.clone());
    for mode in MODES {
        check(&http, mode, "http");
    }
}
