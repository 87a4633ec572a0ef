//! Running a tool of an upstream MCP server: the seam the library owns
//! ([`UpstreamServer`], which a front end implements with an MCP client,
//! such as `toolhost-mcp`'s rmcp client), the tool's [`ToolKind`], and one
//! call's instance.
//!
//! The library never speaks MCP itself: a call reaches the server through
//! the trait object, under the call's deadline, and the answer (the JSON of
//! an MCP `CallToolResult`, hostile) is read here block by block into
//! chunks that go through the call's output cap like any tool's output.
//! Its own permission check is AgentScope's (§9.2): allow when read-only,
//! else the non-immune ask *"MCP tools must be explicitly allowed by the
//! user."*; only tool-level rules (`--allow mcp__docs__search`) match it.

use std::sync::Arc;

use base64::Engine as _;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use super::callable::{Callable, CallableTool, ToolKind};
use super::instance::with_deadline;
use super::loaded::LoadedTool;
use crate::catalog::tool::{LoadError, Origin, validate_metadata};
use crate::catalog::upstream::{MCP_READ_ONLY_ALLOW, MCP_TOOL_ASK, UpstreamTool};
use crate::permission::{self, Behavior, Rule, ToolVerdict};
use crate::response::{Chunk, ContentBlock, ResultState};
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline, OutputSink};
use crate::runtime::{Limits, Runtime};
use crate::types::ToolError;

/// A connection to one upstream MCP server, as the library needs it. The
/// implementation starts the server when it is not running (and again
/// after it died), and owns the transport.
pub trait UpstreamServer: Send + Sync + 'static {
    /// Calls the server's tool `tool` (its own name) with `arguments`.
    /// Answers the JSON of the MCP `CallToolResult`, or why there is none
    /// (the server could not be started, died during the call, answered
    /// with a protocol error); the text is shown to the model.
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: serde_json::Map<String, Value>,
    ) -> BoxFuture<'a, Result<Value, String>>;
}

/// The [`ToolKind`] of one upstream tool.
pub struct UpstreamKind {
    name: Arc<str>,
    upstream_name: Arc<str>,
    read_only: bool,
    server: Arc<dyn UpstreamServer>,
}

impl ToolKind for UpstreamKind {
    fn instantiate<'a>(
        &'a self,
        _runtime: &'a Runtime,
        setup: CallSetup,
    ) -> BoxFuture<'a, anyhow::Result<CallableTool>> {
        let instance = UpstreamInstance {
            name: self.name.clone(),
            upstream_name: self.upstream_name.clone(),
            read_only: self.read_only,
            server: self.server.clone(),
            sink: OutputSink::new(setup.output, setup.limits.max_output_bytes),
            deadline: Deadline::for_limits(&setup.limits),
            limits: setup.limits,
        };
        Box::pin(async move { Ok(CallableTool::new(instance)) })
    }
}

/// One call of an upstream tool.
struct UpstreamInstance {
    name: Arc<str>,
    upstream_name: Arc<str>,
    read_only: bool,
    server: Arc<dyn UpstreamServer>,
    sink: OutputSink,
    deadline: Deadline,
    limits: Limits,
}

#[async_trait::async_trait]
impl Callable for UpstreamInstance {
    fn name(&self) -> &str {
        &self.name
    }

    async fn check_read_only(&mut self, _input: &str) -> anyhow::Result<bool> {
        Ok(self.read_only)
    }

    async fn check_permissions(&mut self, _input: &str, _ctx: &permission::Context) -> anyhow::Result<ToolVerdict> {
        Ok(if self.read_only {
            ToolVerdict {
                behavior: Behavior::Allow,
                message: MCP_READ_ONLY_ALLOW.into(),
                reason: None,
                bypass_immune: false,
            }
        } else {
            ToolVerdict { behavior: Behavior::Ask, message: MCP_TOOL_ASK.into(), reason: None, bypass_immune: false }
        })
    }

    async fn suggestions(&mut self, _input: &str, _ctx: &permission::Context) -> anyhow::Result<Vec<Rule>> {
        Ok(vec![Rule { tool: self.name.to_string(), content: None, behavior: Behavior::Allow }])
    }

