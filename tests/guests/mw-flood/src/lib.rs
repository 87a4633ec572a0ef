//! `mw-flood`: emits far more output than the cap (stopping when told to).
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Hostile;

impl Middleware for Hostile {
    const NAME: &'static str = "mw-flood";
    const DESCRIPTION: &'static str = "Emits far more output than the cap.";
    fn on_tool_call(_tool: &ToolMetadata, _input: String, _next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let line = "y".repeat(1 << 16);
        while out.text(&line) {}
        Ok(())
    }
}
export_middleware!(Hostile);
