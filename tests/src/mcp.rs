//! Helpers for the MCP tests: servers (`toolhost serve`, or the fixture
//! server `tests/src/bin/mcp_fixture.rs` that embeds `toolhost_mcp`), and
//! the real client, the Python SDK (`mcp` 2.3.0) through
//! `tests/mcp/client.py`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::{Scratch, root, toolhost_bin};

/// The two protocol generations the client speaks: `auto` negotiates
/// 2026-07-28, `legacy` 2025-11-25 through `initialize`.
pub const MODES: [&str; 2] = ["auto", "legacy"];

/// How the client reaches the server.
pub enum Transport {
    /// The client starts this command and speaks over its stdin/stdout.
    Stdio(Vec<String>),
    /// Streamable HTTP at `url`, with a bearer token or none.
    Http {
        /// `http://127.0.0.1:PORT/mcp`.
        url: String,
        /// Sent as `Authorization: Bearer T`.
        token: Option<String>,
    },
}

/// `toolhost serve` arguments (shared compile cache), `extra` after `serve`.
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

/// A Python MCP server over streamable HTTP (the upstream test server,
/// FastMCP), killed when dropped.
pub struct PythonHttpServer {
    /// The process.
    pub child: Child,
    /// Its `/mcp` URL.
    pub url: String,
}

impl PythonHttpServer {
    /// Runs `command` with a free loopback port as its last argument and
    /// waits (at most 30 s) until the port takes connections.
    pub fn start(mut command: Command, what: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = command
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what}: {e}"));
        let server = Self { child, url: format!("http://127.0.0.1:{port}/mcp") };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "{what} did not listen on {port} within 30 s");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        server
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for PythonHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP server process that printed `…listening on URL` on stderr,
/// killed when dropped.
pub struct HttpServer {
    /// The process.
    pub child: Child,
    /// Its `/mcp` URL.
    pub url: String,
    /// Every stderr line after the listening line, as it comes.
    pub stderr: std::sync::mpsc::Receiver<String>,
    /// The stderr lines before it (what `serve` said while starting).
    pub early: Vec<String>,
}

/// `GET path` on `addr` (with `token` as its bearer); the status and the
/// body.
pub fn http_get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

impl HttpServer {
    /// The `--metrics` address it printed before it listened.
    pub fn metrics_addr(&self) -> String {
        self.early
            .iter()
            .find_map(|l| l.split_once("metrics on http://")?.1.strip_suffix("/metrics").map(str::to_string))
            .unwrap_or_else(|| panic!("serve did not say where its metrics are: {:?}", self.early))
    }

    /// `toolhost serve --http 127.0.0.1:0 extra…` in `scratch`.
    pub fn start(scratch: &Scratch, extra: &[&str]) -> Self {
        Self::start_with(scratch, &[], extra)
    }

    /// `toolhost <global…> serve --http 127.0.0.1:0 <serve…>` in `scratch`.
    pub fn start_with(scratch: &Scratch, global: &[&str], serve: &[&str]) -> Self {
        let mut args = serve_args(&[]);
        args.pop(); // `serve`, which goes after the global flags
        args.extend(global.iter().map(|s| s.to_string()));
        args.extend(["serve", "--http", "127.0.0.1:0"].map(String::from));
        args.extend(serve.iter().map(|s| s.to_string()));
        Self::spawn(scratch, &args)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs `args` (program first) in `scratch` and waits for its URL.
    pub fn spawn(scratch: &Scratch, args: &[String]) -> Self {
        let mut child = Command::new(&args[0])
            .args(&args[1..])
            .current_dir(scratch.work())
            .env("HOME", scratch.dir.path())
            // State (sessions, the status of a watching serve) under HOME.
            .env_remove("XDG_STATE_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", args[0]));
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut early = Vec::new();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the server exited before listening; it said: {early:?}"))
                .expect("stderr line");
            if let Some((_, url)) = line.split_once(": listening on ") {
                break url.to_string();
            }
            early.push(line);
        };
        // Keep draining stderr so the server never blocks on it.
        let (tx, stderr) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        HttpServer { child, url, stderr, early }
    }

    /// The transport to this server.
    pub fn transport(&self, token: Option<&str>) -> Transport {
        Transport::Http { url: self.url.clone(), token: token.map(str::to_string) }
    }

    /// `host:port` of the server.
    pub fn addr(&self) -> String {
        self.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The command line of one client run: `tests/mcp/client.py` for
/// `scenario` with `params`.
pub fn client_command(
    python: &Path,
    scratch: &Scratch,
    transport: &Transport,
    mode: &str,
    scenario: &str,
    params: &Value,
) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(root().join("tests/mcp/client.py"));
    match transport {
        Transport::Stdio(args) => {
            cmd.arg("--stdio").args(args).arg("--");
        }
        Transport::Http { url, token } => {
            cmd.args(["--http", url]);
            if let Some(t) = token {
                cmd.args(["--token", t]);
            }
        }
    }
    cmd.args(["--mode", mode, scenario, &params.to_string()]);
    cmd.current_dir(scratch.work()).env("HOME", scratch.dir.path()).stdin(Stdio::null());
    cmd
}

