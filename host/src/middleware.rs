//! Tool middleware: layers that wrap every call of the tools they are
//! attached to (AgentScope's `ToolMiddlewareBase`, spec §3).
//!
//! A middleware is either a component built against the
//! `middleware-component` world (`toolhost_sdk::export_middleware!`), or a
//! [`NativeMiddleware`] registered from Rust by the embedding program. Both
//! kinds run in the same chain, in the same order.
//!
//! **Order.** The middleware attached to a tool form a chain: the first one
//! is outermost (its pre-logic runs first and its post-logic last), the
//! tool's `call` is innermost. Layers attached to `"*"` (every tool) come
//! before those attached to the tool by name; a name listed twice runs once,
//! at its first place. For `[outer, inner]` a call runs outer-pre,
//! inner-pre, call, inner-post, outer-post.
//!
//! **When.** The chain runs after the permission decision (and never for
//! external tools), in place of the direct `call`.
//!
//! **Isolation.** Every invocation of a middleware component gets a fresh
//! store with the call's limits: the call's deadline (shared by every layer
//! of the call), the memory cap and the output cap, and no capability unless
//! the user grants it under `[grants.NAME]` (or `--grant NAME=...`) with the
//! middleware's name. A middleware that traps, hangs or floods its output
//! fails the call with an error naming it; the host keeps serving.
//!
//! **next.** `next.run(input)` re-validates the (possibly rewritten) input
//! against the tool's schema, refusing invalid input with the validation
//! error; decides an input that differs (as a JSON value) from every input
//! allowed so far in the call again with the whole permission engine, asks
//! included (a refusal is `ToolError::Denied` naming the middleware, and
//! nothing inside runs); and starts the inner layers afresh as their own task (a new tool
//! instance each time, which is how a middleware retries); their chunks
//! stream to the middleware as they are produced.
//!
//! **Attaching.** In `toolhost.toml`:
//!
//! ```toml
//! [middleware]
//! files = ["mw/logging.wasm", "mw/redact.wasm"]
//!
//! [middleware.attach]
//! "*" = ["logging"]          # every tool
//! Bash = ["redact"]          # Bash runs logging(redact(Bash))
//! ```
//!
//! or `--middleware mw/logging.wasm --attach 'Bash=logging,redact'` on the
//! command line, or [`Toolhost::load_middleware`] and [`Toolhost::attach`]
//! from Rust.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::FutureExt as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::backend::Backend;
use crate::capability::{Declared, Grants, Phase};
use crate::function::CallableTool;
use crate::instance::with_deadline;
use crate::response::Chunk;
use crate::runtime::bindings::middleware::MiddlewareComponentPre;
use crate::runtime::bindings::wit_types::{self as wit, ToolError};
use crate::runtime::failure::GuestFailure;
use crate::runtime::imports::chain::{ChainRunner, InnerCall, InnerOutcome, NextHandler};
use crate::runtime::store::{CallSetup, Deadline, OutputSink, new_store};
use crate::runtime::{CallState, Limits, Runtime};
use crate::state::AgentState;
use crate::tool::{
    ComponentKind, LoadError, LoadedTool, Origin, ToolInfo, check_exports, check_header, validate_input,
};
use crate::toolhost::{Permit, Toolhost, Verdict};

/// The key of [`MiddlewareSettings::attach`] meaning "every tool".
pub const EVERY_TOOL: &str = "*";

/// Room a middleware's output cap leaves above the call's cap, so that a
/// middleware forwarding a tool's output that was already cut (content up
/// to the cap plus the truncation note) is not itself blamed for flooding.
const FORWARDING_SLACK: u64 = 4096;

/// The `[middleware]` table of `toolhost.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MiddlewareSettings {
    /// Middleware component files to load (relative paths are relative to
    /// the settings file).
    pub files: Vec<PathBuf>,
    /// Tool name (or `"*"` for every tool) → middleware names, outermost
    /// first.
    pub attach: BTreeMap<String, Vec<String>>,
}

