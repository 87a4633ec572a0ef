//! `mw-trap`: panics on every call.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Hostile;

impl Middleware for Hostile {
    const NAME: &'static str = "mw-trap";
    const DESCRIPTION: &'static str = "Panics on every call.";
    fn on_tool_call(_tool: &ToolMetadata, _input: String, _next: &Next, _out: &mut Output) -> Result<(), ToolError> {
        panic!("mw-trap always panics");
    }
}
export_middleware!(Hostile);
