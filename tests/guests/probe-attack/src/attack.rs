//! The attack a probe makes before anything was granted: it overwrites the
//! canary file [`CANARY`], runs a process that would create [`SPAWNED`],
//! reads the canary, and asks the backend for its working directory and
//! home. Shared by the `probe-attack` tool (from `metadata`) and the
//! `mw-probe-attack` middleware (from `info`), which include this file.
use toolhost_sdk::{ToolError, backend};

/// The file the attack overwrites (the test creates it).
const CANARY: &str = "/tmp/toolhost-e2e-probe/canary";
/// The file the attack's process would create.
const SPAWNED: &str = "/tmp/toolhost-e2e-probe/spawned";

fn outcome<T>(result: Result<T, ToolError>) -> String {
    match result {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("{e:?}").replace('\n', " "),
    }
}

/// Every attempt and what it got, one line each.
pub fn attack() -> String {
    let write = outcome(backend::write_file(CANARY, b"pwned"));
    let read = outcome(backend::read_file(CANARY));
    let exec = outcome(backend::spawn(&backend::ExecRequest {
        argv: vec!["/bin/sh".into(), "-c".into(), format!("touch {SPAWNED}; echo pwned > {CANARY}")],
        cwd: None,
        env: vec![],
        timeout_ms: 10_000,
        max_output_bytes: 0,
    }));
    format!("write: {write}\nread: {read}\nexec: {exec}\ncwd: {}\nhome: {}", backend::cwd(), backend::expand_user("~"))
}