impl MiddlewareSettings {
    /// Parses one `--attach` value: `TOOL=NAME[,NAME...]` (`*=NAME` for
    /// every tool), appending to the attachments.
    pub fn add_attach(&mut self, spec: &str) -> Result<(), String> {
        let (tool, names) = spec.split_once('=').ok_or_else(|| {
            format!("--attach '{spec}' must look like TOOL=NAME[,NAME], e.g. Bash=logging,retry or '*=logging'")
        })?;
        let tool = tool.trim();
        let names: Vec<String> =
            names.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
        if tool.is_empty() || names.is_empty() {
            return Err(format!(
                "--attach '{spec}' needs a tool name and at least one middleware name, e.g. Bash=logging"
            ));
        }
        self.attach.entry(tool.to_string()).or_default().extend(names);
        Ok(())
    }

    /// Makes relative file paths absolute against `base`.
    pub fn resolve_relative(&mut self, base: &Path) {
        for file in &mut self.files {
            if file.is_relative() {
                *file = base.join(&*file);
            }
        }
    }
}

/// What `toolhost` knows about a loaded middleware.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MiddlewareInfo {
    /// Its unique name, used to attach it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// A component file, or native Rust.
    pub origin: Origin,
    /// The WIT package version a component was built against (empty for native).
    pub wit_version: String,
    /// SHA-256 of the component bytes (empty for native).
    pub sha256: String,
}

/// A middleware component ready to be instantiated for calls.
pub struct LoadedMiddleware {
    /// Its name and description.
    pub info: MiddlewareInfo,
    pre: MiddlewareComponentPre<CallState>,
}

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
    sink: OutputSink,
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
    runner: Arc<Link>,
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

/// A layer of a chain.
#[derive(Clone)]
enum Layer {
    Component(Arc<LoadedMiddleware>),
    Native(Arc<dyn NativeMiddleware>),
}

impl Layer {
    fn name(&self) -> &str {
        match self {
            Layer::Component(mw) => &mw.info.name,
            Layer::Native(mw) => mw.name(),
        }
    }
}

/// The loaded middleware and the attachments, kept by the [`Toolhost`].
#[derive(Default)]
pub(crate) struct Registry {
    layers: RwLock<BTreeMap<String, (Layer, MiddlewareInfo)>>,
    attach: RwLock<BTreeMap<String, Vec<String>>>,
}

impl Registry {
    fn insert(&self, layer: Layer, info: MiddlewareInfo, label: &str) -> Result<MiddlewareInfo, LoadError> {
        let mut layers = self.layers.write().unwrap_or_else(|p| p.into_inner());
        if layers.contains_key(&info.name) {
            return Err(LoadError::MiddlewareNameTaken { source_name: label.to_string(), name: info.name });
        }
        layers.insert(info.name.clone(), (layer, info.clone()));
        Ok(info)
    }

    /// Whether a middleware named `name` is loaded.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.layers.read().unwrap_or_else(|p| p.into_inner()).contains_key(name)
    }

    /// The names attached to `tool`, outermost first.
    fn names_for(&self, tool: &str) -> Vec<String> {
        let attach = self.attach.read().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<String> = Vec::new();
        for key in [EVERY_TOOL, tool] {
            for name in attach.get(key).into_iter().flatten() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// The layers of `tool`'s chain; an attached name that is not loaded
    /// fails the call (middleware may enforce policy, e.g. redaction).
    fn chain_for(&self, tool: &str) -> Result<Vec<Layer>, CallFailure> {
        let names = self.names_for(tool);
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let layers = self.layers.read().unwrap_or_else(|p| p.into_inner());
        names
            .iter()
            .map(|name| {
                layers
                    .get(name)
                    .map(|(l, _)| l.clone())
                    .ok_or_else(|| CallFailure::NotLoaded { name: name.clone(), tool: tool.to_string() })
            })
            .collect()
    }
}

/// Why a middleware failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MiddlewareFault {
    /// The component trapped, panicked, ran out of memory or time.
    Guest(GuestFailure),
    /// It emitted more than the output cap allows.
    Flood {
        /// The cap in force, bytes.
        limit_bytes: u64,
    },
    /// It could not be instantiated.
    Instantiate(String),
}

