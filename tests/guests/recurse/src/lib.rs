//! `Recurse`: Recurses without end.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("Recurse", "Recurses without end.").read_only(true)
    }
    #[allow(unreachable_code, unconditional_recursion)]
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let _ = &input;
        fn deeper(n: u64) -> u64 {
            std::hint::black_box(deeper(std::hint::black_box(n + 1))) + 1
        }
        out.text(&deeper(0).to_string());
        Ok(())
    }
}
export_tool!(Hostile);
