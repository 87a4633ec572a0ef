//! `mw-flood`: emits far more output than the cap (stopping when told to):
//! text, or with the input `{"text": "metadata"}` one-character chunks each
//! carrying 1 MiB of metadata.
use serde_json::json;
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Hostile;

impl Middleware for Hostile {
    const NAME: &'static str = "mw-flood";
    const DESCRIPTION: &'static str = "Emits far more output than the cap.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, _next: &Next, out: &mut Output) -> Result<(), ToolError> {
        if input.contains("\"metadata\"") {
            let filler = "m".repeat(1 << 20);
            let mut i = 0u32;
            while out.text_with_metadata("y", &json!({ format!("k{i}"): filler })) {
                i += 1;
            }
            return Ok(());
        }
        let line = "y".repeat(1 << 16);
        while out.text(&line) {}
        Ok(())
    }
}
export_middleware!(Hostile);
