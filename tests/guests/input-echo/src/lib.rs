//! `InputEcho`: returns the input it received, as JSON.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct InputEcho;

impl Tool for InputEcho {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("InputEcho", "Returns its input.")
            .schema(serde_json::json!({
                "type": "object",
                "properties": {"text": {"type": "string"}, "mode": {"type": "string", "default": "plain"}},
                "required": ["text"]
            }))
            .read_only(true)
    }
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        out.text(&input.to_string());
        Ok(())
    }
}
export_tool!(InputEcho);
