//! Native function tools for embedders: the definition (a name, a
//! description, an input schema and an async Rust closure). Running one is
//! the execution layer's (`execution/function.rs`).
//!
//! A [`FunctionTool`] is an async Rust closure with a name, a description
//! and an input schema. It goes through the same pipeline as a component:
//! the input is validated against the schema, the permission engine decides
//! (its own check is AgentScope's non-immune ask, *"Custom function tools
//! must be explicitly allowed by the user."*, and only tool-level rules such
//! as `--allow Lookup` match it), then the middleware chain attached to it
//! runs, and finally the closure, under the same deadline and output cap.
//!
//! ```no_run
//! # async fn demo(host: toolhost::Toolhost) -> anyhow::Result<()> {
//! use toolhost::function::FunctionTool;
//! let tool = FunctionTool::new(
//!     "Lookup",
//!     "Looks a word up in the glossary.",
//!     serde_json::json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
//!     |input: serde_json::Value| async move {
//!         let word = input["word"].as_str().unwrap_or_default().to_string();
//!         Ok::<_, String>(format!("{word}: a unit of language"))
//!     },
//! )
//! .read_only(true);
//! host.register_function(tool)?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;

use crate::response::Chunk;
use crate::types;

/// The message of a function tool's own permission check (AgentScope §9.1).
pub const FUNCTION_TOOL_ASK: &str = "Custom function tools must be explicitly allowed by the user.";

/// What a function tool returns: text, or chunks of its own.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionOutput {
    /// One text chunk.
    Text(String),
    /// These chunks, in order.
    Chunks(Vec<Chunk>),
}

impl From<String> for FunctionOutput {
    fn from(text: String) -> Self {
        FunctionOutput::Text(text)
    }
}

impl From<&str> for FunctionOutput {
    fn from(text: &str) -> Self {
        FunctionOutput::Text(text.to_string())
    }
}

impl From<Vec<Chunk>> for FunctionOutput {
    fn from(chunks: Vec<Chunk>) -> Self {
        FunctionOutput::Chunks(chunks)
    }
}

pub(crate) type BoxedFn =
    dyn Fn(serde_json::Value) -> Pin<Box<dyn Future<Output = Result<FunctionOutput, String>> + Send>> + Send + Sync;

/// A tool implemented by an async Rust closure in the embedding program.
/// Register it with [`Toolhost::register_function`](crate::Toolhost::register_function).
pub struct FunctionTool {
    name: String,
    description: String,
    schema: serde_json::Value,
    pub(crate) read_only: bool,
    concurrency_safe: bool,
    pub(crate) func: Box<BoxedFn>,
}

impl std::fmt::Debug for FunctionTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionTool")
            .field("name", &self.name)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl FunctionTool {
    /// A tool named `name` (shown to the model), described by `description`,
    /// taking input that satisfies `schema` (a JSON Schema with `"type":
    /// "object"`), and run by `func`. `func` receives the validated input and
    /// returns text (`String`), chunks (`Vec<Chunk>`), or an error text that
    /// ends the call in state `error`.
    ///
    /// Defaults follow AgentScope's `FunctionTool`: not read-only,
    /// concurrency-safe.
    pub fn new<F, Fut, O>(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: serde_json::Value,
        func: F,
    ) -> Self
    where
        F: Fn(serde_json::Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, String>> + Send + 'static,
        O: Into<FunctionOutput>,
    {
        Self {
            name: name.into(),
            description: description.into(),
            schema,
            read_only: false,
            concurrency_safe: true,
            func: Box::new(move |input| {
                let fut = func(input);
                Box::pin(async move { fut.await.map(Into::into) })
            }),
        }
    }

    /// Marks every call as read-only: then it is allowed in every mode
    /// without asking (the read-only fast path), explore mode included.
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// Lets calls run in parallel with other concurrency-safe calls.
    pub fn concurrency_safe(mut self, yes: bool) -> Self {
        self.concurrency_safe = yes;
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its metadata, as a component would declare it (validated like a
    /// component's by [`super::tool::validate_metadata`]).
    pub(crate) fn metadata(&self) -> types::ToolMetadata {
        types::ToolMetadata {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.schema.to_string(),
            concurrency_safe: self.concurrency_safe,
            read_only: self.read_only,
            ..types::ToolMetadata::default()
        }
    }
}
