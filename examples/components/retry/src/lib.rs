//! `retry`: runs the inner layers again when a call fails, up to 3 attempts
//! in all. A call fails when the inner outcome is an error or a chunk has
//! state `error`. Each attempt's output is held back until it is known to
//! be the one returned, so a failed attempt never reaches the caller; the
//! response metadata says how many attempts were made (`retry.attempts`).
//!
//! Middleware cannot take configuration yet, so the number of attempts is
//! the constant [`ATTEMPTS`]. Invalid input (refused by `next.run`) is not
//! retried.

use serde_json::json;
use toolhost_sdk::middleware::{Middleware, Next, is_error, metadata_chunk};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware, log};

/// Attempts in all, the first included.
pub const ATTEMPTS: u32 = 3;

struct Retry;

impl Middleware for Retry {
    const NAME: &'static str = "retry";
    const DESCRIPTION: &'static str = "Retries a failed call (error outcome or error chunk), up to 3 attempts in all.";

    fn on_tool_call(tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let mut attempt = 1;
        loop {
            let (chunks, outcome) = next.run(&input)?.collect_all();
            let failed = outcome.is_err() || chunks.iter().any(is_error);
            if !failed || attempt == ATTEMPTS {
                for chunk in chunks {
                    out.emit(chunk);
                }
                out.emit(metadata_chunk(&json!({"retry": {"attempts": attempt}})));
                return outcome;
            }
            log::warn(&format!("{}: attempt {attempt} of {ATTEMPTS} failed; retrying", tool.name));
            attempt += 1;
        }
    }
}

export_middleware!(Retry);