/// Why a call failed outside the tool's own error handling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallFailure {
    /// The tool trapped, panicked, ran out of memory or time.
    #[error(transparent)]
    Tool(#[from] GuestFailure),
    /// A middleware failed.
    #[error("{}", fault_text(name, fault))]
    Middleware {
        /// The middleware's name.
        name: String,
        /// What went wrong.
        fault: MiddlewareFault,
    },
    /// An attached middleware is not loaded.
    #[error(
        "middleware '{name}' is attached to '{tool}' but not loaded; load it (--middleware FILE or [middleware].files) or remove it from the attachment (--attach or [middleware.attach])"
    )]
    NotLoaded {
        /// The missing middleware.
        name: String,
        /// The tool it is attached to.
        tool: String,
    },
}

fn fault_text(name: &str, fault: &MiddlewareFault) -> String {
    let fix = "fix the middleware or detach it";
    match fault {
        MiddlewareFault::Guest(GuestFailure::Timeout { limit_ms }) => format!(
            "middleware '{name}' did not finish within the call's time limit of {limit_ms} ms and was stopped (raise limits.timeout_ms, or {fix})"
        ),
        MiddlewareFault::Guest(GuestFailure::OutOfMemory { limit_mib }) => format!(
            "middleware '{name}' exceeded its memory limit of {limit_mib} MiB and was stopped (raise limits.max_memory_bytes, or {fix})"
        ),
        MiddlewareFault::Guest(GuestFailure::StackOverflow) => {
            format!(
                "stack overflow: middleware '{name}' overflowed its stack (unbounded recursion, or very large local variables?) and was stopped; {fix}"
            )
        }
        MiddlewareFault::Guest(GuestFailure::Panic { message }) => format!("middleware '{name}' panicked: {message}"),
        MiddlewareFault::Guest(GuestFailure::Trap { message }) => format!("middleware '{name}' crashed: {message}"),
        MiddlewareFault::Flood { limit_bytes } => format!(
            "middleware '{name}' exceeded the output limit of {limit_bytes} bytes and was stopped (raise limits.max_output_bytes, or {fix})"
        ),
        MiddlewareFault::Instantiate(e) => format!("middleware '{name}' could not be started: {e}"),
    }
}

impl CallFailure {
    /// The error an outer middleware sees from `inner-call.outcome` when
    /// the inner layers failed this way.
    fn as_tool_error(&self) -> ToolError {
        match self {
            CallFailure::Tool(GuestFailure::Timeout { .. }) => ToolError::Timeout(self.to_string()),
            other => ToolError::Internal(other.to_string()),
        }
    }
}

/// A failure of one layer, and whether that layer was only waiting for its
/// inner layers when it happened (then the blame lies further in).
struct LayerFailure {
    failure: CallFailure,
    waiting: bool,
}

type LayerResult = Result<InnerOutcome, LayerFailure>;

/// One call's chain: the layers, the tool, and what went wrong where.
struct Chain {
    host: Toolhost,
    tool: Arc<LoadedTool>,
    layers: Vec<Layer>,
    session: Option<Arc<AgentState>>,
    deadline: Deadline,
    limits: Limits,
    /// The call instance made after the decision, used for the first run
    /// of the tool when that run's input was decided into the same phase.
    first: Mutex<Option<CallableTool>>,
    /// The phase `first` was made for.
    phase: Phase,
    /// Failures of inner layers: (position, failure, was waiting).
    failures: Mutex<Vec<(usize, LayerFailure)>>,
    /// Inner layers running as tasks.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// How to decide (and ask about) a rewritten input, as the call's
    /// first decision was made.
    permit: Permit,
    /// The inputs the permission engine allowed for this call (the original
    /// first), each with the phase its decision gives the tool's `call`: an
    /// input passed to `next.run` that is not among them is decided again
    /// before anything inside runs.
    allowed: Mutex<Vec<(serde_json::Value, Phase)>>,
}

