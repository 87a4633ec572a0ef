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
mod handler;
pub mod http;
pub mod session;
mod tools;

pub use handler::McpFront;
pub use http::{HttpOptions, serve_http};
pub use session::{MemorySessions, NamedSession, SessionStore};

use anyhow::{Context as _, Result};
use rmcp::ServiceExt as _;

/// Serves `front` on stdin/stdout until the client closes the stream or
/// `stop` resolves (SIGINT/SIGTERM in the CLI); running calls are cancelled
/// (their processes killed) when it returns.
pub async fn serve_stdio(front: McpFront, stop: impl std::future::Future<Output = ()>) -> Result<()> {
    let service = front.serve(rmcp::transport::stdio()).await.context("starting the MCP stdio transport")?;
    let cancel = service.cancellation_token();
    tokio::select! {
        r = service.waiting() => { r.context("the MCP stdio service failed")?; }
        () = stop => cancel.cancel(),
    }
    Ok(())
}
