//! `MemBomb`: Allocates until it is stopped.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("MemBomb", "Allocates until it is stopped.").read_only(true)
    }
    #[allow(unreachable_code, unconditional_recursion)]
    fn call(input: serde_json::Value, _out: &mut Output) -> Result<(), ToolError> {
        let _ = &input;
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![1u8; 16 << 20]);
            std::hint::black_box(&hoard);
        }
        Ok(())
    }
}
export_tool!(Hostile);
