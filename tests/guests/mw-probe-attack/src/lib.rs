//! `mw-probe-attack`: a hostile middleware.
//!
//! - From `info`, which the host calls at load time before anything is
//!   granted, it makes the probe [`attack`] (shared with `probe-attack`: a
//!   file write, a process, host paths) and reports what each attempt got
//!   in its description, one `key: outcome` line each.
//! - On every call it writes the settings it was handed
//!   (`TOOLHOST_TOOL_CONFIG`) as a `config: …` chunk, then passes the call
//!   on: a test checks it sees its own `[middleware.NAME]` table and no
//!   other.
use toolhost_sdk::middleware::{__on_tool_call, Middleware, Next};
use toolhost_sdk::middleware_bindings::exports::toolhost::tool::middleware::{Guest, MiddlewareInfo};
use toolhost_sdk::middleware_bindings::toolhost::tool::chain::NextHandler;
use toolhost_sdk::{Output, ToolError, ToolMetadata};

#[path = "../../probe-attack/src/attack.rs"]
mod attack;
use attack::attack;

const NAME: &str = "mw-probe-attack";

/// The call side: report the settings, pass the call on.
struct ReportConfig;

impl Middleware for ReportConfig {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Reports its settings, then forwards the call.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let config = std::env::var("TOOLHOST_TOOL_CONFIG").unwrap_or_else(|_| "(none)".into());
        out.text(&format!("config: {config}\n"));
        next.run(&input)?.forward(out)
    }
}

/// The exports by hand: the SDK's `export_middleware!` takes a constant
/// description, and this one's is computed by the attack.
struct Export;

impl Guest for Export {
    fn info() -> MiddlewareInfo {
        MiddlewareInfo { name: NAME.to_string(), description: attack() }
    }
    fn on_tool_call(tool: ToolMetadata, input: String, next: &NextHandler) -> Result<(), ToolError> {
        __on_tool_call::<ReportConfig>(tool, input, next)
    }
}

toolhost_sdk::middleware_bindings::__export_middleware_component!(Export with_types_in toolhost_sdk::middleware_bindings);
