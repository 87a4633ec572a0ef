//! Writing tool middleware: implement [`Middleware`] and export it with
//! [`export_middleware!`](crate::export_middleware).
//!
//! A middleware wraps every call of the tools it is attached to. It gets the
//! tool's metadata, the call's input (a JSON object as text, already
//! validated against the tool's schema), and [`Next`], the rest of the
//! chain. It forwards, changes, drops or replaces the inner chunks with
//! [`Output`]; not calling [`Next::run`] short-circuits the tool, calling it
//! again retries (each run starts the inner layers afresh).
//!
//! ```ignore
//! use toolhost_sdk::middleware::{Middleware, Next};
//! use toolhost_sdk::{export_middleware, Output, ToolError, ToolMetadata};
//!
//! struct Shout;
//!
//! impl Middleware for Shout {
//!     const NAME: &'static str = "shout";
//!     const DESCRIPTION: &'static str = "Upper-cases the text of every chunk.";
//!
//!     fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
//!         let inner = next.run(&input)?;
//!         for chunk in &inner {
//!             out.emit(toolhost_sdk::middleware::map_text(chunk, |t| t.to_uppercase()));
//!         }
//!         inner.outcome()
//!     }
//! }
//! export_middleware!(Shout);
//! ```

use crate::middleware_bindings::toolhost::tool::chain;
use crate::{Chunk, ContentBlock, Output, ResultState, ToolError, ToolMetadata};

/// A tool middleware. The host instantiates it afresh for every call it
/// wraps: nothing kept in memory survives between calls (use
/// [`crate::state`], if the user grants it, for that).
pub trait Middleware {
    /// A unique name, used in settings to attach it (`[middleware.attach]`,
    /// `--attach TOOL=NAME`) and to grant it capabilities (`[grants.NAME]`).
    const NAME: &'static str;

    /// What it does, for people reading `toolhost` output.
    const DESCRIPTION: &'static str;

    /// Wraps one call of `tool`. Return `Err` to end the call with an error.
    fn on_tool_call(tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError>;
}

/// The rest of the chain: the next middleware, or finally the tool.
pub struct Next<'a> {
    handler: &'a chain::NextHandler,
}

impl Next<'_> {
    /// Runs the inner layers with `input` (a JSON object as text; pass the
    /// input you received to leave it unchanged). The host validates it
    /// against the tool's schema first and refuses invalid input with
    /// [`ToolError::InvalidInput`].
    pub fn run(&self, input: &str) -> Result<InnerCall, ToolError> {
        self.handler.run(input).map(|call| InnerCall { call })
    }
}

/// One run of the inner layers. Iterate over it (or call
/// [`InnerCall::next_chunk`]) to receive their chunks as they are produced,
/// then ask [`InnerCall::outcome`] how they ended.
pub struct InnerCall {
    call: chain::InnerCall,
}

impl InnerCall {
    /// The next chunk; `None` when the inner layers are done.
    pub fn next_chunk(&self) -> Option<Chunk> {
        self.call.next_chunk()
    }

    /// How the inner layers ended (drains chunks not yet read).
    pub fn outcome(&self) -> Result<(), ToolError> {
        self.call.outcome()
    }

    /// Forwards every remaining chunk to `out`, then returns the outcome.
    pub fn forward(&self, out: &mut Output) -> Result<(), ToolError> {
        for chunk in self {
            out.emit(chunk);
        }
        self.outcome()
    }

    /// Collects every remaining chunk, with the outcome.
    pub fn collect_all(&self) -> (Vec<Chunk>, Result<(), ToolError>) {
        let chunks: Vec<Chunk> = Iterator::collect(self.into_iter());
        (chunks, self.outcome())
    }
}

impl Iterator for &InnerCall {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        self.call.next_chunk()
    }
}

/// Whether a chunk reports an error (the whole response is then an error).
pub fn is_error(chunk: &Chunk) -> bool {
    matches!(chunk.state, ResultState::Error)
}

/// The text of a chunk's text blocks, joined.
pub fn text_of(chunk: &Chunk) -> String {
    chunk
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.as_str()),
            ContentBlock::Data(_) => None,
        })
        .collect()
}

/// The chunk with `f` applied to each of its text blocks (data blocks,
/// state and metadata unchanged).
pub fn map_text(mut chunk: Chunk, f: impl Fn(&str) -> String) -> Chunk {
    for block in &mut chunk.content {
        if let ContentBlock::Text(text) = block {
            *text = f(text);
        }
    }
    chunk
}

/// A chunk carrying only metadata (a JSON object), e.g. timings.
pub fn metadata_chunk(metadata: &serde_json::Value) -> Chunk {
    Chunk { content: Vec::new(), state: ResultState::Running, metadata: metadata.to_string() }
}

#[doc(hidden)]
pub fn __on_tool_call<M: Middleware>(
    tool: ToolMetadata,
    input: String,
    next: &chain::NextHandler,
) -> Result<(), ToolError> {
    let mut out = Output::new();
    M::on_tool_call(&tool, input, &Next { handler: next }, &mut out)
}

/// Exports a [`Middleware`] as the component's `middleware` interface.
#[macro_export]
macro_rules! export_middleware {
    ($mw:ty) => {
        #[doc(hidden)]
        pub struct __ToolhostMiddlewareExport;

        impl $crate::middleware_bindings::exports::toolhost::tool::middleware::Guest for __ToolhostMiddlewareExport {
            fn info() -> $crate::middleware_bindings::exports::toolhost::tool::middleware::MiddlewareInfo {
                $crate::middleware_bindings::exports::toolhost::tool::middleware::MiddlewareInfo {
                    name: <$mw as $crate::middleware::Middleware>::NAME.to_string(),
                    description: <$mw as $crate::middleware::Middleware>::DESCRIPTION.to_string(),
                }
            }
            fn on_tool_call(
                tool: $crate::ToolMetadata,
                input: String,
                next: &$crate::middleware_bindings::toolhost::tool::chain::NextHandler,
            ) -> Result<(), $crate::ToolError> {
                $crate::middleware::__on_tool_call::<$mw>(tool, input, next)
            }
        }

        $crate::middleware_bindings::__export_middleware_component!(__ToolhostMiddlewareExport with_types_in $crate::middleware_bindings);
    };
}
