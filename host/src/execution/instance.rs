//! [`ToolInstance`]: one fresh instance of a tool for one call, and the
//! guarded entry into guest code (deadline, trap classification).

use std::future::Future;
use std::sync::Arc;

use anyhow::anyhow;
use tokio::sync::mpsc;
use wasmtime::Store;

use super::callable::Callable;
use crate::capability::Grants;
use crate::permission::{self, Behavior, Rule, ToolVerdict};
use crate::response::Chunk;
use crate::runtime::bindings::{ToolBindings, ToolPre};
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline, new_store_on};
use crate::runtime::{CallState, Limits, Runtime};
use crate::types::{ToolError, ToolMetadata};

/// Enters guest code under the store's deadline: `enter!(self, |store| call)`.
macro_rules! enter {
    ($self:ident, |$store:ident| $call:expr) => {{
        let deadline = $self.store.data().deadline.clone();
        let result = {
            let $store = &mut $self.store;
            with_deadline(&deadline, $call).await
        };
        $self.settle(result, &deadline)
    }};
}

/// A live instance of a tool, owning its store.
pub struct ToolInstance {
    store: Store<CallState>,
    /// Its exports, at the WIT version of the component.
    bindings: ToolBindings,
    name: String,
    /// A guest entry trapped or timed out: the instance must not be entered
    /// again (a trapped component instance refuses re-entry; a timed-out one
    /// was abandoned mid-call).
    failed: bool,
}

impl ToolInstance {
    /// Instantiates a tool for one call, with the store `setup` describes.
    pub async fn new(pre: &ToolPre, setup: CallSetup) -> anyhow::Result<Self> {
        let name = setup.tool.to_string();
        let mut store = new_store_on(pre.engine(), CallState::new(setup));
        let bindings = pre.instantiate(&mut store).await.map_err(|e| anyhow!("instantiating {name}: {e:#}"))?;
        Ok(Self { store, bindings, name, failed: false })
    }

    /// Instantiates a freshly loaded component with no grants and asks it
    /// for its metadata, under [`Runtime::probe_limits`] (the configured
    /// limits, at most 10 s).
    pub async fn probe(runtime: &Runtime, pre: &ToolPre, label: &str) -> anyhow::Result<ToolMetadata> {
        let limits = runtime.probe_limits();
        let (tx, _rx) = mpsc::channel(1);
        // No grant yet, and no backend either: every operation is refused.
        let backend = crate::backend::DeniedBackend::shared();
        let setup = CallSetup {
            tool: Arc::from(label),
            grants: Arc::new(Grants::none(label)),
            backend,
            agent_state: None,
            limits,
            deadline: Deadline::for_limits(&limits),
            output: tx,
            tool_config: None,
        };
        let mut instance = Self::new(pre, setup).await?;
        Ok(enter!(instance, |store| instance.bindings.metadata(store))?)
    }

    /// Re-arms the deadline for the next phase of the call (the time spent
    /// waiting for a user's answer does not count against the tool).
    pub fn rearm(&mut self, limits: &Limits) {
        let data = self.store.data_mut();
        data.deadline = Deadline::for_limits(limits);
    }

    /// Sends this instance's output to `output` and puts it under `deadline`
    /// (the middleware chain runs the tool under the call's shared deadline,
    /// with its chunks going to the innermost middleware).
    pub(crate) fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline) {
        let data = self.store.data_mut();
        data.sink = crate::runtime::store::OutputSink::new(output, data.call_limits.max_output_bytes);
        data.deadline = deadline;
    }

    /// Turns the outcome of a guarded guest entry into a value or a
    /// [`GuestFailure`] naming the cause.
    fn settle<T>(&mut self, result: Option<wasmtime::Result<T>>, deadline: &Deadline) -> Result<T, GuestFailure> {
        let limits = self.store.data().call_limits;
        if !matches!(result, Some(Ok(_))) {
            self.failed = true;
        }
        match result {
            Some(Ok(value)) => Ok(value),
            Some(Err(err)) => {
                let tail = self.store.data().stderr_tail();
                let timed_out = deadline.remaining().is_zero();
                Err(GuestFailure::classify(&err, &tail, timed_out, limits.timeout_ms, limits.max_memory_bytes))
            }
            None => Err(GuestFailure::Timeout { limit_ms: limits.timeout_ms }),
        }
    }

    /// Runs the tool's `call` with `input`; chunks go to the output channel
    /// given at instantiation. Consumes the instance: it is never reused.
    pub async fn call(mut self, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        enter!(self, |store| self.bindings.call(store, input))
    }
}

/// Awaits `fut` until it finishes or the (extendable) deadline passes;
/// `None` on timeout, after which the future is dropped, cancelling any host
/// I/O in flight (and killing processes it started).
pub async fn with_deadline<T>(deadline: &Deadline, fut: impl Future<Output = T>) -> Option<T> {
    tokio::pin!(fut);
    // Most guest entries (permission checks, short calls) finish without
    // waiting on host I/O: try once before arming a timer, which costs more
    // than the entry itself. Guest code is still bounded by the epoch
    // deadline while it runs.
    if let std::task::Poll::Ready(value) = futures::poll!(&mut fut) {
        return Some(value);
    }
    loop {
        let until = tokio::time::Instant::from_std(deadline.until());
        tokio::select! {
            value = &mut fut => return Some(value),
            _ = tokio::time::sleep_until(until) => {
                if deadline.remaining().is_zero() {
                    return None;
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl Callable for ToolInstance {
    fn name(&self) -> &str {
        &self.name
    }

    fn rearm(&mut self, limits: &Limits) {
        ToolInstance::rearm(self, limits)
    }

    fn failed(&self) -> bool {
        self.failed
    }

    fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline) {
        ToolInstance::redirect(self, output, deadline)
    }

    async fn call(self: Box<Self>, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        ToolInstance::call(*self, input).await
    }

    async fn check_read_only(&mut self, input: &str) -> anyhow::Result<bool> {
        Ok(enter!(self, |s| self.bindings.check_read_only(s, input))?)
    }

    async fn check_permissions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<ToolVerdict> {
        Ok(enter!(self, |s| self.bindings.check_permissions(s, input, ctx))?)
    }

    async fn match_rule(
        &mut self,
        behavior: Behavior,
        contents: &[String],
        input: &str,
        ctx: &permission::Context,
    ) -> anyhow::Result<Option<usize>> {
        let index = enter!(self, |s| self.bindings.match_rule(s, behavior, contents, input, ctx))?;
        Ok(index.map(|i| i as usize))
    }

    async fn suggestions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<Vec<Rule>> {
        Ok(enter!(self, |s| self.bindings.suggestions(s, input, ctx))?)
    }
}
