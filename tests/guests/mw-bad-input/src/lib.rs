//! `mw-bad-input`: rewrites the input to `{"text": 5}` (invalid for Echo)
//! and reports what `next.run` answered.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Bad;

impl Middleware for Bad {
    const NAME: &'static str = "mw-bad-input";
    const DESCRIPTION: &'static str = "Passes invalid input to next.run.";
    fn on_tool_call(_tool: &ToolMetadata, _input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        match next.run(r#"{"text": 5}"#) {
            Ok(call) => call.forward(out),
            Err(ToolError::InvalidInput(message)) => {
                out.error(&format!("refused: {message}"));
                Ok(())
            }
            Err(other) => Err(other),
        }
    }
}
export_middleware!(Bad);