/// The link from a middleware at some position to the layers inside it.
struct Link {
    chain: Arc<Chain>,
    position: usize,
    waiting: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl ChainRunner for Link {
    async fn run(
        &self,
        input: String,
        output: mpsc::Sender<Chunk>,
    ) -> Result<oneshot::Receiver<InnerOutcome>, ToolError> {
        self.chain.start(self.position, input, output).await
    }
}

/// Runs one call through the middleware attached to its tool, the tool's
/// `call` innermost; `instance` is the tool's call instance (made after the
/// decision, with the grants of `phase`), `input` the allowed input (as a
/// value and as text), `permit` how to decide a rewritten input, and
/// `output` where the outermost layer's chunks go. Without middleware this
/// is exactly `instance.call(input)`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_chain(
    host: Toolhost,
    tool: Arc<LoadedTool>,
    mut instance: CallableTool,
    input: serde_json::Value,
    input_text: String,
    session: Option<Arc<AgentState>>,
    permit: Permit,
    output: mpsc::Sender<Chunk>,
    phase: Phase,
) -> Result<InnerOutcome, CallFailure> {
    let layers = host.middleware_registry().chain_for(&tool.info.name)?;
    if layers.is_empty() {
        drop(output);
        return Ok(instance.call(&input_text).await?);
    }
    let limits = host.settings().limits;
    let deadline = Deadline::for_limits(&limits);
    // Until its run, the first instance must not hold the caller's channel open.
    let (parked, _) = mpsc::channel(1);
    instance.redirect(parked, deadline.clone());
    let chain = Arc::new(Chain {
        host,
        tool,
        layers,
        session,
        deadline,
        limits,
        first: Mutex::new(Some(instance)),
        phase,
        failures: Mutex::new(Vec::new()),
        tasks: Mutex::new(Vec::new()),
        permit,
        allowed: Mutex::new(vec![(input, phase)]),
    });
    let result = chain.run_layer(0, input_text, output, phase).await;
    let outcome = chain.settle(result).await;
    chain.first.lock().unwrap_or_else(|p| p.into_inner()).take();
    outcome
}

