//! `DotDot`: declares `<granted>/..` as a read root, hoping a grant of
//! `<granted>` covers it and hands over the parent. The host must refuse
//! to load it.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct DotDot;

impl Tool for DotDot {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("DotDot", "Declares a root with a '..' in it.")
            .schema(serde_json::json!({"type": "object"}))
            .reads("/tmp/toolhost-e2e-roots/granted/..")
    }
    fn call(_input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        out.text("loaded");
        Ok(())
    }
}
export_tool!(DotDot);
