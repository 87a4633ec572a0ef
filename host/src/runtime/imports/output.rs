//! The `output` interface: a guest's chunks, cut to the call's output cap.

use crate::response::BLOCK_COST;
use crate::runtime::CallState;
use crate::runtime::bindings::v0_1_0::{chunk_from_wit, output as wit};

impl wit::Host for CallState {
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
            let chunk = chunk_from_wit(chunk, &self.tool);
            return Ok(self.sink.emit_weighed(chunk, metadata_len).await);
        }
        let chunk = chunk_from_wit(chunk, &self.tool);
        Ok(self.sink.emit(chunk).await)
    }
}
