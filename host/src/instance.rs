//! [`ToolInstance`]: one fresh instance of a tool for one call, and the
//! guarded entry into guest code (deadline, trap classification).

use std::future::Future;
use std::sync::Arc;

use anyhow::anyhow;
use tokio::sync::mpsc;
use wasmtime::Store;

use crate::backend::Backend;
use crate::capability::Grants;
use crate::permission::{self, Behavior, PolicyTool, Rule, ToolVerdict};
use crate::response::Chunk;
use crate::runtime::bindings::tool::{ToolComponent, ToolComponentPre};
use crate::runtime::bindings::wit_types as wit;
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline, new_store_on};
use crate::runtime::{CallState, Limits, Runtime};

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
    bindings: Arc<ToolComponent>,
    name: String,
    /// A guest entry trapped or timed out: the instance must not be entered
    /// again (a trapped component instance refuses re-entry; a timed-out one
    /// was abandoned mid-call).
    failed: bool,
    /// The last permission context and its WIT form: an instance that checks
    /// many calls (`toolhost check --batch`) usually gets the same context
    /// every time, and converting it (the tool configuration as JSON text)
    /// costs more than comparing it. Boxed: most instances never check.
    last_context: Option<Box<(permission::Context, wit::PermissionContext)>>,
}

/// Why a guest entry failed.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    /// The guest trapped, panicked, ran out of memory or time.
    #[error(transparent)]
    Guest(#[from] GuestFailure),
}

impl ToolInstance {
    /// Instantiates a tool for one call, with the store `setup` describes.
    pub async fn new(pre: &ToolComponentPre<CallState>, setup: CallSetup) -> anyhow::Result<Self> {
        let name = setup.tool.to_string();
        let mut store = new_store_on(pre.engine(), CallState::new(setup));
        let bindings = pre.instantiate_async(&mut store).await.map_err(|e| anyhow!("instantiating {name}: {e:#}"))?;
        Ok(Self { store, bindings: Arc::new(bindings), name, failed: false, last_context: None })
    }

