//! The `output` interface, version-neutral: a guest's chunks, cut to the
//! call's output cap.

use crate::response::{BLOCK_COST, Chunk, ContentBlock, ResultState};
use crate::runtime::CallState;

/// Emits a chunk: `blocks` (converted only as far as they can fit), its
/// state and its metadata as JSON text. Whether the caller still takes
/// output (`false`: stop producing).
pub(crate) async fn emit(
    cx: &mut CallState,
    blocks: impl Iterator<Item = ContentBlock>,
    state: ResultState,
    metadata: String,
) -> bool {
    if cx.sink.truncated() {
        return false;
    }
    // More blocks than could fit even empty: the rest is not worth converting.
    let fit = usize::try_from(cx.sink.room() / BLOCK_COST as u64 + 1).unwrap_or(usize::MAX);
    let content = blocks.take(fit).collect();
    // Metadata longer than the room left cannot fit: not worth parsing.
    let metadata_len = metadata.len() as u64;
    if metadata_len > cx.sink.room() {
        let chunk = Chunk { content, state, metadata: Default::default() };
        return cx.sink.emit_weighed(chunk, metadata_len).await;
    }
    let chunk = Chunk { content, state, metadata: chunk_metadata(&metadata, &cx.tool) };
    cx.sink.emit(chunk).await
}

/// A chunk's metadata text as an object. Metadata that is not a JSON object
/// is dropped with a warning naming `tool`: it is the tool's bug, not the
/// caller's problem.
fn chunk_metadata(text: &str, tool: &str) -> serde_json::Map<String, serde_json::Value> {
    match text.trim() {
        "" => Default::default(),
        text => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => {
                tracing::warn!(tool, "chunk metadata is not a JSON object; dropped");
                Default::default()
            }
        },
    }
}
