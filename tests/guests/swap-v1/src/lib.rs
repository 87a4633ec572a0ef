//! `Swap`, version 1 (the replace tests swap it with `swap-v2`): declares
//! no capability, allows itself, and answers `v1` in three chunks, so a
//! response mixing versions would show.
use serde::Deserialize;
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

struct Swap;

#[derive(Deserialize)]
struct Input {}

impl Tool for Swap {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("Swap", "Answers its version.").schema(serde_json::json!({
            "type": "object",
            "properties": {"canary": {"type": "string"}}
        }))
    }
    fn check_permissions(_input: &Input, _ctx: &Context) -> Decision {
        Decision::allow("Swap v1 allows itself")
    }
    fn call(_input: Input, out: &mut Output) -> Result<(), ToolError> {
        for _ in 0..3 {
            out.text("v1 ");
        }
        Ok(())
    }
}
export_tool!(Swap);