    /// Instantiates a freshly loaded component with no grants and asks it
    /// for its metadata, under [`Runtime::probe_limits`] (the configured
    /// limits, at most 10 s).
    pub async fn probe(
        runtime: &Runtime,
        pre: &ToolComponentPre<CallState>,
        label: &str,
    ) -> anyhow::Result<wit::ToolMetadata> {
        let limits = runtime.probe_limits();
        let (tx, _rx) = mpsc::channel(1);
        let backend: Arc<dyn Backend> =
            Arc::new(crate::backend::local::LocalBackend::new(std::env::temp_dir(), std::env::temp_dir()));
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
        let bindings = instance.bindings.clone();
        Ok(enter!(instance, |store| bindings.toolhost_tool_tool().call_metadata(store))?)
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

    /// Whether a guest entry of this instance trapped or timed out; such an
    /// instance cannot be entered again (callers that keep instances, like
    /// `toolhost check --batch`, replace it).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Whether the output cap cut this call's output.
    pub fn output_truncated(&self) -> bool {
        self.store.data().sink.truncated()
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
    pub async fn call(mut self, input: &str) -> Result<Result<(), wit::ToolError>, GuestFailure> {
        let bindings = self.bindings.clone();
        enter!(self, |store| bindings.toolhost_tool_tool().call_call(store, input))
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

fn mode(m: permission::Mode) -> wit::PermissionMode {
    match m {
        permission::Mode::Default => wit::PermissionMode::Default,
        permission::Mode::AcceptEdits => wit::PermissionMode::AcceptEdits,
        permission::Mode::Explore => wit::PermissionMode::Explore,
        permission::Mode::Bypass => wit::PermissionMode::Bypass,
        permission::Mode::DontAsk => wit::PermissionMode::DontAsk,
    }
}

fn behavior_to_wit(b: Behavior) -> wit::PermissionBehavior {
    match b {
        Behavior::Allow => wit::PermissionBehavior::Allow,
        Behavior::Deny => wit::PermissionBehavior::Deny,
        Behavior::Ask => wit::PermissionBehavior::Ask,
        Behavior::Passthrough => wit::PermissionBehavior::Passthrough,
    }
}

fn behavior_from_wit(b: wit::PermissionBehavior) -> Behavior {
    match b {
        wit::PermissionBehavior::Allow => Behavior::Allow,
        wit::PermissionBehavior::Deny => Behavior::Deny,
        wit::PermissionBehavior::Ask => Behavior::Ask,
        wit::PermissionBehavior::Passthrough => Behavior::Passthrough,
    }
}

fn context(ctx: &permission::Context) -> wit::PermissionContext {
    wit::PermissionContext {
        mode: mode(ctx.mode),
        working_directories: ctx.working_dirs.clone(),
        cwd: ctx.cwd.clone(),
        home: ctx.home.clone(),
        tool_config: ctx.tool_config.to_string(),
    }
}

/// The WIT form of `ctx`, converted only when it differs from the last one
/// (`cache`).
fn cached_context<'a>(
    cache: &'a mut Option<Box<(permission::Context, wit::PermissionContext)>>,
    ctx: &permission::Context,
) -> &'a wit::PermissionContext {
    let fresh = match cache.as_deref() {
        Some((last, _)) => !same_context(last, ctx),
        None => true,
    };
    if fresh {
        *cache = None;
    }
    &cache.get_or_insert_with(|| Box::new((ctx.clone(), context(ctx)))).1
}

/// Whether two contexts convert to the same WIT record: equal, with the
/// tool configurations' keys in the same order too (their JSON text is
/// what the guest gets).
fn same_context(a: &permission::Context, b: &permission::Context) -> bool {
    a.mode == b.mode
        && a.working_dirs == b.working_dirs
        && a.cwd == b.cwd
        && a.home == b.home
        && same_json(&a.tool_config, &b.tool_config)
}

/// Equality of JSON values that also requires object keys in the same
/// order (`serde_json`'s `==` ignores the order).
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b)),
        _ => a == b,
    }
}

impl PolicyTool for ToolInstance {
    fn name(&self) -> &str {
        &self.name
    }

    async fn check_read_only(&mut self, input: &str) -> anyhow::Result<bool> {
        let bindings = self.bindings.clone();
        Ok(enter!(self, |s| bindings.toolhost_tool_tool().call_check_read_only(s, input))?)
    }

    async fn check_permissions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<ToolVerdict> {
        let bindings = self.bindings.clone();
        let ctx = cached_context(&mut self.last_context, ctx);
        let d = enter!(self, |s| bindings.toolhost_tool_tool().call_check_permissions(s, input, ctx))?;
        Ok(ToolVerdict {
            behavior: behavior_from_wit(d.behavior),
            message: d.message,
            reason: d.reason,
            bypass_immune: d.bypass_immune,
        })
    }

    async fn match_rule(
        &mut self,
        behavior: Behavior,
        contents: &[String],
        input: &str,
        ctx: &permission::Context,
    ) -> anyhow::Result<Option<usize>> {
        let bindings = self.bindings.clone();
        let ctx = cached_context(&mut self.last_context, ctx);
        let b = behavior_to_wit(behavior);
        let index = enter!(self, |s| bindings.toolhost_tool_tool().call_match_rule(s, b, contents, input, ctx))?;
        Ok(index.map(|i| i as usize))
    }

    async fn suggestions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<Vec<Rule>> {
        let bindings = self.bindings.clone();
        let ctx = cached_context(&mut self.last_context, ctx);
        let rules = enter!(self, |s| bindings.toolhost_tool_tool().call_generate_suggestions(s, input, ctx))?;
        Ok(rules
            .into_iter()
            .map(|r| Rule { tool: r.tool_name, content: r.rule_content, behavior: behavior_from_wit(r.behavior) })
            .collect())
    }
}
