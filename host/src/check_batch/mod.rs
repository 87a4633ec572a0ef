//! Check batches: many permission decisions without execution, answered in
//! parallel and in order. This is the engine of `toolhost check --batch`,
//! in the library so that any front end (the CLI, an MCP server) drives the
//! same work queue over the same wire format.
//!
//! - the wire format (in `toolhost-core`): JSON lines, one request per
//!   line in, one answer per line out ([`CheckRequest`], [`decision_json`],
//!   [`error_json`]). Pure: no I/O, no threads.
//! - `engine.rs`: the work queue ([`BatchChecker`]): worker threads each
//!   keeping one decision instance per tool, answers written in input
//!   order as soon as they are ready.
//!
//! ```no_run
//! # async fn f(host: toolhost::Toolhost) -> anyhow::Result<()> {
//! use toolhost::check_batch::BatchChecker;
//! let checker = BatchChecker::new(&host);
//! // A stream: stdin to stdout, as `toolhost check --batch` does.
//! checker.run(std::io::stdin(), std::io::stdout()).await?;
//! // Or requests in memory, answers back in order.
//! let answers = checker.answer_lines([r#"{"id":1,"tool":"Bash","input":{"command":"ls"}}"#]).await?;
//! # Ok(()) }
//! ```
//!
//! The permission engine itself ([`crate::permission`]) stays pure: this
//! module is where its decisions meet threads and streams.

mod engine;
use toolhost_core::check_batch as wire;

pub use engine::{BatchChecker, BatchError};
pub use wire::{CheckRequest, CheckRequestError, RulesJson, decision_json, error_json};
