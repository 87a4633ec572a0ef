//! Tool output on the host side: chunks as they stream, and the response
//! they accumulate into (AgentScope's `ToolChunk` / `ToolResponse`).

use serde::{Deserialize, Serialize};

/// How far a result has got (AgentScope's `ToolResultState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ResultState {
    /// An intermediate chunk.
    #[default]
    Running,
    /// Finished normally.
    Success,
    /// Failed.
    Error,
    /// Interrupted by the user or the host.
    Interrupted,
    /// Refused by the permission engine or the user.
    Denied,
}

/// The fixed bytes every content block counts for against the output cap,
/// besides what it carries (the host keeps, merges and prints each block).
pub const BLOCK_COST: usize = 16;

/// The fixed bytes every chunk counts for against the output cap, besides
/// its blocks and metadata.
pub const CHUNK_COST: u64 = 16;

/// The length of `value` as compact JSON text, counted without building
/// the text.
pub fn json_len(value: &impl Serialize) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// One block of content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// Binary data (serialised as base64).
    Data {
        /// Blocks with the same id are merged across chunks.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        id: Option<String>,
        /// IANA media type.
        media_type: String,
        /// The bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
        /// A display name.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        name: Option<String>,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The size this block counts for against the output cap: every byte
    /// it carries (text; or data, media type, id and name) plus
    /// [`BLOCK_COST`], so that neither names nor empty blocks are free.
    pub fn weight(&self) -> usize {
        let carried = match self {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Data { id, media_type, data, name } => {
                data.len()
                    + media_type.len()
                    + id.as_ref().map_or(0, String::len)
                    + name.as_ref().map_or(0, String::len)
            }
        };
        carried.saturating_add(BLOCK_COST)
    }
}

/// One piece of streamed output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Content blocks, in order.
    pub content: Vec<ContentBlock>,
    /// The state this chunk reports.
    pub state: ResultState,
    /// Metadata merged shallowly into the response.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty", default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl Chunk {
    /// A chunk of one text block.
    pub fn text(text: impl Into<String>, state: ResultState) -> Self {
        Self { content: vec![ContentBlock::text(text)], state, metadata: Default::default() }
    }
}

/// The accumulated result of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResponse {
    /// The call id.
    pub id: String,
    /// Content, with consecutive text merged.
    pub content: Vec<ContentBlock>,
    /// success, error, interrupted or denied.
    pub state: ResultState,
    /// Merged metadata.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty", default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl ToolResponse {
    /// An empty successful response.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into(), content: Vec::new(), state: ResultState::Success, metadata: Default::default() }
    }

    /// A response made of one chunk.
    pub fn from_chunk(id: impl Into<String>, chunk: Chunk) -> Self {
        let mut response = Self::new(id);
        response.append(chunk);
        response
    }

    /// Accumulates a chunk, following AgentScope's `append_chunk`: data
    /// blocks with the same id are concatenated, `error` is sticky, the later
    /// of `interrupted`/`denied` wins otherwise, metadata merges shallowly,
    /// and runs of text blocks merge.
    pub fn append(&mut self, chunk: Chunk) {
        for block in chunk.content {
            self.push_block(block);
        }
        match chunk.state {
            ResultState::Error => self.state = ResultState::Error,
            ResultState::Interrupted | ResultState::Denied if self.state != ResultState::Error => {
                self.state = chunk.state
            }
            _ => {}
        }
        self.metadata.extend(chunk.metadata);
    }

    fn push_block(&mut self, block: ContentBlock) {
        match block {
            ContentBlock::Text { text } => match self.content.last_mut() {
                Some(ContentBlock::Text { text: last }) => last.push_str(&text),
                _ => self.content.push(ContentBlock::Text { text }),
            },
            ContentBlock::Data { id: Some(id), media_type, data, name } => {
                let existing = self.content.iter_mut().find_map(|b| match b {
                    ContentBlock::Data { id: Some(i), data: d, media_type: m, name: n } if *i == id => Some((d, m, n)),
                    _ => None,
                });
                match existing {
                    Some((d, m, n)) => {
                        d.extend_from_slice(&data);
                        if !media_type.is_empty() {
                            *m = media_type;
                        }
                        if name.is_some() {
                            *n = name;
                        }
                    }
                    None => self.content.push(ContentBlock::Data { id: Some(id), media_type, data, name }),
                }
            }
            data => self.content.push(data),
        }
    }

    /// All text content joined (data blocks shown as `[media/type, N bytes]`).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            match block {
                ContentBlock::Text { text } => out.push_str(text),
                ContentBlock::Data { media_type, data, .. } => {
                    out.push_str(&format!("[{media_type}, {} bytes]", data.len()))
                }
            }
        }
        out
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(id: &str, bytes: &[u8]) -> ContentBlock {
        ContentBlock::Data { id: Some(id.into()), media_type: "image/png".into(), data: bytes.to_vec(), name: None }
    }

    #[test]
    fn accumulates_like_agentscope() {
        // Spec 14.11: texts merge by adjacency, data blocks by id.
        let mut r = ToolResponse::new("c1");
        for chunk in [
            Chunk::text("123", ResultState::Running),
            Chunk::text("456", ResultState::Running),
            Chunk::text("789", ResultState::Running),
        ] {
            r.append(chunk);
        }
        r.append(Chunk { content: vec![data("1", b"abc")], state: ResultState::Running, metadata: Default::default() });
        r.append(Chunk { content: vec![data("2", b"***")], state: ResultState::Running, metadata: Default::default() });
        r.append(Chunk { content: vec![data("1", b"def")], state: ResultState::Running, metadata: Default::default() });
        assert_eq!(r.content.len(), 3);
        assert_eq!(r.content[0], ContentBlock::text("123456789"));
        assert_eq!(r.content[1], data("1", b"abcdef"));
        assert_eq!(r.state, ResultState::Success);
    }

    #[test]
    fn error_is_sticky_and_last_of_denied_interrupted_wins() {
        let mut r = ToolResponse::new("c");
        r.append(Chunk::text("", ResultState::Denied));
        r.append(Chunk::text("", ResultState::Interrupted));
        assert_eq!(r.state, ResultState::Interrupted);
        r.append(Chunk::text("", ResultState::Error));
        r.append(Chunk::text("", ResultState::Denied));
        assert_eq!(r.state, ResultState::Error);
    }
}
