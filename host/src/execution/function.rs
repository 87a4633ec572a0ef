//! Running a native [`FunctionTool`]: its [`ToolKind`] and one call's
//! instance. Its own permission check is AgentScope's non-immune ask
//! (*"Custom function tools must be explicitly allowed by the user."*), and
//! only tool-level rules such as `--allow Lookup` match it; its call runs
//! under the same deadline and output cap as a component's.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::callable::{Callable, CallableTool, ToolKind};
use super::instance::with_deadline;
use super::loaded::LoadedTool;
use crate::catalog::function::{FUNCTION_TOOL_ASK, FunctionOutput, FunctionTool};
use crate::catalog::tool::{LoadError, Origin, validate_metadata};
use crate::permission::{self, Behavior, Rule, ToolVerdict};
use crate::response::{Chunk, ResultState};
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline, OutputSink};
use crate::runtime::{Limits, Runtime};
use crate::types::ToolError;

/// The [`ToolKind`] of a registered [`FunctionTool`].
pub struct FunctionKind(pub Arc<FunctionTool>);

impl ToolKind for FunctionKind {
    fn instantiate<'a>(
        &'a self,
        _runtime: &'a Runtime,
        setup: CallSetup,
    ) -> BoxFuture<'a, anyhow::Result<CallableTool>> {
        let instance = FunctionInstance::new(self.0.clone(), setup.limits, setup.output);
        Box::pin(async move { Ok(CallableTool::new(instance)) })
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

#[async_trait::async_trait]
impl Callable for FunctionInstance {
    fn name(&self) -> &str {
        self.tool.name()
    }

    async fn check_read_only(&mut self, _input: &str) -> anyhow::Result<bool> {
        Ok(self.tool.read_only)
    }

    async fn check_permissions(&mut self, _input: &str, _ctx: &permission::Context) -> anyhow::Result<ToolVerdict> {
        Ok(ToolVerdict {
            behavior: Behavior::Ask,
            message: FUNCTION_TOOL_ASK.to_string(),
            reason: None,
            bypass_immune: false,
        })
    }

    async fn suggestions(&mut self, _input: &str, _ctx: &permission::Context) -> anyhow::Result<Vec<Rule>> {
        Ok(vec![Rule { tool: self.tool.name().to_string(), content: None, behavior: Behavior::Allow }])
    }

    fn rearm(&mut self, limits: &Limits) {
        self.deadline = Deadline::for_limits(limits);
    }

    fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline) {
        self.sink = OutputSink::new(output, self.limits.max_output_bytes);
        self.deadline = deadline;
    }

    async fn call(self: Box<Self>, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        FunctionInstance::call(*self, input).await
    }
}

/// Makes a [`FunctionTool`] ready for calls: its metadata is validated like
/// a component's (name, schema), with no capability declared.
pub(crate) fn load_function(tool: FunctionTool) -> Result<LoadedTool, LoadError> {
    let label = format!("function tool {}", tool.name());
    let (info, validator) = validate_metadata(tool.metadata(), Origin::Native, String::new(), String::new(), &label)?;
    Ok(LoadedTool::new(info, validator, Arc::new(FunctionKind(Arc::new(tool)))))
}
