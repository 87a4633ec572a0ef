//! The Rust API of middleware: [`NativeMiddleware`], implemented by the
//! embedding program, and what it is handed ([`Next`], [`InnerStream`],
//! [`MiddlewareOutput`]).

use std::sync::Arc;

use super::chain::Link;
use crate::catalog::tool::ToolInfo;
use crate::response::Chunk;
use crate::runtime::imports::chain::{InnerCall, NextHandler};
use crate::runtime::store::OutputSink;
use crate::types::ToolError;

/// A middleware implemented in Rust by the embedding program. It runs in
/// the same chain as middleware components, without a sandbox (it is the
/// embedder's own code) but under the call's deadline.
///
/// ```no_run
/// use toolhost::middleware::{MiddlewareOutput, Next, NativeMiddleware};
/// use toolhost::{ToolError, tool::ToolInfo};
///
/// struct Upper;
///
/// #[toolhost::async_trait]
/// impl NativeMiddleware for Upper {
///     fn name(&self) -> &str { "upper" }
///     async fn on_tool_call(&self, _tool: &ToolInfo, input: String, next: Next, out: &mut MiddlewareOutput) -> Result<(), ToolError> {
///         let mut inner = next.run(input).await?;
///         while let Some(mut chunk) = inner.next().await {
///             for block in &mut chunk.content {
///                 if let toolhost::response::ContentBlock::Text { text } = block { *text = text.to_uppercase(); }
///             }
///             out.emit(chunk).await;
///         }
///         inner.outcome().await
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait NativeMiddleware: Send + Sync + 'static {
    /// A unique name, used to attach it (`Toolhost::attach(tool, [name])`).
    fn name(&self) -> &str;

    /// What it does.
    fn description(&self) -> &str {
        ""
    }

    /// Wraps one call of `tool` with `input` (a JSON object as text).
    /// `next.run(input)` runs the inner layers and streams their chunks;
    /// forward, change, drop or replace them with `out.emit`. Not calling
    /// `next` short-circuits the tool; calling it again retries.
    async fn on_tool_call(
        &self,
        tool: &ToolInfo,
        input: String,
        next: Next,
        out: &mut MiddlewareOutput,
    ) -> Result<(), ToolError>;
}

/// Where a [`NativeMiddleware`] emits its chunks (with the output cap).
pub struct MiddlewareOutput {
    pub(super) sink: OutputSink,
}

impl MiddlewareOutput {
    /// Sends a chunk to the layer outside (or the caller). Returns false
    /// once the output cap is reached or nobody listens: stop producing.
    pub async fn emit(&mut self, chunk: Chunk) -> bool {
        self.sink.emit(chunk).await
    }
}

/// The rest of the chain, as a [`NativeMiddleware`] sees it.
pub struct Next {
    pub(super) runner: Arc<Link>,
}

impl Next {
    /// Runs the inner layers with `input` (a JSON object as text; pass the
    /// input you received to leave it unchanged). The input is validated
    /// against the tool's schema first; invalid input is refused with
    /// [`ToolError::InvalidInput`]. An input that differs (as a JSON value)
    /// from the one the call was allowed with goes through the permission
    /// engine again, asks included; a refusal is [`ToolError::Denied`] and
    /// nothing inside runs. Each run starts afresh.
    pub async fn run(&self, input: impl Into<String>) -> Result<InnerStream, ToolError> {
        let handler = NextHandler { runner: self.runner.clone(), waiting: self.runner.waiting.clone() };
        Ok(InnerStream { call: handler.start(input.into()).await? })
    }
}

/// One run of the inner layers, for a [`NativeMiddleware`].
pub struct InnerStream {
    call: InnerCall,
}

impl InnerStream {
    /// The next chunk of the inner layers, as soon as they produce it;
    /// `None` once they are done.
    pub async fn next(&mut self) -> Option<Chunk> {
        self.call.next().await
    }

    /// How the inner layers ended (drains any chunks not yet read).
    pub async fn outcome(mut self) -> Result<(), ToolError> {
        self.call.outcome().await
    }
}
