//! The host's meta tools (`reset_tools`, `Skill`): native tools that read or
//! change the session's agent state rather than the world. Their own
//! permission check always allows (the reference's *"The meta tool is
//! always allowed to be called."*), but they go through the whole engine
//! like any tool, so a deny or ask rule (`--deny reset_tools`) still holds;
//! only tool-level rules match them.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::callable::{Callable, CallableTool, ToolKind};
use super::function::panic_text;
use super::instance::with_deadline;
use super::loaded::LoadedTool;
use crate::catalog::group::META_ALLOWED;
use crate::catalog::tool::{LoadError, Origin, validate_metadata};
use crate::permission::{self, Behavior, Rule, ToolVerdict};
use crate::response::{Chunk, ResultState};
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline, OutputSink};
use crate::runtime::{Limits, Runtime};
use crate::state::AgentState;
use crate::types::{ToolError, ToolMetadata};

/// One meta tool: its metadata and what a call does with the session's
/// state.
#[async_trait::async_trait]
pub(crate) trait MetaTool: Send + Sync + 'static {
    /// Its name, description and schema.
    fn metadata(&self) -> ToolMetadata;
    /// Runs one call on validated `input` in the session `state`: the text
    /// for the model, or an error text (the call ends in state `error`).
    async fn run(&self, input: &serde_json::Value, state: &AgentState) -> Result<String, String>;
}

/// The metadata of a meta tool: no capability, state-injected.
pub(crate) fn meta_metadata(
    name: &str,
    description: String,
    schema: serde_json::Value,
    read_only: bool,
    concurrency_safe: bool,
) -> ToolMetadata {
    ToolMetadata {
        name: name.to_string(),
        description,
        input_schema: schema.to_string(),
        concurrency_safe,
        read_only,
        state_injected: true,
        ..ToolMetadata::default()
    }
}

/// Makes a meta tool ready for calls, its metadata validated like any
/// tool's.
pub(crate) fn load_meta(tool: Arc<dyn MetaTool>) -> Result<LoadedTool, LoadError> {
    let metadata = tool.metadata();
    let label = format!("meta tool {}", metadata.name);
    let read_only = metadata.read_only;
    let (info, validator) = validate_metadata(metadata, Origin::Native, String::new(), String::new(), &label)?;
    Ok(LoadedTool::new(info, validator, Arc::new(MetaKind { tool, read_only })))
}

/// The [`ToolKind`] of a meta tool.
struct MetaKind {
    tool: Arc<dyn MetaTool>,
    read_only: bool,
}

impl ToolKind for MetaKind {
    fn instantiate<'a>(
        &'a self,
        _runtime: &'a Runtime,
        setup: CallSetup,
    ) -> BoxFuture<'a, anyhow::Result<CallableTool>> {
        let instance = MetaInstance {
            tool: self.tool.clone(),
            name: setup.tool.to_string(),
            read_only: self.read_only,
            state: setup.agent_state,
            sink: OutputSink::new(setup.output, setup.limits.max_output_bytes),
            deadline: Deadline::for_limits(&setup.limits),
            limits: setup.limits,
        };
        Box::pin(async move { Ok(CallableTool::new(instance)) })
    }
}

/// One call of a meta tool. A decision instance has no state; the call
/// instance has the session's.
struct MetaInstance {
    tool: Arc<dyn MetaTool>,
    name: String,
    read_only: bool,
    state: Option<Arc<AgentState>>,
    sink: OutputSink,
    deadline: Deadline,
    limits: Limits,
}

#[async_trait::async_trait]
impl Callable for MetaInstance {
    fn name(&self) -> &str {
        &self.name
    }

    async fn check_read_only(&mut self, _input: &str) -> anyhow::Result<bool> {
        Ok(self.read_only)
    }

    async fn check_permissions(&mut self, _input: &str, _ctx: &permission::Context) -> anyhow::Result<ToolVerdict> {
        Ok(ToolVerdict {
            behavior: Behavior::Allow,
            message: META_ALLOWED.to_string(),
            reason: None,
            bypass_immune: false,
        })
    }

    async fn suggestions(&mut self, _input: &str, _ctx: &permission::Context) -> anyhow::Result<Vec<Rule>> {
        Ok(Vec::new())
    }

    fn rearm(&mut self, limits: &Limits) {
        self.deadline = Deadline::for_limits(limits);
    }

    fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline) {
        self.sink = OutputSink::new(output, self.limits.max_output_bytes);
        self.deadline = deadline;
    }

    async fn call(mut self: Box<Self>, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        let Some(state) = self.state.clone() else {
            return Ok(Err(ToolError::Internal(format!("{} was started without an agent state", self.name))));
        };
        let value: serde_json::Value = match serde_json::from_str(input) {
            Ok(v) => v,
            Err(e) => return Ok(Err(ToolError::InvalidInput(format!("the input is not JSON: {e}")))),
        };
        // A task of its own, so that a panic ends this call only.
        let tool = self.tool.clone();
        let work = tokio::spawn(async move { tool.run(&value, &state).await });
        match with_deadline(&self.deadline, work).await {
            None => Err(GuestFailure::Timeout { limit_ms: self.limits.timeout_ms }),
            Some(Err(join)) if join.is_panic() => Err(GuestFailure::Panic { message: panic_text(&*join.into_panic()) }),
            Some(Err(join)) => Ok(Err(ToolError::Internal(format!("{} was cancelled: {join}", self.name)))),
            Some(Ok(Ok(text))) => {
                self.sink.emit(Chunk::text(text, ResultState::Success)).await;
                Ok(Ok(()))
            }
            Some(Ok(Err(text))) => {
                self.sink.emit(Chunk::text(text, ResultState::Error)).await;
                Ok(Ok(()))
            }
        }
    }
}
