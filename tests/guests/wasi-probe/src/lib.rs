//! `WasiProbe`: reports, as JSON, what a tool sees of WASI through Rust's
//! standard library: its environment, its arguments, whether it can open
//! files or directories (`/`, `.`, the path given), connect a TCP socket to
//! the address given or resolve a name, and whether the clocks and random
//! numbers work. It also writes a marker to stdout and stderr.
use std::io::{Read as _, Write as _};

use serde_json::json;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Probe;

fn outcome<T>(result: std::io::Result<T>) -> serde_json::Value {
    match result {
        Ok(_) => json!("ok"),
        Err(e) => json!(format!("error: {e}")),
    }
}

impl Tool for Probe {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("WasiProbe", "Reports what a guest sees of WASI.").read_only(true)
    }
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let path = input["path"].as_str().unwrap_or("/etc/hostname");
        let addr = input["connect"].as_str().unwrap_or("127.0.0.1:9");
        let _ = std::io::stdout().write_all(b"PROBE-STDOUT-MARKER\n");
        let _ = std::io::stderr().write_all(b"PROBE-STDERR-MARKER\n");
        let mut stdin = String::new();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let started = std::time::Instant::now();
        let mut random = [0u8; 16];
        let report = json!({
            "env": std::env::vars().collect::<Vec<_>>(),
            "args": std::env::args().collect::<Vec<_>>(),
            "read_root": outcome(std::fs::read_dir("/")),
            "read_cwd": outcome(std::fs::read_dir(".")),
            "read_path": outcome(std::fs::read_to_string(path)),
            "write_path": outcome(std::fs::write("probe.txt", b"x")),
            "stdin": outcome(std::io::stdin().read_to_string(&mut stdin)).to_string() + &format!(" ({} bytes)", stdin.len()),
            "tcp_connect": outcome(std::net::TcpStream::connect(addr)),
            "tcp_bind": outcome(std::net::TcpListener::bind("127.0.0.1:0")),
            "udp_bind": outcome(std::net::UdpSocket::bind("127.0.0.1:0")),
            "resolve": outcome(std::net::ToSocketAddrs::to_socket_addrs(&("localhost", 80))),
            "wall_clock_secs": now,
            "monotonic_works": started.elapsed().as_nanos() < u128::MAX,
            "random": outcome(getrandom_bytes(&mut random)),
            "random_nonzero": random.iter().any(|b| *b != 0),
        });
        out.text(&report.to_string());
        Ok(())
    }
}

/// Fills `buf` with hashes keyed by std's `RandomState`, whose keys come
/// from WASI's random source (std exposes no direct way to read it).
fn getrandom_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    use std::hash::{BuildHasher, Hasher};
    for chunk in buf.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(0);
        let v = h.finish().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    Ok(())
}
export_tool!(Probe);
