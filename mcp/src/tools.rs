//! toolhost's tool metadata as MCP tools, and its responses as MCP results.

use std::sync::Arc;

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock as McpContent, ResourceContents, Tool, ToolAnnotations};
use toolhost::response::{ContentBlock, ResultState, ToolResponse};
use toolhost::tool::ToolInfo;

/// The MCP tool for `info`: its name, description and raw input schema,
/// with hints from its flags. Hints only: the permission engine decides.
pub(crate) fn mcp_tool(info: &ToolInfo) -> Tool {
    let schema = match &info.input_schema {
        serde_json::Value::Object(map) => map.clone(),
        // A tool without an object schema still lists; any input object is
        // then checked by the pipeline as `toolhost call` checks it.
        _ => serde_json::Map::from_iter([("type".to_string(), serde_json::json!("object"))]),
    };
    Tool::new(info.name.clone(), info.description.clone(), Arc::new(schema)).with_annotations(annotations(info))
}

/// read-only → readOnly and idempotent; anything else may write
/// (destructive); a tool that runs processes or uses the network is
/// open-world.
fn annotations(info: &ToolInfo) -> ToolAnnotations {
    let open_world = info.capabilities.process_exec || info.capabilities.network;
    ToolAnnotations::new()
        .read_only(info.read_only)
        .destructive(!info.read_only)
        .idempotent(info.read_only)
        .open_world(open_world)
}

/// The MCP result for a finished call: every state but success is an
/// `isError` result, so the model reads the text (denials included).
pub(crate) fn mcp_result(response: &ToolResponse) -> CallToolResult {
    let content: Vec<McpContent> = response.content.iter().map(mcp_content).collect();
    match response.state {
        ResultState::Success | ResultState::Running => CallToolResult::success(content),
        ResultState::Error | ResultState::Denied | ResultState::Interrupted => CallToolResult::error(content),
    }
}

fn mcp_content(block: &ContentBlock) -> McpContent {
    match block {
        ContentBlock::Text { text } => McpContent::text(text.clone()),
        ContentBlock::Data { media_type, data, .. } if media_type.starts_with("image/") => {
            McpContent::image(base64::engine::general_purpose::STANDARD.encode(data), media_type.clone())
        }
        ContentBlock::Data { media_type, data, .. } if media_type.starts_with("audio/") => {
            McpContent::audio(base64::engine::general_purpose::STANDARD.encode(data), media_type.clone())
        }
        ContentBlock::Data { media_type, data, name, .. } => McpContent::resource(embedded(media_type, data, name)),
    }
}

/// Other data as an embedded resource (its content travels in the result;
/// the URI only names it): text for textual media types in UTF-8, base64
/// otherwise. A name with a scheme is the URI; any other name is put under
/// `toolhost://output/`.
fn embedded(media_type: &str, data: &[u8], name: &Option<String>) -> ResourceContents {
    let uri = match name.as_deref() {
        Some(n) if n.contains("://") => n.to_string(),
        other => format!("toolhost://output/{}", other.unwrap_or("data")),
    };
    let textual = media_type.starts_with("text/") || media_type == "application/json" || media_type.ends_with("+json");
    let contents = match std::str::from_utf8(data) {
        Ok(text) if textual => ResourceContents::text(text, uri),
        _ => ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(data), uri),
    };
    contents.with_mime_type(media_type)
}

/// A text error result (tool failures, refusals), which the model sees.
pub(crate) fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![McpContent::text(text.into())])
}

/// The text of a chunk, for a progress message.
pub(crate) fn chunk_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Data { media_type, data, .. } => format!("[{media_type}, {} bytes]", data.len()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(media_type: &str, bytes: &[u8], name: Option<&str>) -> ContentBlock {
        ContentBlock::Data { id: None, media_type: media_type.into(), data: bytes.to_vec(), name: name.map(Into::into) }
    }

    fn json(block: &ContentBlock) -> serde_json::Value {
        serde_json::to_value(mcp_content(block)).unwrap()
    }

    /// A guest names its data as it likes: the URI is only a label, the
    /// content is exactly the guest's bytes (nothing is read from that URI).
    #[test]
    fn data_blocks_are_embedded_with_the_guests_bytes_only() {
        let passwd = json(&data("text/plain", b"not the real file", Some("file:///etc/passwd")));
        assert_eq!(passwd["type"], "resource");
        assert_eq!(passwd["resource"]["uri"], "file:///etc/passwd");
        assert_eq!(passwd["resource"]["text"], "not the real file");
        let plain = json(&data("application/json", br#"{"a":1}"#, Some("report.json")));
        assert_eq!(plain["resource"]["uri"], "toolhost://output/report.json");
        assert_eq!(plain["resource"]["mimeType"], "application/json");
        // Text that is not UTF-8, and binary types, travel as base64.
        let bad = json(&data("text/plain", &[0xff, 0xfe], None));
        assert_eq!(bad["resource"]["blob"], "//4=");
        assert_eq!(bad["resource"]["uri"], "toolhost://output/data");
        let zip = json(&data("application/zip", b"PK", None));
        assert_eq!(zip["resource"]["blob"], "UEs=");
        assert_eq!(json(&data("image/png", b"x", None))["type"], "image");
    }
}
