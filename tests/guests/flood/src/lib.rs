//! `Flood`: Emits far more output than the cap.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("Flood", "Emits far more output than the cap.").read_only(true)
    }
    #[allow(unreachable_code, unconditional_recursion)]
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let _ = &input;
        let line = "x".repeat(1 << 16);
        while out.text(&line) {}
        Ok(())
    }
}
export_tool!(Hostile);
