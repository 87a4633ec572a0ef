//! toolhost over the Model Context Protocol: serves a [`toolhost::Toolhost`]
//! to MCP clients over stdio or streamable HTTP, built on `rmcp`.
//!
//! Every registered tool is an MCP tool; a call goes through the library's
//! own pipeline ([`toolhost::Toolhost::call`]: schema, permission engine,
//! middleware, a fresh sandboxed instance, limits). The engine's asks
//! become MCP elicitations: `elicitation/create` for clients that
//! negotiated 2025-11-25 or earlier, a multi-round-trip `InputRequired`
//! result with sealed, single-use request state for 2026-07-28. A client
//! that cannot elicit gets a tool error naming the rule that would allow
//! the call.

#![warn(missing_docs)]

mod asks;
mod call;
mod changes;
mod fanout;
mod handler;
pub mod http;
mod keyring;
mod logs;
mod metrics;
mod session;
mod shared_sessions;
mod tools;
mod trace_context;

pub use handler::McpFront;
pub use http::{HttpOptions, serve_http};
pub use keyring::Keyring;
pub use metrics::serve_metrics;

use anyhow::{Context as _, Result};
use rmcp::ServiceExt as _;

/// After a graceful stop's calls are done, how long their answers may take
/// to reach the clients before the remaining streams are closed.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Serves `front` on stdin/stdout until the client closes the stream or
/// `stop` resolves (SIGINT/SIGTERM in the CLI). After `stop`, new calls are
/// refused and running ones get `grace` to finish; then the rest are
/// cancelled (their processes killed).
pub async fn serve_stdio(
    front: McpFront,
    grace: std::time::Duration,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    // Over pipes (as MCP clients start servers) reads and writes go through
    // the IO reactor on descriptors of their own; tokio's stdin and stdout
    // hand every read and write to a blocking thread, a context switch each
    // (a quarter of the server's CPU at 32 calls in flight).
    let transport = rmcp::transport::stdio_pipes();
    let service = front.clone().serve(transport).await.context("starting the MCP stdio transport")?;
    let cancel = service.cancellation_token();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        r = &mut waiting => {
            r.context("the MCP stdio service failed")?;
            return Ok(());
        }
        () = stop => {}
    }
    front.stop_new_work();
    tokio::select! {
        r = &mut waiting => {
            r.context("the MCP stdio service failed")?;
            return Ok(());
        }
        finished = front.drain(grace) => {
            if !finished {
                tracing::warn!("calls still running after the grace period are cancelled");
            }
        }
    }
    // The answers of calls that just finished reach the client first.
    let _ = tokio::time::timeout(SETTLE, &mut waiting).await;
    cancel.cancel();
    let _ = waiting.await;
    Ok(())
}
