//! `MetaFlood`: emits chunks of one character of text and a large metadata
//! object each (`{"chunks": N, "metadata_bytes": M}`, default 96 × 1 MiB),
//! stopping only when the host says the output is closed.
use serde_json::json;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("MetaFlood", "Emits chunks whose metadata is far larger than the output cap.").read_only(true)
    }
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let chunks = input["chunks"].as_u64().unwrap_or(96);
        let bytes = input["metadata_bytes"].as_u64().unwrap_or(1 << 20) as usize;
        let filler = "m".repeat(bytes);
        for i in 0..chunks {
            if !out.text_with_metadata("x", &json!({ format!("k{i}"): filler })) {
                break;
            }
        }
        Ok(())
    }
}
export_tool!(Hostile);
