//! `Echo`: returns its `text`. The control case: after each hostile guest
//! fails, the tests call this to show the host keeps serving.
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Echo;

#[derive(Deserialize)]
struct Input {
    text: String,
}

impl Tool for Echo {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("Echo", "Returns its text.")
            .schema(
                serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            )
            .read_only(true)
            .concurrency_safe(true)
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        out.text(&input.text);
        Ok(())
    }
}
export_tool!(Echo);
