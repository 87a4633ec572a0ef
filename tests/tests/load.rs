//! The load generator's short run (`toolhost_e2e::load`; the full figures
//! come from `cargo bench --workspace --bench load`): a thousand calls in
//! flight through the library and through `toolhost serve --http`, mixing
//! built-ins, a plugin, middleware, allowed, denied and failing calls.
//! No call may fail because of load (each gives its kind's outcome), and
//! descriptors and resident memory may not grow past a bound once warm.

use std::sync::Arc;

use toolhost_e2e::load::{Fixture, HttpTarget, Report, drive};
use toolhost_e2e::mcp::HttpServer;

const CALLS: usize = 6_000;
const IN_FLIGHT: usize = 1_000;

/// One test at a time: the library test counts this process's descriptors,
/// and the serve test's thousand client connections are this process's too.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn assert_bounded(report: &Report, label: &str) {
    println!("{}", report.summary(label));
    assert_eq!(report.wrong, 0, "{label}: calls failed under load: {:?}", report.reasons);
    let (fd_lo, fd_hi) = report.steady_fds();
    assert!(fd_hi <= fd_lo + 64, "{label}: open descriptors grew from {fd_lo} to {fd_hi} once warm");
    let (rss_lo, rss_hi) = report.steady_rss();
    // Debug builds and a short run: a loose bound, which a batch held in
    // memory (the growth this guards against) exceeds many times over.
    assert!(rss_hi <= rss_lo + rss_lo / 2, "{label}: resident memory grew from {rss_lo} KiB to {rss_hi} KiB once warm");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_library_calls_in_flight_all_give_their_outcome() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let fixture = Fixture::new();
    let host = Arc::new(fixture.host().await);
    let report = drive(host, &fixture, CALLS, IN_FLIGHT, std::process::id()).await;
    assert_bounded(&report, "library");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_serve_calls_in_flight_all_give_their_outcome() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture.scratch, &[]);
    let target = Arc::new(HttpTarget::connect(&server.url).await);
    let report = drive(target, &fixture, CALLS, IN_FLIGHT, server.pid()).await;
    assert_bounded(&report, "toolhost serve --http");
}
