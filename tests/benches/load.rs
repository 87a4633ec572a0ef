//! The load generator's full run (issue 17): `CALLS` calls (default
//! 100 000) with `IN_FLIGHT` of them (default 1 000) in flight at all
//! times, through the library and through `toolhost serve --http`, mixing
//! Read, Glob behind the `mw-pass` middleware, TaskList, the `echo` plugin,
//! a Bash call refused by a deny rule and a Read that fails
//! (`toolhost_e2e::load`). Prints calls per second, p50 / p99 / p999,
//! peak and steady resident memory, open descriptors, and every call whose
//! outcome was not its kind's.
//!
//! Run: `cargo bench --workspace --bench load` (`TARGETS=library` or
//! `TARGETS=serve` for one of them).

use std::sync::Arc;

use toolhost_e2e::env_number;
use toolhost_e2e::load::{Fixture, HttpTarget, drive};
use toolhost_e2e::mcp::HttpServer;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let calls = env_number("CALLS", 100_000);
    let in_flight = env_number("IN_FLIGHT", 1_000);
    let targets = std::env::var("TARGETS").unwrap_or_else(|_| "library,serve".into());
    let mut failed = false;
    if targets.contains("library") {
        let fixture = Fixture::new();
        let host = Arc::new(fixture.host().await);
        println!("pooling allocator: {}", host.runtime().pooling());
        let report = drive(host, &fixture, calls, in_flight, std::process::id()).await;
        println!("{}", report.summary("library"));
        failed |= report.wrong > 0;
    }
    if targets.contains("serve") {
        let fixture = Fixture::new();
        let server = HttpServer::start(&fixture.scratch, &[]);
        let target = Arc::new(HttpTarget::connect(&server.url).await);
        let report = drive(target, &fixture, calls, in_flight, server.pid()).await;
        println!("{}", report.summary("toolhost serve --http"));
        failed |= report.wrong > 0;
    }
    assert!(!failed, "some calls did not give their kind's outcome (above)");
}
