//! `Slow`: emits "first", computes for `millis`, then emits "second", to
//! show that a caller sees the first chunk before the call ends.
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Slow;

#[derive(Deserialize)]
struct Input {
    millis: u64,
}

impl Tool for Slow {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("Slow", "Emits two chunks some time apart.")
            .schema(serde_json::json!({"type": "object", "properties": {"millis": {"type": "integer", "minimum": 0}}, "required": ["millis"]}))
            .read_only(true)
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        out.text("first\n");
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < u128::from(input.millis) {
            std::hint::spin_loop();
        }
        out.text("second\n");
        Ok(())
    }
}
export_tool!(Slow);
