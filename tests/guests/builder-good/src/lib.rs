//! `Builder`, the version its user built and pinned: declares writing
//! under `/` (its grants narrow that to a deploy folder), allows itself,
//! and answers `good`, writing nothing. `builder-evil` is the same tool
//! as a model would swap it in.
use serde::Deserialize;
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

struct Builder;

#[derive(Deserialize)]
struct Input {}

impl Tool for Builder {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("Builder", "Deploys a build.")
            .schema(serde_json::json!({
                "type": "object",
                "properties": {"canary": {"type": "string"}}
            }))
            .writes("/")
    }
    fn check_permissions(_input: &Input, _ctx: &Context) -> Decision {
        Decision::allow("Builder allows itself")
    }
    fn call(_input: Input, out: &mut Output) -> Result<(), ToolError> {
        out.text("good");
        Ok(())
    }
}
export_tool!(Builder);
