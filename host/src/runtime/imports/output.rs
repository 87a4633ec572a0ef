use crate::response::{BLOCK_COST, Chunk, ContentBlock, ResultState};
use crate::runtime::CallState;
use crate::runtime::bindings::tool::toolhost::tool::output::Host;
use crate::runtime::bindings::wit_types as wit;

impl Host for CallState {
    async fn emit(&mut self, mut chunk: wit::Chunk) -> wasmtime::Result<bool> {
        if self.sink.truncated() {
            return Ok(false);
        }
        // More blocks than could fit even empty: the rest is not worth converting.
        let fit = usize::try_from(self.sink.room() / BLOCK_COST as u64 + 1).unwrap_or(usize::MAX);
        chunk.content.truncate(fit);
        // Metadata longer than the room left cannot fit: not worth parsing.
        let metadata_len = chunk.metadata.len() as u64;
        if metadata_len > self.sink.room() {
            chunk.metadata = String::new();
            let chunk = from_wit(chunk, &self.tool);
            return Ok(self.sink.emit_weighed(chunk, metadata_len).await);
        }
        let chunk = from_wit(chunk, &self.tool);
        Ok(self.sink.emit(chunk).await)
    }
}

/// Converts a WIT chunk. Metadata that is not a JSON object is dropped with
/// a warning: it is the tool's bug, not the caller's problem.
pub fn from_wit(chunk: wit::Chunk, tool: &str) -> Chunk {
    let metadata = match chunk.metadata.trim() {
        "" => Default::default(),
        text => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => {
                tracing::warn!(tool, "chunk metadata is not a JSON object; dropped");
                Default::default()
            }
        },
    };
    Chunk {
        content: chunk
            .content
            .into_iter()
            .map(|b| match b {
                wit::ContentBlock::Text(text) => ContentBlock::Text { text },
                wit::ContentBlock::Data(d) => {
                    ContentBlock::Data { id: d.id, media_type: d.media_type, data: d.data, name: d.name }
                }
            })
            .collect(),
        state: state_from_wit(chunk.state),
        metadata,
    }
}

/// Converts a host chunk to WIT (what a middleware receives from `next`).
pub fn to_wit(chunk: Chunk) -> wit::Chunk {
    wit::Chunk {
        content: chunk
            .content
            .into_iter()
            .map(|b| match b {
                ContentBlock::Text { text } => wit::ContentBlock::Text(text),
                ContentBlock::Data { id, media_type, data, name } => {
                    wit::ContentBlock::Data(wit::DataBlock { id, media_type, data, name })
                }
            })
            .collect(),
        state: match chunk.state {
            ResultState::Running => wit::ResultState::Running,
            ResultState::Success => wit::ResultState::Success,
            ResultState::Error => wit::ResultState::Error,
            ResultState::Interrupted => wit::ResultState::Interrupted,
            ResultState::Denied => wit::ResultState::Denied,
        },
        metadata: if chunk.metadata.is_empty() {
            String::new()
        } else {
            serde_json::Value::Object(chunk.metadata).to_string()
        },
    }
}

fn state_from_wit(state: wit::ResultState) -> ResultState {
    match state {
        wit::ResultState::Running => ResultState::Running,
        wit::ResultState::Success => ResultState::Success,
        wit::ResultState::Error => ResultState::Error,
        wit::ResultState::Interrupted => ResultState::Interrupted,
        wit::ResultState::Denied => ResultState::Denied,
    }
}