impl Chain {
    /// Validates `input`, decides it again if it differs from every input
    /// already allowed for this call, and starts the layers from `position`
    /// inward as a task with the canonical text of the decided value; inner failures are recorded and reported to the
    /// caller layer as a [`ToolError`].
    async fn start(
        self: &Arc<Self>,
        position: usize,
        input: String,
        output: mpsc::Sender<Chunk>,
    ) -> Result<oneshot::Receiver<InnerOutcome>, ToolError> {
        let value: serde_json::Value = serde_json::from_str(&input).map_err(|e| {
            ToolError::InvalidInput(format!(
                "the input passed to next.run for tool '{}' is not JSON: {e}",
                self.tool.info.name
            ))
        })?;
        validate_input(&self.tool, &value).map_err(ToolError::InvalidInput)?;
        // What is decided, and what the inner layers and the tool get, is the
        // value's canonical text, not the middleware's: a guest's JSON parser
        // may read duplicate keys or big numbers differently from the host's.
        let input = value.to_string();
        let phase = self.recheck(position, value, &input).await?;
        let (tx, rx) = oneshot::channel();
        let chain = self.clone();
        let task = tokio::spawn(async move {
            let outcome = match chain.run_layer(position, input, output, phase).await {
                Ok(outcome) => outcome,
                Err(failure) => {
                    let error = failure.failure.as_tool_error();
                    chain.failures.lock().unwrap_or_else(|p| p.into_inner()).push((position, failure));
                    Err(error)
                }
            };
            let _ = tx.send(outcome);
        });
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).push(task);
        Ok(rx)
    }

    /// Runs the permission engine again for an input the middleware at
    /// `position - 1` passed on, unless the call already allowed exactly
    /// that value (compared as JSON values, not text). The decision runs on
    /// an instance of its own; an ask goes to the caller like the first
    /// one, and the time spent waiting for the answer is added to the
    /// call's deadline. Returns the phase the tool's `call` gets for this
    /// input (read-only grants when its read-only claim allowed it).
    async fn recheck(&self, position: usize, value: serde_json::Value, text: &str) -> Result<Phase, ToolError> {
        if let Some((_, phase)) =
            self.allowed.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(allowed, _)| *allowed == value)
        {
            return Ok(*phase);
        }
        let middleware = self.layers.get(position.wrapping_sub(1)).map(Layer::name).unwrap_or_default();
        let tool = &self.tool.info.name;
        let (parked, _) = mpsc::channel(1);
        let mut instance =
            self.host.instantiate_loaded(&self.tool, None, parked, Phase::Decide).await.map_err(|e| {
                ToolError::Internal(format!("could not start tool '{tool}' to check the rewritten input: {e:#}"))
            })?;
        let started = std::time::Instant::now();
        let verdict = self.host.decide(&mut instance, &self.permit, &value, text).await;
        self.deadline.postpone(started.elapsed());
        match verdict {
            Verdict::Allow(phase) => {
                self.allowed.lock().unwrap_or_else(|p| p.into_inner()).push((value, phase));
                Ok(phase)
            }
            Verdict::Deny(decision) => Err(ToolError::Denied(format!(
                "middleware '{middleware}' passed a rewritten input to '{tool}' that the permission engine refused: {}",
                refusal_text(&decision)
            ))),
            Verdict::UserDenied(asked) => Err(ToolError::Denied(format!(
                "middleware '{middleware}' passed a rewritten input to '{tool}' that needs permission ({asked}), and it was denied (or nobody could be asked)"
            ))),
            Verdict::Gone => Err(ToolError::Denied(format!(
                "middleware '{middleware}' passed a rewritten input to '{tool}' and nobody answered the permission request"
            ))),
        }
    }

    /// Runs the layer at `position` (the tool when past the last
    /// middleware, with the grants of `phase`, what `input` was decided to).
    async fn run_layer(
        self: &Arc<Self>,
        position: usize,
        input: String,
        output: mpsc::Sender<Chunk>,
        phase: Phase,
    ) -> LayerResult {
        let Some(layer) = self.layers.get(position) else {
            return self.run_tool(input, output, phase).await;
        };
        let waiting = Arc::new(AtomicBool::new(false));
        let link = Arc::new(Link { chain: self.clone(), position: position + 1, waiting: waiting.clone() });
        match layer {
            Layer::Component(mw) => self.run_component(mw, link, input, output, self.middleware_phase(phase)).await,
            Layer::Native(mw) => self.run_native(mw.as_ref(), link, input, output).await,
        }
    }

    async fn run_tool(&self, input: String, output: mpsc::Sender<Chunk>, phase: Phase) -> LayerResult {
        let first =
            if phase == self.phase { self.first.lock().unwrap_or_else(|p| p.into_inner()).take() } else { None };
        let mut instance = match first {
            Some(instance) => instance,
            None => match self.host.instantiate_loaded(&self.tool, self.session.clone(), output.clone(), phase).await {
                Ok(instance) => instance,
                Err(e) => {
                    return Err(LayerFailure {
                        failure: CallFailure::Tool(GuestFailure::Trap { message: format!("{e:#}") }),
                        waiting: false,
                    });
                }
            },
        };
        instance.redirect(output, self.deadline.clone());
        instance.call(&input).await.map_err(|f| LayerFailure { failure: CallFailure::Tool(f), waiting: false })
    }

    /// The phase a middleware instance's grants are shaped for: read-only
    /// when the call, or the input this layer is given, was allowed only
    /// as read-only (a middleware must not write where the tool may not).
    fn middleware_phase(&self, phase: Phase) -> Phase {
        if self.phase == Phase::ReadOnlyCall || phase == Phase::ReadOnlyCall {
            Phase::ReadOnlyCall
        } else {
            Phase::Call
        }
    }

    /// The limits of a middleware store: the call's, with room to forward
    /// an already-cut output.
    fn middleware_limits(&self) -> Limits {
        Limits { max_output_bytes: self.limits.max_output_bytes.saturating_add(FORWARDING_SLACK), ..self.limits }
    }

    fn fault(&self, name: &str, fault: MiddlewareFault, waiting: bool) -> LayerFailure {
        LayerFailure { failure: CallFailure::Middleware { name: name.to_string(), fault }, waiting }
    }

    async fn run_component(
        &self,
        mw: &LoadedMiddleware,
        link: Arc<Link>,
        input: String,
        output: mpsc::Sender<Chunk>,
        phase: Phase,
    ) -> LayerResult {
        let name = mw.info.name.as_str();
        let limits = self.middleware_limits();
        let mut state = CallState::new(CallSetup {
            tool: Arc::from(name),
            grants: Arc::new(self.host.middleware_grants(name).for_phase(phase)),
            backend: self.host.backend(),
            agent_state: Some(self.session.clone().unwrap_or_else(|| self.host.state().clone())),
            limits,
            deadline: self.deadline.clone(),
            output,
            tool_config: None,
        });
        let waiting = link.waiting.clone();
        state.chain = Some(link.clone());
        let mut store = new_store(self.host.runtime(), state);
        let instance = match mw.pre.instantiate_async(&mut store).await {
            Ok(i) => i,
            Err(e) => return Err(self.fault(name, MiddlewareFault::Instantiate(format!("{e:#}")), false)),
        };
        let handler = match store.data_mut().table.push(NextHandler { runner: link, waiting: waiting.clone() }) {
            Ok(h) => h,
            Err(e) => return Err(self.fault(name, MiddlewareFault::Instantiate(format!("{e}")), false)),
        };
        let metadata = wit_metadata(&self.tool.info);
        let result = with_deadline(
            &self.deadline,
            instance.toolhost_tool_middleware().call_on_tool_call(&mut store, &metadata, &input, handler),
        )
        .await;
        let was_waiting = waiting.load(Ordering::Relaxed);
        if store.data().sink.truncated() {
            return Err(self.fault(name, MiddlewareFault::Flood { limit_bytes: limits.max_output_bytes }, false));
        }
        match result {
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(e)) => {
                let tail = store.data().stderr_tail();
                let timed_out = self.deadline.remaining().is_zero();
                let failure = GuestFailure::classify(&e, &tail, timed_out, limits.timeout_ms, limits.max_memory_bytes);
                Err(self.fault(name, MiddlewareFault::Guest(failure), was_waiting))
            }
            None => Err(self.fault(
                name,
                MiddlewareFault::Guest(GuestFailure::Timeout { limit_ms: limits.timeout_ms }),
                was_waiting,
            )),
        }
    }

    async fn run_native(
        &self,
        mw: &dyn NativeMiddleware,
        link: Arc<Link>,
        input: String,
        output: mpsc::Sender<Chunk>,
    ) -> LayerResult {
        let name = mw.name().to_string();
        let limits = self.middleware_limits();
        let waiting = link.waiting.clone();
        let mut out = MiddlewareOutput { sink: OutputSink::new(output, limits.max_output_bytes) };
        let next = Next { runner: link };
        let call = std::panic::AssertUnwindSafe(mw.on_tool_call(&self.tool.info, input, next, &mut out)).catch_unwind();
        let result = with_deadline(&self.deadline, call).await;
        let was_waiting = waiting.load(Ordering::Relaxed);
        if out.sink.truncated() {
            return Err(self.fault(&name, MiddlewareFault::Flood { limit_bytes: limits.max_output_bytes }, false));
        }
        match result {
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(panic)) => {
                let message = crate::function::panic_text(&*panic);
                Err(self.fault(&name, MiddlewareFault::Guest(GuestFailure::Panic { message }), false))
            }
            None => Err(self.fault(
                &name,
                MiddlewareFault::Guest(GuestFailure::Timeout { limit_ms: limits.timeout_ms }),
                was_waiting,
            )),
        }
    }

    /// The call's result from the outermost layer's, blaming the layer
    /// actually responsible: an outer layer that timed out while waiting
    /// for its inner layers passes the blame inward, and a failed
    /// middleware fails the call even if an outer one carried on.
    async fn settle(&self, result: LayerResult) -> Result<InnerOutcome, CallFailure> {
        let mut tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        let waited = matches!(&result, Err(f) if f.waiting);
        if waited {
            // Inner layers share the deadline, so they end about now.
            let all = futures::future::join_all(tasks.iter_mut());
            let _ = tokio::time::timeout(Duration::from_secs(2), all).await;
        }
        for task in &tasks {
            task.abort();
        }
        let failures = std::mem::take(&mut *self.failures.lock().unwrap_or_else(|p| p.into_inner()));
        match result {
            Ok(outcome) => {
                match failures.into_iter().find(|(_, f)| matches!(f.failure, CallFailure::Middleware { .. })) {
                    Some((_, f)) => Err(f.failure),
                    None => Ok(outcome),
                }
            }
            Err(f) if f.waiting => {
                let deepest = failures.into_iter().filter(|(_, f)| !f.waiting).max_by_key(|(position, _)| *position);
                Err(deepest.map(|(_, inner)| inner.failure).unwrap_or(f.failure))
            }
            Err(f) => Err(f.failure),
        }
    }
}