/// Runs one scenario of `tests/mcp/client.py` and returns what it printed.
pub fn client(
    python: &Path,
    scratch: &Scratch,
    transport: &Transport,
    mode: &str,
    scenario: &str,
    params: Value,
) -> Value {
    let out = client_command(python, scratch, transport, mode, scenario, &params)
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

/// The tool named `name` in a `list` scenario's output.
pub fn listed<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

/// The pinned MCP conformance suite. 0.1.10 is the newest that runs on
/// Node 20 (0.1.16 needs `fs.globSync`).
pub const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.10";

/// The conformance suite's entry point (`dist/index.js`), installed with
/// npm into `target/mcp-conformance` the first time. `None` (the test
/// skips) when Node, npm or the npm registry is missing, except under
/// `CI=true`, where that fails the test.
pub fn conformance_suite() -> Option<&'static Path> {
    static SUITE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    SUITE
        .get_or_init(|| {
            let dir = root().join("target/mcp-conformance");
            let entry = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
            let ready = dir.join(".conformance-0.1.10");
            if ready.exists() && entry.exists() {
                return Some(entry);
            }
            let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
            let made = node
                && std::fs::create_dir_all(&dir).is_ok()
                && Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--save-exact", "--prefix"])
                    .arg(&dir)
                    .arg(CONFORMANCE)
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
                && entry.exists();
            if made {
                std::fs::write(&ready, "").expect("marking the conformance suite installed");
                return Some(entry);
            }
            assert!(
                std::env::var("CI").is_err(),
                "could not install {CONFORMANCE} into {} (node 20 and npm, and the npm registry, are needed; \
                 .ci/run installs them)",
                dir.display()
            );
            eprintln!("skipped: no node/npm to install {CONFORMANCE}");
            None
        })
        .as_deref()
}

/// Runs `check(transport, mode, label)` over stdio and HTTP, each in both
/// modes, against `toolhost serve` with `extra` arguments in `scratch`.
pub fn each_transport(scratch: &Scratch, extra: &[&str], mut check: impl FnMut(&Transport, &str, &str)) {
    let stdio = Transport::Stdio(serve_args(extra));
    for mode in MODES {
        check(&stdio, mode, "stdio");
    }
    let server = HttpServer::start(scratch, extra);
    let http = server.transport(None);
    for mode in MODES {
        check(&http, mode, "http");
    }
}

/// Raw HTTP/1.1 for the tests that misbehave on purpose (a client that
/// never reads, lies about a length, floods `initialize`): each exchange on
/// a connection of its own, over loopback.
pub mod raw {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    /// The protocol version of sessionless requests.
    pub const MODERN: &str = "2026-07-28";
    /// The protocol version of sessions.
    pub const LEGACY: &str = "2025-11-25";

    /// The head of a request to `/mcp` with `Connection: close` and `headers`.
    pub fn head(addr: &str, method: &str, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n"
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head.into_bytes()
    }

