//! `mw-mark-a`: emits `<a>` before and `</a>` after the inner chunks.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Mark;

impl Middleware for Mark {
    const NAME: &'static str = "mw-mark-a";
    const DESCRIPTION: &'static str = "Wraps the output in <a>...</a>.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        out.text("<a>");
        let outcome = next.run(&input)?.forward(out);
        out.text("</a>");
        outcome
    }
}
export_middleware!(Mark);