    fn rearm(&mut self, limits: &Limits) {
        self.deadline = Deadline::for_limits(limits);
    }

    fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline) {
        self.sink = OutputSink::new(output, self.limits.max_output_bytes);
        self.deadline = deadline;
    }

    async fn call(mut self: Box<Self>, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        let arguments = match serde_json::from_str::<Value>(input) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Ok(Err(ToolError::InvalidInput("the input is not a JSON object".into()))),
            Err(e) => return Ok(Err(ToolError::InvalidInput(format!("the input is not JSON: {e}")))),
        };
        let answer = with_deadline(&self.deadline, self.server.call_tool(&self.upstream_name, arguments)).await;
        let chunk = match answer {
            None => return Err(GuestFailure::Timeout { limit_ms: self.limits.timeout_ms }),
            Some(Ok(result)) => result_chunk(&result),
            Some(Err(e)) => Chunk::text(format!("Error occurred when calling MCP tool: {e}"), ResultState::Error),
        };
        self.sink.emit(chunk).await;
        Ok(Ok(()))
    }
}

/// An MCP `CallToolResult` as one chunk (AgentScope §9.2): text blocks as
/// text, images and audio as data, an embedded resource with text as its
/// JSON; state `error` when `isError`. Anything else is skipped; a result
/// with no content but `structuredContent` shows that as JSON text.
pub fn result_chunk(result: &Value) -> Chunk {
    let state = if result.get("isError").and_then(Value::as_bool) == Some(true) {
        ResultState::Error
    } else {
        ResultState::Running
    };
    let mut content = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let text = |key: &str| block.get(key).and_then(Value::as_str);
        match text("type") {
            Some("text") => content.extend(text("text").map(ContentBlock::text)),
            Some("image" | "audio") => {
                let decoded = text("data").and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok());
                if let (Some(data), Some(media_type)) = (decoded, text("mimeType")) {
                    content.push(ContentBlock::Data { id: None, media_type: media_type.into(), data, name: None });
                }
            }
            Some("resource") => {
                if let Some(resource) = block.get("resource").filter(|r| r.get("text").is_some()) {
                    let json = serde_json::to_string_pretty(resource).unwrap_or_default();
                    content.push(ContentBlock::text(json));
                }
            }
            Some("resource_link") => {
                content.extend(text("uri").map(|uri| ContentBlock::text(format!("(resource: {uri})"))));
            }
            _ => {}
        }
    }
    if content.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null())
    {
        content.push(ContentBlock::text(structured.to_string()));
    }
    Chunk { content, state, metadata: Default::default() }
}

/// Makes an upstream tool of `server` ready for calls: its metadata is
/// validated like a plugin's (name, sizes, schema).
pub fn load_upstream(tool: UpstreamTool, server: Arc<dyn UpstreamServer>) -> Result<LoadedTool, LoadError> {
    let server_name = tool.metadata.mcp_origin.clone().unwrap_or_default();
    let label = format!("tool '{}' of MCP server {server_name}", tool.upstream_name);
    let (info, validator) =
        validate_metadata(tool.metadata, Origin::Mcp(server_name), String::new(), String::new(), &label)?;
    let kind = UpstreamKind {
        name: info.name.as_str().into(),
        upstream_name: tool.upstream_name.into(),
        read_only: info.read_only,
        server,
    };
    Ok(LoadedTool::new(info, validator, Arc::new(kind)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_become_one_chunk() {
        let chunk = result_chunk(&json!({
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "image", "data": "not base64!", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "f://x", "text": "t"}},
                {"type": "weird"}
            ],
            "isError": true
        }));
        assert_eq!(chunk.state, ResultState::Error);
        assert_eq!(chunk.content.len(), 3);
        assert_eq!(
            chunk.content[1],
            ContentBlock::Data { id: None, media_type: "image/png".into(), data: b"hi".to_vec(), name: None }
        );
        let only_structured = result_chunk(&json!({"content": [], "structuredContent": {"n": 1}}));
        assert_eq!(only_structured.content, vec![ContentBlock::text("{\"n\":1}")]);
        assert_eq!(only_structured.state, ResultState::Running);
    }
}
