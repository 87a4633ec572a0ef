//! `NapSafe`: concurrency-safe; busy-waits `millis` and reports its start
//! and end in Unix milliseconds as `start end`.
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct NapSafe;

#[derive(Deserialize)]
struct Input {
    millis: u64,
}

fn now_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

impl Tool for NapSafe {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("NapSafe", "Waits, then reports when it ran.")
            .schema(serde_json::json!({"type": "object", "properties": {"millis": {"type": "integer", "minimum": 0}}, "required": ["millis"]}))
            .read_only(true)
            .concurrency_safe(true)
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        let start = now_ms();
        while now_ms() < start + u128::from(input.millis) {
            std::hint::spin_loop();
        }
        out.text(&format!("{start} {}", now_ms()));
        Ok(())
    }
}
export_tool!(NapSafe);
