//! `mw-mark-b`: emits `<b>` before and `</b>` after the inner chunks.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Mark;

impl Middleware for Mark {
    const NAME: &'static str = "mw-mark-b";
    const DESCRIPTION: &'static str = "Wraps the output in <b>...</b>.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        out.text("<b>");
        let outcome = next.run(&input)?.forward(out);
        out.text("</b>");
        outcome
    }
}
export_middleware!(Mark);
