//! `Drip`: emits `count` chunks `chunk N`, sleeping `delay_ms` before each
//! but the first (streaming tests).
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Drip;

#[derive(Deserialize)]
struct Input {
    count: u32,
    delay_ms: u64,
}

impl Tool for Drip {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("Drip", "Streams chunks slowly.")
            .schema(serde_json::json!({
                "type": "object",
                "properties": {"count": {"type": "integer"}, "delay_ms": {"type": "integer"}},
                "required": ["count", "delay_ms"]
            }))
            .read_only(true)
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        for i in 1..=input.count {
            if i > 1 {
                std::thread::sleep(std::time::Duration::from_millis(input.delay_ms));
            }
            out.text(&format!("chunk {i}\n"));
        }
        Ok(())
    }
}
export_tool!(Drip);
