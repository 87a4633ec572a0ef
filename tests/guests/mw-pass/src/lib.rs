//! `mw-pass`: forwards everything unchanged (the benchmark's baseline).
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Pass;

impl Middleware for Pass {
    const NAME: &'static str = "mw-pass";
    const DESCRIPTION: &'static str = "Forwards everything unchanged.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        next.run(&input)?.forward(out)
    }
}
export_middleware!(Pass);
