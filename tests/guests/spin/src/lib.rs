//! `Spin`: Loops forever.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("Spin", "Loops forever.").read_only(true)
    }
    #[allow(unreachable_code, unconditional_recursion)]
    fn call(input: serde_json::Value, _out: &mut Output) -> Result<(), ToolError> {
        let _ = &input;
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
        Ok(())
    }
}
export_tool!(Hostile);