/// A refusal's message with the rule and reason behind it.
fn refusal_text(decision: &crate::permission::Decision) -> String {
    let mut text = decision.message.clone();
    if let Some(rule) = &decision.rule {
        text.push_str(&format!(" (rule {rule})"));
    }
    if let Some(reason) = decision.reason.as_deref().filter(|r| !decision.message.contains(r)) {
        text.push_str(&format!(" ({reason})"));
    }
    text
}

/// A tool's metadata as the WIT record a middleware receives.
fn wit_metadata(info: &ToolInfo) -> wit::ToolMetadata {
    wit::ToolMetadata {
        name: info.name.clone(),
        description: info.description.clone(),
        input_schema: info.input_schema.to_string(),
        concurrency_safe: info.concurrency_safe,
        read_only: info.read_only,
        external: info.external,
        state_injected: info.state_injected,
        mcp_origin: info.mcp_origin.clone(),
        result_metadata_schema: info.result_metadata_schema.as_ref().map(|s| s.to_string()),
        capabilities: wit::Capabilities {
            fs_read: info.capabilities.fs_read.clone(),
            fs_write: info.capabilities.fs_write.clone(),
            process_exec: info.capabilities.process_exec,
            network: info.capabilities.network,
        },
    }
}

/// Checks, compiles and introspects a middleware component (calling its
/// `info` with no grants under [`Runtime::probe_limits`]).
pub async fn load_middleware_component(
    runtime: &Runtime,
    bytes: &[u8],
    origin: Origin,
    label: &str,
) -> Result<LoadedMiddleware, LoadError> {
    check_header(bytes, label)?;
    let sha256 = hex::encode(Sha256::digest(bytes));
    let (component, _) =
        runtime.compile(bytes, label).map_err(|e| LoadError::Compile(label.into(), format!("{e:#}")))?;
    let wit_version = check_exports(&component, label, ComponentKind::Middleware)?;
    let pre = runtime
        .middleware_linker()
        .instantiate_pre(&component)
        .map_err(|e| LoadError::MiddlewareUnknownImport(label.into(), format!("{e:#}")))?;
    let pre = MiddlewareComponentPre::new(pre)
        .map_err(|e| LoadError::MiddlewareWrongWorld(label.into(), format!("{e:#}")))?;
    let limits = runtime.probe_limits();
    let deadline = Deadline::new(limits.timeout(), Duration::ZERO);
    let (tx, _rx) = mpsc::channel(1);
    let backend: Arc<dyn Backend> =
        Arc::new(crate::backend::local::LocalBackend::new(std::env::temp_dir(), std::env::temp_dir()));
    let state = CallState::new(CallSetup {
        tool: Arc::from(label),
        grants: Arc::new(Grants::none(label)),
        backend,
        agent_state: None,
        limits,
        deadline: deadline.clone(),
        output: tx,
        tool_config: None,
    });
    let mut store = new_store(runtime, state);
    let probe = async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.toolhost_tool_middleware().call_info(&mut store).await
    };
    let info = match with_deadline(&deadline, probe).await {
        Some(Ok(info)) => info,
        Some(Err(e)) => {
            let failure = GuestFailure::classify(
                &e,
                &store.data().stderr_tail(),
                deadline.remaining().is_zero(),
                limits.timeout_ms,
                limits.max_memory_bytes,
            );
            return Err(LoadError::Instantiate(label.into(), format!("calling `info`: {failure}")));
        }
        None => {
            return Err(LoadError::Instantiate(
                label.into(),
                format!("`info` did not answer within {} ms (limits.timeout_ms, at most 10 s)", limits.timeout_ms),
            ));
        }
    };
    check_name(&info.name, label)?;
    crate::tool::check_text_size("description", &info.description, crate::tool::MAX_DESCRIPTION_BYTES)
        .map_err(|e| LoadError::MiddlewareInfo(label.into(), e))?;
    Ok(LoadedMiddleware {
        info: MiddlewareInfo { name: info.name, description: info.description, origin, wit_version, sha256 },
        pre,
    })
}

