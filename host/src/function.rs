//! Native function tools for embedders, and [`CallableTool`]: what the call
//! pipeline runs (a component instance or a native function).
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
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use futures::FutureExt as _;
use tokio::sync::mpsc;

use crate::capability::Phase;
use crate::instance::{ToolInstance, with_deadline};
use crate::permission::{self, Behavior, PolicyTool, Rule, ToolVerdict};
use crate::response::{Chunk, ResultState};
use crate::runtime::Limits;
use crate::runtime::bindings::wit_types::{self as wit, ToolError};
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline, OutputSink};
use crate::state::AgentState;
use crate::tool::{LoadError, LoadedTool, Origin, ToolInfo, ToolKind, validate_metadata};
use crate::toolhost::Toolhost;

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

type BoxedFn =
    dyn Fn(serde_json::Value) -> Pin<Box<dyn Future<Output = Result<FunctionOutput, String>> + Send>> + Send + Sync;

/// A tool implemented by an async Rust closure in the embedding program.
/// Register it with [`Toolhost::register_function`].
pub struct FunctionTool {
    name: String,
    description: String,
    schema: serde_json::Value,
    read_only: bool,
    concurrency_safe: bool,
    func: Box<BoxedFn>,
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

    fn metadata(&self) -> wit::ToolMetadata {
        wit::ToolMetadata {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.schema.to_string(),
            concurrency_safe: self.concurrency_safe,
            read_only: self.read_only,
            external: false,
            state_injected: false,
            mcp_origin: None,
            result_metadata_schema: None,
            capabilities: wit::Capabilities {
                fs_read: Vec::new(),
                fs_write: Vec::new(),
                process_exec: false,
                network: false,
            },
        }
    }
}

/// One call of a [`FunctionTool`]: its output sink and deadline.
pub struct FunctionInstance {
    tool: Arc<FunctionTool>,
    sink: OutputSink,
    deadline: Deadline,
    limits: Limits,
}

impl FunctionInstance {
    fn new(tool: Arc<FunctionTool>, limits: Limits, output: mpsc::Sender<Chunk>) -> Self {
        Self {
            tool,
            sink: OutputSink::new(output, limits.max_output_bytes),
            deadline: Deadline::for_limits(&limits),
            limits,
        }
    }

    async fn call(mut self, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        let value: serde_json::Value = match serde_json::from_str(input) {
            Ok(v) => v,
            Err(e) => return Ok(Err(ToolError::InvalidInput(format!("the input is not JSON: {e}")))),
        };
        let fut = AssertUnwindSafe((self.tool.func)(value)).catch_unwind();
        match with_deadline(&self.deadline, fut).await {
            None => Err(GuestFailure::Timeout { limit_ms: self.limits.timeout_ms }),
            Some(Err(panic)) => Err(GuestFailure::Panic { message: panic_text(&*panic) }),
            Some(Ok(Ok(FunctionOutput::Text(text)))) => {
                self.sink.emit(Chunk::text(text, ResultState::Running)).await;
                Ok(Ok(()))
            }
            Some(Ok(Ok(FunctionOutput::Chunks(chunks)))) => {
                for chunk in chunks {
                    if !self.sink.emit(chunk).await {
                        break;
                    }
                }
                Ok(Ok(()))
            }
            Some(Ok(Err(message))) => {
                self.sink.emit(Chunk::text(format!("Error: {message}"), ResultState::Error)).await;
                Ok(Ok(()))
            }
        }
    }
}

/// The text of a caught panic.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// A tool ready for one call: a fresh component instance or a native
/// function. The permission engine consults it ([`PolicyTool`]), then the
/// pipeline runs it once.
pub enum CallableTool {
    /// A component instance.
    Component(ToolInstance),
    /// A native function tool.
    Function(FunctionInstance),
}

impl CallableTool {
    /// Re-arms the deadline for the call itself (time spent asking the user
    /// does not count).
    pub fn rearm(&mut self, limits: &Limits) {
        match self {
            CallableTool::Component(i) => i.rearm(limits),
            CallableTool::Function(f) => f.deadline = Deadline::for_limits(limits),
        }
    }

    /// Whether a guest entry trapped or timed out, leaving the instance
    /// unusable (never for a native function).
    pub fn failed(&self) -> bool {
        match self {
            CallableTool::Component(i) => i.failed(),
            CallableTool::Function(_) => false,
        }
    }

