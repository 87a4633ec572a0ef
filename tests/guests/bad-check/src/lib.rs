//! `BadCheck`: its permission check panics (`{"how": "trap"}`), loops
//! forever (`"hang"`), or answers passthrough (`"fine"`). The engine must
//! deny with the cause, never allow.
use serde::Deserialize;
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

struct BadCheck;

#[derive(Deserialize)]
struct Input {
    how: String,
}

impl Tool for BadCheck {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("BadCheck", "Its permission check misbehaves.").schema(serde_json::json!({
            "type": "object",
            "properties": {"how": {"enum": ["trap", "hang", "fine"]}},
            "required": ["how"]
        }))
    }
    fn check_permissions(input: &Input, _ctx: &Context) -> Decision {
        match input.how.as_str() {
            "trap" => panic!("the check blew up"),
            "hang" => loop {
                std::hint::spin_loop();
            },
            _ => Decision::passthrough("fine"),
        }
    }
    fn call(_input: Input, out: &mut Output) -> Result<(), ToolError> {
        out.text("ran");
        Ok(())
    }
}
export_tool!(BadCheck);
