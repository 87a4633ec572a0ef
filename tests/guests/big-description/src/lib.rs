//! `BigDescription`: declares a 16 MiB description.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        let description = "d".repeat(16 << 20);
        ToolSpec::new("BigDescription", &description)
    }
    fn call(_input: serde_json::Value, _out: &mut Output) -> Result<(), ToolError> {
        Ok(())
    }
}
export_tool!(Hostile);
