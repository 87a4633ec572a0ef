//! `mw-trap-info`: a middleware whose `info` export, which the host calls
//! at load time, panics. Loading it must fail naming the file, `info` and
//! the panic (not blaming a tool's `metadata`), and leave the host serving.
use toolhost_sdk::middleware_bindings::exports::toolhost::tool::middleware::{Guest, MiddlewareInfo};
use toolhost_sdk::middleware_bindings::toolhost::tool::chain::NextHandler;
use toolhost_sdk::{ToolError, ToolMetadata};

struct Hostile;

impl Guest for Hostile {
    fn info() -> MiddlewareInfo {
        panic!("mw-trap-info traps in info");
    }
    fn on_tool_call(_tool: ToolMetadata, _input: String, _next: &NextHandler) -> Result<(), ToolError> {
        Ok(())
    }
}

toolhost_sdk::middleware_bindings::__export_middleware_component!(Hostile with_types_in toolhost_sdk::middleware_bindings);
