//! `BigSchema`: declares an input schema of more than 10 MB (100 000 properties).
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        let filler = "p".repeat(64);
        let properties: serde_json::Map<String, serde_json::Value> = (0..100_000)
            .map(|i| (format!("field_{i}_{filler}"), serde_json::json!({"type": "string", "description": filler})))
            .collect();
        ToolSpec::new("BigSchema", "Its schema is huge.")
            .schema(serde_json::json!({"type": "object", "properties": properties}))
    }
    fn call(_input: serde_json::Value, _out: &mut Output) -> Result<(), ToolError> {
        Ok(())
    }
}
export_tool!(Hostile);