    /// Sends the output to `output` and runs under `deadline` (used by the
    /// middleware chain).
    pub(crate) fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline) {
        match self {
            CallableTool::Component(i) => i.redirect(output, deadline),
            CallableTool::Function(f) => {
                f.sink = OutputSink::new(output, f.limits.max_output_bytes);
                f.deadline = deadline;
            }
        }
    }

    /// Runs the call; consumes the instance (it is never reused).
    pub async fn call(self, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        match self {
            CallableTool::Component(i) => i.call(input).await,
            CallableTool::Function(f) => f.call(input).await,
        }
    }
}

impl PolicyTool for CallableTool {
    fn name(&self) -> &str {
        match self {
            CallableTool::Component(i) => i.name(),
            CallableTool::Function(f) => &f.tool.name,
        }
    }

    async fn check_read_only(&mut self, input: &str) -> anyhow::Result<bool> {
        match self {
            CallableTool::Component(i) => i.check_read_only(input).await,
            CallableTool::Function(f) => Ok(f.tool.read_only),
        }
    }

    async fn check_permissions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<ToolVerdict> {
        match self {
            CallableTool::Component(i) => i.check_permissions(input, ctx).await,
            CallableTool::Function(_) => Ok(ToolVerdict {
                behavior: Behavior::Ask,
                message: FUNCTION_TOOL_ASK.to_string(),
                reason: None,
                bypass_immune: false,
            }),
        }
    }

    async fn match_rule(
        &mut self,
        behavior: Behavior,
        contents: &[String],
        input: &str,
        ctx: &permission::Context,
    ) -> anyhow::Result<Option<usize>> {
        match self {
            CallableTool::Component(i) => i.match_rule(behavior, contents, input, ctx).await,
            // Tool-level rules only: no content rule matches a function tool.
            CallableTool::Function(_) => Ok(None),
        }
    }

    async fn suggestions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<Vec<Rule>> {
        match self {
            CallableTool::Component(i) => i.suggestions(input, ctx).await,
            CallableTool::Function(f) => {
                Ok(vec![Rule { tool: f.tool.name.clone(), content: None, behavior: Behavior::Allow }])
            }
        }
    }
}

impl Toolhost {
    /// Registers a native [`FunctionTool`]. It is listed, described, checked
    /// and called like any loaded tool. Fails if the name is taken or the
    /// schema is not a valid `type: object` JSON Schema.
    pub fn register_function(&self, tool: FunctionTool) -> Result<ToolInfo, LoadError> {
        let label = format!("function tool {}", tool.name);
        let (info, validator) =
            validate_metadata(tool.metadata(), Origin::Native, String::new(), String::new(), &label)?;
        let loaded = LoadedTool {
            info,
            kind: ToolKind::Function(Arc::new(tool)),
            validator: Arc::new(validator),
            grants: Default::default(),
        };
        self.insert_loaded(loaded, &label)
    }

    /// A fresh callable for `loaded` in `phase`, its output going to
    /// `output`: a decision instance ([`Phase::Decide`]) gets no capability
    /// and no agent state; a call instance gets the grants of its phase.
    pub(crate) async fn instantiate_loaded(
        &self,
        loaded: &LoadedTool,
        session: Option<Arc<AgentState>>,
        output: mpsc::Sender<Chunk>,
        phase: Phase,
    ) -> Result<CallableTool> {
        let limits = self.settings().limits;
        match &loaded.kind {
            ToolKind::Component(pre) => {
                let agent_state = match phase {
                    Phase::Decide => None,
                    Phase::ReadOnlyCall | Phase::Call => Some(session.unwrap_or_else(|| self.state().clone())),
                };
                let setup = CallSetup {
                    tool: Arc::from(loaded.info.name.as_str()),
                    grants: self.phase_grants(loaded, phase),
                    backend: self.backend(),
                    agent_state,
                    limits,
                    deadline: Deadline::for_limits(&limits),
                    output,
                    // The decision exports get the settings in their
                    // context; only `call` reads them from the environment.
                    tool_config: (phase != Phase::Decide).then(|| self.tool_config(&loaded.info.name).to_string()),
                };
                let instance = ToolInstance::new(pre, setup)
                    .await
                    .with_context(|| format!("starting tool '{}'", loaded.info.name))?;
                Ok(CallableTool::Component(instance))
            }
            ToolKind::Function(f) => Ok(CallableTool::Function(FunctionInstance::new(f.clone(), limits, output))),
        }
    }
}
