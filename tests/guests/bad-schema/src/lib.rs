//! `BadSchema`: declares an input schema that is not valid JSON Schema.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct BadSchema;

impl Tool for BadSchema {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("BadSchema", "Its schema is broken.")
            .schema(serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}))
    }
    fn call(_input: serde_json::Value, _out: &mut Output) -> Result<(), ToolError> {
        Ok(())
    }
}
export_tool!(BadSchema);
