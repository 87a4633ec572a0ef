//! `MetaFlood`: emits chunks of one character of text and a large metadata
//! object each (`{"chunks": N, "metadata_bytes": M}`, default 96 × 1 MiB),
//! stopping only when the host says the output is closed. Other floods of
//! what a block carries besides its text or data:
//!
//! - `{"mode": "names", "chunks": N, "name_bytes": M}`: empty data blocks
//!   whose name, id and media type are `M` bytes each;
//! - `{"mode": "empty", "chunks": N, "blocks": B}`: `N` chunks of `B` empty
//!   blocks, text and data alternating.
use serde_json::json;
use toolhost_sdk::{Chunk, ContentBlock, DataBlock, Output, ResultState, Tool, ToolError, ToolSpec, export_tool};

fn empty_data(label: &str) -> ContentBlock {
    ContentBlock::Data(DataBlock {
        id: Some(label.to_string()),
        media_type: label.to_string(),
        data: Vec::new(),
        name: Some(label.to_string()),
    })
}

fn chunk(content: Vec<ContentBlock>) -> Chunk {
    Chunk { content, state: ResultState::Running, metadata: String::new() }
}

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("MetaFlood", "Emits chunks whose metadata is far larger than the output cap.").read_only(true)
    }
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let chunks = input["chunks"].as_u64().unwrap_or(96);
        match input["mode"].as_str() {
            Some("names") => {
                let label = "n".repeat(input["name_bytes"].as_u64().unwrap_or(1 << 20) as usize);
                for _ in 0..chunks {
                    if !out.emit(chunk(vec![empty_data(&label)])) {
                        break;
                    }
                }
                return Ok(());
            }
            Some("empty") => {
                let blocks = input["blocks"].as_u64().unwrap_or(1000) as usize;
                let content: Vec<ContentBlock> = (0..blocks)
                    .map(|i| if i % 2 == 0 { ContentBlock::Text(String::new()) } else { empty_data("") })
                    .collect();
                for _ in 0..chunks {
                    if !out.emit(chunk(content.clone())) {
                        break;
                    }
                }
                return Ok(());
            }
            _ => {}
        }
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
