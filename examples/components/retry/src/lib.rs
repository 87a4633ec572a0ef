//! `retry`: runs the inner layers again when a call fails, up to
//! `max_attempts` attempts in all (its settings, `[middleware.retry]` in
//! `toolhost.toml`; 3 when not set). A call fails when the inner outcome is an error or a chunk has
//! state `error`. Each attempt's output is held back until it is known to
//! be the one returned, so a failed attempt never reaches the caller; the
//! response metadata says how many attempts were made (`retry.attempts`).
//!
//! A middleware's settings reach it as JSON in the environment variable
//! `TOOLHOST_TOOL_CONFIG`, as a tool's `[tools.NAME]` do. A `max_attempts`
//! that is missing or not a positive integer counts as
//! [`DEFAULT_ATTEMPTS`]. Invalid input (refused by `next.run`) is not
//! retried.

use serde_json::json;
use toolhost_sdk::middleware::{Middleware, Next, is_error, metadata_chunk};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware, log};

/// Attempts in all, the first included, when the settings say nothing.
pub const DEFAULT_ATTEMPTS: u32 = 3;

/// `max_attempts` from the settings, or [`DEFAULT_ATTEMPTS`].
fn max_attempts() -> u32 {
    std::env::var("TOOLHOST_TOOL_CONFIG")
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|config| config.get("max_attempts")?.as_u64())
        .filter(|n| *n >= 1)
        .map_or(DEFAULT_ATTEMPTS, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

struct Retry;

impl Middleware for Retry {
    const NAME: &'static str = "retry";
    const DESCRIPTION: &'static str =
        "Retries a failed call (error outcome or error chunk), up to max_attempts attempts in all (default 3).";

    fn on_tool_call(tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let attempts = max_attempts();
        let mut attempt = 1;
        loop {
            let (chunks, outcome) = next.run(&input)?.collect_all();
            let failed = outcome.is_err() || chunks.iter().any(is_error);
            if !failed || attempt >= attempts {
                for chunk in chunks {
                    out.emit(chunk);
                }
                out.emit(metadata_chunk(&json!({"retry": {"attempts": attempt}})));
                return outcome;
            }
            log::warn(&format!("{}: attempt {attempt} of {attempts} failed; retrying", tool.name));
            attempt += 1;
        }
    }
}

export_middleware!(Retry);