fn check_name(name: &str, label: &str) -> Result<(), LoadError> {
    if name.is_empty()
        || name.len() > 64
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        || name == EVERY_TOOL
    {
        return Err(LoadError::MiddlewareInfo(
            label.into(),
            format!("middleware name '{name}' must be 1-64 characters of A-Z, a-z, 0-9, _ or -"),
        ));
    }
    Ok(())
}

impl Toolhost {
    /// Loads a middleware component from a `.wasm` file. It runs for the
    /// tools it is then attached to ([`Toolhost::attach`]).
    pub async fn load_middleware(&self, path: &Path) -> Result<MiddlewareInfo> {
        let bytes = std::fs::read(path).with_context(|| format!("reading middleware {}", path.display()))?;
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let label = path.display().to_string();
        let loaded = load_middleware_component(self.runtime(), &bytes, Origin::File(abs), &label).await?;
        let info = loaded.info.clone();
        let name = info.name.clone();
        let registry = self.middleware_registry();
        Ok(self.insert_middleware(
            || registry.insert(Layer::Component(Arc::new(loaded)), info, &label),
            &name,
            &label,
        )?)
    }

    /// Registers a native Rust middleware under its [`NativeMiddleware::name`].
    pub fn register_middleware(&self, middleware: Arc<dyn NativeMiddleware>) -> Result<MiddlewareInfo> {
        let label = format!("native middleware {}", middleware.name());
        check_name(middleware.name(), &label)?;
        let info = MiddlewareInfo {
            name: middleware.name().to_string(),
            description: middleware.description().to_string(),
            origin: Origin::Native,
            wit_version: String::new(),
            sha256: String::new(),
        };
        let name = info.name.clone();
        let registry = self.middleware_registry();
        Ok(self.insert_middleware(|| registry.insert(Layer::Native(middleware), info, &label), &name, &label)?)
    }

