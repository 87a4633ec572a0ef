//! `RawEcho`: returns the input text exactly as the host passed it to
//! `call` (no parse and re-serialise), so a test sees the bytes a tool with
//! its own JSON parser would read.
use serde_json::value::RawValue;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct RawEcho;

impl Tool for RawEcho {
    type Input = Box<RawValue>;
    fn spec() -> ToolSpec {
        ToolSpec::new("RawEcho", "Returns its input text as received.")
            .schema(
                serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            )
            .read_only(true)
    }
    fn call(input: Box<RawValue>, out: &mut Output) -> Result<(), ToolError> {
        out.text(input.get());
        Ok(())
    }
}
export_tool!(RawEcho);
