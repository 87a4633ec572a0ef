//! `redact`: replaces secrets in the text the tool returns, before anyone
//! sees it: AWS access key ids (`AKIA` followed by 16 of `0-9A-Z`) become
//! `[REDACTED]`, and the value of `password=`, `passwd=`, `secret=`,
//! `token=` and `api_key=` (any letter case) up to the next whitespace,
//! `&`, `;`, `,` or quote becomes `[REDACTED]`. A value already masked is
//! not masked or counted again, so a second redactor in a chain (or this
//! one attached twice) counts nothing new.
//!
//! Chunks are redacted one at a time: a secret split across two chunks is
//! not recognised. The response metadata counts the redactions
//! (`redact.count`).

use serde_json::json;
use toolhost_redaction::redact;
use toolhost_sdk::middleware::{Middleware, Next, map_text, metadata_chunk, text_of};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Redact;

impl Middleware for Redact {
    const NAME: &'static str = "redact";
    const DESCRIPTION: &'static str =
        "Redacts AWS access key ids and password=/secret=/token= values from text output.";

    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let inner = next.run(&input)?;
        let mut total = 0;
        for chunk in &inner {
            total += redact(&text_of(&chunk)).1;
            out.emit(map_text(chunk, |t| redact(t).0));
        }
        out.emit(metadata_chunk(&json!({"redact": {"count": total}})));
        inner.outcome()
    }
}

export_middleware!(Redact);
