//! `mw-mark-a2`: version 2 of `mw-mark-a` (the same name), for the reload
//! tests: emits `<a2>` before and `</a2>` after the inner chunks, so a
//! chain shows which version of the middleware ran.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Mark;

impl Middleware for Mark {
    const NAME: &'static str = "mw-mark-a";
    const DESCRIPTION: &'static str = "Wraps the output in <a2>...</a2>.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        out.text("<a2>");
        let outcome = next.run(&input)?.forward(out);
        out.text("</a2>");
        outcome
    }
}
export_middleware!(Mark);