    /// A request with `body`, its `Content-Length` declared unless
    /// `headers` declares one.
    pub fn request(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
        let length = body.len().to_string();
        let mut all = headers.to_vec();
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-length")) {
            all.push(("Content-Length", &length));
        }
        let mut bytes = head(addr, method, &all);
        bytes.extend_from_slice(body.as_bytes());
        bytes
    }

    /// Writes `bytes`, then reads until the server answers and closes (at
    /// most 60 s); returns the answer and how long it took.
    pub fn exchange(addr: &str, bytes: &[u8]) -> (String, Duration) {
        let mut stream = TcpStream::connect(addr).expect("connecting");
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let started = Instant::now();
        stream.write_all(bytes).expect("writing");
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got);
        (String::from_utf8_lossy(&got).into_owned(), started.elapsed())
    }

    /// Reads from `stream` until `done` holds for what came so far (or the
    /// stream ends, or 60 s pass); returns what came.
    pub fn read_until(stream: &mut TcpStream, done: impl Fn(&str) -> bool) -> String {
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !done(&String::from_utf8_lossy(&got)) {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(&got).into_owned()
    }

    /// The status code of an answer.
    pub fn status(answer: &str) -> u16 {
        answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    /// A header of an answer's head (names compare without case).
    pub fn header(answer: &str, name: &str) -> Option<String> {
        let head = answer.split("\r\n\r\n").next()?;
        head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    /// The JSON-RPC reply (the message with an `id`) among a small
    /// answer's SSE events (each in one chunk) or JSON body.
    pub fn reply(answer: &str) -> Option<Value> {
        let body = answer.split_once("\r\n\r\n")?.1;
        body.lines()
            .map(|line| line.trim().strip_prefix("data:").unwrap_or(line).trim())
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|m| m.get("id").is_some())
    }

    /// A 2026-07-28 request body of `method` with `params` (its `_meta`
    /// added), and the headers it needs.
    pub fn modern(method: &str, mut params: Value) -> (String, Vec<(&'static str, String)>) {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let mut headers = vec![("MCP-Protocol-Version", MODERN.to_string()), ("Mcp-Method", method.to_string())];
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            headers.push(("Mcp-Name", name.to_string()));
        }
        (json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string(), headers)
    }

    /// A 2026-07-28 `subscriptions/listen` for tool-list changes.
    pub fn listen(addr: &str) -> Vec<u8> {
        let (body, headers) = modern("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        request(addr, "POST", &headers, &body)
    }

    /// A 2026-07-28 `tools/call`.
    pub fn modern_call(addr: &str, tool: &str, args: Value) -> Vec<u8> {
        let (body, headers) = modern("tools/call", json!({"name": tool, "arguments": args}));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        request(addr, "POST", &headers, &body)
    }

    /// A 2025-11-25 session, initialised; its `Mcp-Session-Id`.
    pub fn initialize(addr: &str) -> String {
        initialize_with(addr, json!({}))
    }

    /// A 2025-11-25 session of a client with `capabilities`, initialised;
    /// its `Mcp-Session-Id`.
    pub fn initialize_with(addr: &str, capabilities: Value) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string();
        let (answer, _) = exchange(addr, &request(addr, "POST", &[], &body));
        assert_eq!(status(&answer), 200, "initialize: {answer}");
        let session = header(&answer, "mcp-session-id").expect("a session id");
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let (answer, _) = exchange(addr, &in_session(addr, &session, "POST", &done));
        assert_eq!(status(&answer), 202, "notifications/initialized: {answer}");
        session
    }

    /// A request of session `session`.
    pub fn in_session(addr: &str, session: &str, method: &str, body: &str) -> Vec<u8> {
        request(addr, method, &[("Mcp-Session-Id", session), ("MCP-Protocol-Version", LEGACY)], body)
    }

    /// A `tools/call` in session `session`; the answer.
    pub fn legacy_call(addr: &str, session: &str, tool: &str, args: Value) -> String {
        let body =
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}})
                .to_string();
        exchange(addr, &in_session(addr, session, "POST", &body)).0
    }

    /// Whether session `session` is still live, asked without using it: a
    /// notification (cancelling a request that does not exist) is 202 in a
    /// live session, 404 in one that is gone, and is no request, so the
    /// session's clock runs on.
    pub fn session_is_live(addr: &str, session: &str) -> bool {
        let probe = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "probe"}});
        match status(&exchange(addr, &in_session(addr, session, "POST", &probe.to_string())).0) {
            404 => false,
            202 => true,
            other => panic!("probing session {session}: status {other}"),
        }
    }
}
