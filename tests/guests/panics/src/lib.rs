//! `Panics`: Panics.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("Panics", "Panics.").read_only(true)
    }
    #[allow(unreachable_code, unconditional_recursion)]
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let _ = &input;
        let _ = out;
        panic!("this tool always panics: {}", 42);
    }
}
export_tool!(Hostile);