    /// Attaches middleware to `tool` (or to every tool with `"*"`), after
    /// any already attached: the first attached is outermost. Every name
    /// must be loaded.
    pub fn attach<I, S>(&self, tool: &str, names: I) -> Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: Vec<String> = names.into_iter().map(|n| n.as_ref().to_string()).collect();
        {
            let layers = self.middleware_registry().layers.read().unwrap_or_else(|p| p.into_inner());
            for name in &names {
                if !layers.contains_key(name) {
                    let loaded: Vec<&str> = layers.keys().map(String::as_str).collect();
                    anyhow::bail!(
                        "cannot attach middleware '{name}' to '{tool}': no middleware of that name is loaded (loaded: {}); load it first (--middleware FILE, [middleware].files or Toolhost::load_middleware)",
                        if loaded.is_empty() { "none".to_string() } else { loaded.join(", ") }
                    );
                }
            }
        }
        if tool != EVERY_TOOL && !self.is_registered(tool) {
            tracing::warn!("middleware attached to '{tool}', which is not loaded (yet)");
        }
        self.middleware_registry()
            .attach
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(tool.to_string())
            .or_default()
            .extend(names);
        Ok(())
    }

    /// Detaches every middleware from `tool` (or from `"*"`).
    pub fn detach_all(&self, tool: &str) {
        self.middleware_registry().attach.write().unwrap_or_else(|p| p.into_inner()).remove(tool);
    }

    /// Every loaded middleware, sorted by name.
    pub fn middleware(&self) -> Vec<MiddlewareInfo> {
        self.middleware_registry()
            .layers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|(_, i)| i.clone())
            .collect()
    }

    /// The names of the middleware that wrap `tool`'s calls, outermost first.
    pub fn middleware_for(&self, tool: &str) -> Vec<String> {
        self.middleware_registry().names_for(tool)
    }

    /// The grants of a middleware component: exactly what `[grants.NAME]`
    /// (or `--grant NAME=...`) gives it, nothing by default.
    pub fn middleware_grants(&self, name: &str) -> Grants {
        let policy = self.settings().grants.get(name).cloned().unwrap_or_default();
        let declared = Declared {
            fs_read: policy.fs_read.clone(),
            fs_write: policy.fs_write.clone(),
            process_exec: policy.process_exec,
            network: false,
            state: policy.state,
        };
        Grants::intersect(name, &declared, &policy, self.working_dirs(), &[], false)
    }

    /// Loads `[middleware].files` and applies `[middleware.attach]`.
    pub(crate) async fn load_configured_middleware(&self) -> Result<()> {
        let config = self.settings().middleware.clone();
        for file in &config.files {
            self.load_middleware(file).await?;
        }
        for (tool, names) in &config.attach {
            self.attach(tool, names).with_context(|| format!("[middleware.attach] {tool}"))?;
        }
        Ok(())
    }
}
