//! One call's chain: the middleware layers attached to the tool, outermost
//! first, the tool's `call` innermost. Each `next.run` is validated, decided
//! again when the input changed, and run as its own task; failures are
//! blamed on the layer responsible ([`super::failure`]).

use crate::sync::MutexExt;
use crate::telemetry::trace;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt as _;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::failure::{CallFailure, LayerFailure, LayerResult, MiddlewareFault};
use super::loader::LoadedMiddleware;
use super::native::{MiddlewareOutput, NativeMiddleware, Next};
use super::registry::Layer;
use crate::capability::Phase;
use crate::execution::callable::CallableTool;
use crate::execution::function::panic_text;
use crate::execution::host::{ExecutionHost, Permit, Verdict};
use crate::execution::instance::with_deadline;
use crate::execution::loaded::{LoadedTool, validate_input};
use crate::response::Chunk;
use crate::runtime::failure::GuestFailure;
use crate::runtime::imports::chain::{ChainRunner, InnerOutcome, NextHandler};
use crate::runtime::store::{CallSetup, Deadline, OutputSink, new_store};
use crate::runtime::{CallState, Limits};
use crate::state::AgentState;
use crate::types::{self, ToolError};

/// Room a middleware's output cap leaves above the call's cap, so that a
/// middleware forwarding a tool's output that was already cut (content up
/// to the cap plus the truncation note) is not itself blamed for flooding.
const FORWARDING_SLACK: u64 = 4096;

/// Runs of inner layers one call may have in flight beyond one per layer
/// (each `next.run` holds an instance until it ends): room for a retry
/// started before an earlier run has quite finished, not for a middleware
/// that starts hundreds of runs and takes the instance pool every call
/// shares.
const SPARE_RUNS_IN_FLIGHT: usize = 2;

