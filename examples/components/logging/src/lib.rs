//! `logging`: logs the start and end of every call it wraps, with the
//! duration, to the host log (`toolhost -v`, or `RUST_LOG=toolhost=info`),
//! and records the duration in the response metadata under `logging`
//! (`{"elapsed_ms": 1.2, "chunks": 3}`). The chunks pass through unchanged.

use std::time::Instant;

use serde_json::json;
use toolhost_sdk::middleware::{Middleware, Next, is_error, metadata_chunk};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware, log};

struct Logging;

impl Middleware for Logging {
    const NAME: &'static str = "logging";
    const DESCRIPTION: &'static str = "Logs each call's start and end with its duration; records the duration in the response metadata (`logging.elapsed_ms`).";

    fn on_tool_call(tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let start = Instant::now();
        log::info(&format!("{}: call started ({} bytes of input)", tool.name, input.len()));
        let inner = next.run(&input)?;
        let mut chunks = 0u32;
        let mut failed = false;
        for chunk in &inner {
            chunks += 1;
            failed |= is_error(&chunk);
            out.emit(chunk);
        }
        let outcome = inner.outcome();
        let elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;
        let how = if failed || outcome.is_err() { "failed" } else { "finished" };
        log::info(&format!("{}: call {how} after {elapsed_ms:.1} ms ({chunks} chunks)", tool.name));
        out.emit(metadata_chunk(&json!({"logging": {"elapsed_ms": elapsed_ms, "chunks": chunks}})));
        outcome
    }
}

export_middleware!(Logging);