/// How long a call waits for the inner runs it aborted to be dropped (an
/// aborted task is only dropped when next polled, which is prompt unless
/// the runtime is starved).
const ABORTED_RUNS_DROP_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// One call's chain: the layers, the tool, and what went wrong where.
struct Chain {
    host: Arc<dyn ExecutionHost>,
    tool: Arc<LoadedTool>,
    layers: Vec<Layer>,
    session: Arc<AgentState>,
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
    /// How many of `tasks` have not ended yet.
    in_flight: Arc<AtomicUsize>,
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
pub(crate) struct Link {
    chain: Arc<Chain>,
    position: usize,
    pub(super) waiting: Arc<AtomicBool>,
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

/// Runs one call through `layers` (the middleware attached to its tool,
/// outermost first), the tool's `call` innermost; `instance` is the tool's
/// call instance (made after the decision, with the grants of `phase`),
/// `input` the allowed input (as a value and as text), `permit` how to
/// decide a rewritten input, and `output` where the outermost layer's
/// chunks go. Without middleware this is exactly `instance.call(input)`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_chain(
    host: Arc<dyn ExecutionHost>,
    layers: Vec<Layer>,
    tool: Arc<LoadedTool>,
    mut instance: CallableTool,
    input: serde_json::Value,
    input_text: String,
    session: Arc<AgentState>,
    limits: Limits,
    permit: Permit,
    output: mpsc::Sender<Chunk>,
    phase: Phase,
) -> Result<InnerOutcome, CallFailure> {
    if layers.is_empty() {
        drop(output);
        let mut span = trace::child(|| "call");
        let result = trace::inside(&span, instance.call(&input_text)).await;
        if let (Some(span), Err(_)) = (&mut span, &result) {
            span.fail("the tool failed");
        }
        return Ok(result?);
    }
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
        in_flight: Arc::new(AtomicUsize::new(0)),
        permit,
        allowed: Mutex::new(vec![(input, phase)]),
    });
    let result = chain.run_layer(0, input_text, output, phase).await;
    let outcome = chain.settle(result).await;
    chain.first.lock_unpoisoned().take();
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
        let slot = self.run_slot(position)?;
        let phase = self.recheck(position, value, &input).await?;
        let (tx, rx) = oneshot::channel();
        let chain = self.clone();
        let trace_scope = trace::current();
        let task = tokio::spawn(trace::within(trace_scope, async move {
            let outcome = match chain.run_layer(position, input, output, phase).await {
                Ok(outcome) => outcome,
                Err(failure) => {
                    let error = failure.failure.as_tool_error();
                    chain.failures.lock_unpoisoned().push((position, failure));
                    Err(error)
                }
            };
            // The run has ended (its instances are gone) before the
            // middleware hears of it, so it may start the next at once.
            drop(slot);
            let _ = tx.send(outcome);
        }));
        self.tasks.lock_unpoisoned().push(task);
        Ok(rx)
    }

    /// Takes one of the runs this call may have in flight (one per layer
    /// plus [`SPARE_RUNS_IN_FLIGHT`]), for a run started by the middleware
    /// before `position`; given back when the run ends or is stopped.
    fn run_slot(&self, position: usize) -> Result<RunSlot, ToolError> {
        let limit = self.layers.len() + SPARE_RUNS_IN_FLIGHT;
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= limit {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            let middleware = self.layers.get(position.wrapping_sub(1)).map(Layer::name).unwrap_or_default();
            return Err(ToolError::Unsupported(format!(
                "middleware '{middleware}' started another run of the inner layers of '{}' while {limit} were \
                 still running, the most one call may have (each holds an instance); read each run to its end \
                 before starting the next",
                self.tool.info.name
            )));
        }
        Ok(RunSlot(self.in_flight.clone()))
    }

    /// Runs the permission engine again for an input the middleware at
    /// `position - 1` passed on, unless the call already allowed exactly
    /// that value (compared as JSON values, not text). The decision runs on
    /// an instance of its own; an ask goes to the caller like the first
    /// one, and the time spent waiting for the answer is added to the
    /// call's deadline. Returns the phase the tool's `call` gets for this
    /// input (read-only grants when its read-only claim allowed it).
    async fn recheck(&self, position: usize, value: serde_json::Value, text: &str) -> Result<Phase, ToolError> {
        if let Some((_, phase)) = self.allowed.lock_unpoisoned().iter().find(|(allowed, _)| *allowed == value) {
            return Ok(*phase);
        }
        let middleware = self.layers.get(position.wrapping_sub(1)).map(Layer::name).unwrap_or_default();
        let tool = &self.tool.info.name;
        let (parked, _) = mpsc::channel(1);
        let mut instance = self.host.instantiate(&self.tool, None, parked, Phase::Decide).await.map_err(|e| {
            ToolError::Internal(format!("could not start tool '{tool}' to check the rewritten input: {e:#}"))
        })?;
        let started = std::time::Instant::now();
        let verdict = self.host.decide(&mut instance, &self.permit, &value, text).await;
        self.deadline.postpone(started.elapsed());
        match verdict {
            Verdict::Allow(phase) => {
                self.allowed.lock_unpoisoned().push((value, phase));
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
            let mut span = trace::child(|| "call");
            let result = trace::inside(&span, self.run_tool(input, output, phase)).await;
            failed(&mut span, &result);
            return result;
        };
        let waiting = Arc::new(AtomicBool::new(false));
        let link = Arc::new(Link { chain: self.clone(), position: position + 1, waiting: waiting.clone() });
        let mut span = trace::child(|| format!("middleware {}", layer.name()));
        let run = async {
            match layer {
                Layer::Component(mw) => self.run_component(mw, link, input, output, self.middleware_phase(phase)).await,
                Layer::Native(mw) => self.run_native(mw.as_ref(), link, input, output).await,
            }
        };
        let result = trace::inside(&span, run).await;
        failed(&mut span, &result);
        result
    }

    async fn run_tool(&self, input: String, output: mpsc::Sender<Chunk>, phase: Phase) -> LayerResult {
        let first = if phase == self.phase { self.first.lock_unpoisoned().take() } else { None };
        let mut instance = match first {
            Some(instance) => instance,
            None => match self.host.instantiate(&self.tool, Some(self.session.clone()), output.clone(), phase).await {
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
            grants: self.host.middleware_grants(name, phase),
            backend: self.host.backend(),
            agent_state: Some(self.session.clone()),
            limits,
            deadline: self.deadline.clone(),
            output,
            tool_config: Some(self.host.middleware_config(name)),
        });
        let waiting = link.waiting.clone();
        state.chain = Some(link.clone());
        let mut store = new_store(self.host.runtime(), state);
        let instance = match mw.pre.instantiate(&mut store).await {
            Ok(i) => i,
            Err(e) => return Err(self.fault(name, MiddlewareFault::Instantiate(format!("{e:#}")), false)),
        };
        let handler = match store.data_mut().table.push(NextHandler { runner: link, waiting: waiting.clone() }) {
            Ok(h) => h,
            Err(e) => return Err(self.fault(name, MiddlewareFault::Instantiate(format!("{e}")), false)),
        };
        let metadata = types::ToolMetadata::from(&self.tool.info);
        let result = with_deadline(&self.deadline, instance.on_tool_call(&mut store, metadata, &input, handler)).await;
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
                let message = panic_text(&*panic);
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
    /// actually responsible: a failed middleware fails the call even if an
    /// outer one carried on; an outer layer that failed while waiting for
    /// its inner layers passes the blame inward; and when time ran out,
    /// the blame goes to the innermost layer that was running (not
    /// waiting) when it did, even if an outer layer was interrupted after
    /// it, in the moment it took to read the inner layer's failure.
    ///
    /// In those two cases every inner layer's own end is waited for (their
    /// join handles, and those of the layers they started meanwhile) before
    /// the blame is assigned, however long the machine takes to run them:
    /// the blame never depends on which task a loaded machine happened to
    /// schedule first. This ends because every inner layer runs under the
    /// call's deadline (guest code is interrupted by the epoch callback,
    /// host waits by `with_deadline`).
    async fn settle(&self, result: LayerResult) -> Result<InnerOutcome, CallFailure> {
        let join = matches!(&result, Err(f) if f.waiting || f.failure.is_timeout());
        loop {
            let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *self.tasks.lock_unpoisoned());
            if tasks.is_empty() {
                break;
            }
            if join {
                futures::future::join_all(tasks).await;
            } else {
                tasks.iter().for_each(JoinHandle::abort);
                // An aborted task is dropped, and its instances and
                // processes with it, only at its next poll: the call ends
                // after its inner layers.
                let _ = tokio::time::timeout(ABORTED_RUNS_DROP_WITHIN, futures::future::join_all(tasks)).await;
                break;
            }
        }
        let failures = std::mem::take(&mut *self.failures.lock_unpoisoned());
        let outer = match result {
            Ok(outcome) => {
                return match failures.into_iter().find(|(_, f)| matches!(f.failure, CallFailure::Middleware { .. })) {
                    Some((_, f)) => Err(f.failure),
                    None => Ok(outcome),
                };
            }
            Err(outer) => outer,
        };
        let running = failures.into_iter().filter(|(_, inner)| !inner.waiting);
        let deepest = if outer.waiting {
            running.max_by_key(|(position, _)| *position)
        } else if outer.failure.is_timeout() {
            running.filter(|(_, inner)| inner.failure.is_timeout()).max_by_key(|(position, _)| *position)
        } else {
            None
        };
        Err(deepest.map(|(_, inner)| inner.failure).unwrap_or(outer.failure))
    }
}

/// One run of inner layers in flight, counted in its chain until dropped
/// (also when the run's task is aborted).
struct RunSlot(Arc<AtomicUsize>);

impl Drop for RunSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
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

/// Marks a step's span failed when its layer failed: with a fixed text,
/// since a guest's failure message may repeat its input.
fn failed(span: &mut Option<trace::Child>, result: &LayerResult) {
    if let (Some(span), Err(failure)) = (span, result) {
        span.fail(match failure.failure {
            CallFailure::Tool(_) => "the tool failed",
            _ => "a middleware failed",
        });
    }
}
