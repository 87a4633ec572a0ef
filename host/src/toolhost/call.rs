//! The call pipeline of the façade: lookup → parse → validate → decide (in
//! an instance with no capability) → ask → (external tools stop here) → a
//! fresh call instance with the grants → the middleware chain
//! ([`crate::execution::middleware::chain`]) around `call` → chunks streamed
//! and accumulated into the response.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};
use futures::future::BoxFuture;
use opentelemetry::KeyValue;
use tokio::sync::{mpsc, oneshot};

use super::pipeline::Pipeline;
use super::{CallRequest, ExternalResult, ExternalResultError, InstanceError};
use crate::backend::Backend;
use crate::capability::Grants;
use crate::capability::Phase;
use crate::catalog::tool::LookupError;
use crate::events::{CallEvent, CallStream, ExternalCall, PermissionAnswer, PermissionRequest};
use crate::execution::callable::CallableTool;
use crate::execution::host::ExecutionHost;
use crate::execution::host::{Permit, Verdict};
use crate::execution::loaded::{LoadedTool, validate_input};
use crate::execution::middleware::failure::CallFailure;
use crate::permission::{self, Behavior, Decision, PolicyTool as _, RuleSet};
use crate::response::{Chunk, ResultState, ToolResponse};
use crate::runtime::Runtime;
use crate::runtime::store::{CallSetup, Deadline};
use crate::state::AgentState;
use crate::telemetry::trace;
use crate::types::ToolError;

impl Pipeline {
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
        let limits = self.settings.limits;
        let agent_state = match phase {
            Phase::Decide => None,
            Phase::ReadOnlyCall | Phase::Call => Some(self.states.for_call(session)),
        };
        let setup = CallSetup {
            tool: Arc::from(loaded.info.name.as_str()),
            grants: self.permissions.phase_grants(loaded, phase),
            backend: self.call_backend(),
            agent_state,
            limits,
            deadline: Deadline::for_limits(&limits),
            output,
            // The decision exports get the settings in their context; only
            // `call` reads them from the environment.
            tool_config: (phase != Phase::Decide).then(|| self.permissions.tool_config(&loaded.info.name).to_string()),
        };
        loaded
            .kind
            .instantiate(self.catalog.runtime(), setup)
            .await
            .with_context(|| format!("starting tool '{}'", loaded.info.name))
    }

    /// A fresh instance of `tool` (loading the tool on first use) with its
    /// full grants, for running `call` once a decision allowed it. For
    /// permission checks use [`Pipeline::decision_instance`].
    pub async fn instantiate(
        &self,
        tool: &str,
        session: Option<Arc<AgentState>>,
        output: mpsc::Sender<Chunk>,
    ) -> Result<CallableTool, InstanceError> {
        let loaded = self.catalog.tool(tool).await?;
        let instance = self.instantiate_loaded(&loaded, session, output, Phase::Call).await;
        instance.map_err(|e| InstanceError::start(tool, e))
    }

    /// A fresh instance of `tool` with no capability at all (no files, no
    /// processes, no agent state, output discarded), for the permission
    /// exports. It may be reused for many checks.
    pub async fn decision_instance(&self, tool: &str) -> Result<CallableTool, InstanceError> {
        let loaded = self.catalog.tool(tool).await?;
        let (tx, _rx) = mpsc::channel(1);
        let instance = self.instantiate_loaded(&loaded, None, tx, Phase::Decide).await;
        instance.map_err(|e| InstanceError::start(tool, e))
    }

    /// Evaluates the permission engine for one call without running it:
    /// the input is validated against the tool's schema first, then
    /// decided in a decision instance with `ctx` and `rules`.
    pub async fn check(
        &self,
        tool: &str,
        input: &serde_json::Value,
        ctx: &permission::Context,
        rules: &RuleSet,
    ) -> Result<Decision, InstanceError> {
        let loaded = self.catalog.tool(tool).await?;
        validate_input(&loaded, input).map_err(InstanceError::InvalidInput)?;
        let (tx, _rx) = mpsc::channel(1);
        let mut instance = self
            .instantiate_loaded(&loaded, None, tx, Phase::Decide)
            .await
            .map_err(|e| InstanceError::start(tool, e))?;
        Ok(permission::evaluate(&mut instance, &input.to_string(), ctx, rules).await)
    }

    /// Starts a call and returns its event stream.
    ///
    /// The call starts when the stream is first polled ([`CallStream::next`]
    /// runs it as a task; [`CallStream::finish`] runs it in the caller's
    /// task, which saves a thread hop per event).
    pub fn call(self: &Arc<Self>, request: CallRequest) -> CallStream {
        let (tx, rx) = mpsc::channel(64);
        let host = self.clone();
        let run = async move {
            let id = request.id.clone();
            let response = match host.telemetry.clone() {
                Some(telemetry) => host.run_observed(telemetry, request, &tx).await,
                None => host.run_logged(request, &tx).await,
            };
            if let Some(mut response) = response {
                response.id = id;
                let _ = tx.send(CallEvent::Finished(response)).await;
            }
        };
        CallStream { rx, pending: Some(Box::pin(run)), running: None }
    }

    /// Runs one call end to end; `None` when it stopped for external execution.
    pub(super) async fn run_call(
        self: &Arc<Self>,
        request: CallRequest,
        events: &mpsc::Sender<CallEvent>,
    ) -> Option<ToolResponse> {
        // Refusals before any guest code runs still stream as a chunk, so a
        // caller that only prints chunks shows them.
        let fail = async |text: String| {
            let chunk = Chunk::text(text, ResultState::Error);
            let _ = events.send(CallEvent::Chunk(chunk.clone())).await;
            Some(ToolResponse::from_chunk(&request.id, chunk))
        };
        // A tool of an inactive group is neither offered nor called (and
        // not loaded to refuse it).
        match self.catalog.inactive_refusal(&request.tool, self.states.of(request.session.as_deref())).await {
            Ok(None) => {}
            Ok(Some(refusal)) => return fail(refusal).await,
            Err(e) => return fail(e.to_string()).await,
        }
        let loaded = match self.catalog.tool(&request.tool).await {
            Ok(loaded) => loaded,
            Err(LookupError::Unknown(_)) => {
                let failed = self.failed_loads_text();
                return fail(format!("ToolNotFoundError: {}{failed}", unknown_tool(&request.tool))).await;
            }
            Err(e @ LookupError::StillLoading { .. }) => return fail(format!("ToolNotFoundError: {e}")).await,
            Err(LookupError::Load(e)) => return fail(format!("could not load tool '{}': {e}", request.tool)).await,
        };
        crate::audit::note(|a| a.tool(&loaded.info.sha256));
        trace::note(|t| {
            if t.recording() {
                t.note(|n| n.sha256 = Some(loaded.info.sha256.clone()));
            }
        });
        let input: serde_json::Value = match serde_json::from_str(&request.input) {
            Ok(v) => v,
            Err(e) => return fail(format!("Input for tool '{}' is not valid JSON: {e}", request.tool)).await,
        };
        if let Err(message) = validate_input(&loaded, &input) {
            return fail(message).await;
        }
        let input_text = input.to_string();
        // Instances come from a bounded pool: past RUNNING_CALLS calls wait
        // here (at most the call's timeout) rather than fail to instantiate.
        let wait = std::time::Duration::from_millis(self.settings.limits.timeout_ms);
        let mut running = match self.running_permit(wait).await {
            Ok(permit) => Some(permit),
            Err(e) => return fail(format!("Error: {e:#}")).await,
        };
        // The decision runs in an instance with no capability; what it
        // emits goes nowhere.
        let (discard, _) = mpsc::channel::<Chunk>(1);
        let deciding = Instant::now();
        let mut span = trace::child(|| "decide");
        let mut decider =
            match trace::inside(&span, self.instantiate_loaded(&loaded, None, discard, Phase::Decide)).await {
                Ok(i) => i,
                Err(e) => return fail(format!("could not start tool '{}': {e:#}", request.tool)).await,
            };

        let mode = request.mode.unwrap_or(self.permissions.mode());
        let permit = Permit { call_id: request.id.clone(), mode, events: events.clone() };
        let decision = trace::inside(&span, self.permissions.evaluate(&mut decider, mode, &input_text)).await;
        drop(decider);
        if let Some(span) = &mut span {
            span.set(KeyValue::new("toolhost.decision.behavior", decision.behavior.as_str()));
            span.set(KeyValue::new("toolhost.decision.step", decision.source.as_str()));
        }
        drop(span);
        let decided = deciding.elapsed();
        trace::note(|t| t.note(|n| n.decision_time = Some(decided)));
        // Waiting for a person holds nothing: the slot goes back while the
        // ask is open (unanswered asks must not stall every other call),
        // and a new one is taken once it is allowed. The grants stay those
        // the decision gave; the call's instance is made only after.
        let asks = matches!(decision.behavior, Behavior::Ask | Behavior::Passthrough);
        if asks {
            running = None;
        }
        let verdict = self.answer(decision, &loaded.info.name, &permit, &input).await;
        if asks && matches!(verdict, Verdict::Allow(_)) && !loaded.info.external {
            running = match self.running_permit(wait).await {
                Ok(permit) => Some(permit),
                Err(e) => return fail(format!("Error: {e:#}")).await,
            };
        }
        let phase = match verdict {
            Verdict::Allow(phase) => phase,
            Verdict::Deny(decision) => return Some(denied(&request.id, decision.message)),
            Verdict::UserDenied(_) => {
                let text = format!(
                    "<system-reminder>The execution of tool \"{}\" is denied by user!</system-reminder>",
                    request.tool
                );
                return Some(denied(&request.id, text));
            }
            Verdict::Gone => return None,
        };

        if loaded.info.external {
            let call = ExternalCall {
                kind: "REQUIRE_EXTERNAL_EXECUTION".into(),
                call_id: request.id.clone(),
                tool: request.tool.clone(),
                input,
                result_metadata_schema: loaded.info.result_metadata_schema.clone(),
            };
            let _ = events.send(CallEvent::ExternalExecution(call)).await;
            return None;
        }

        debug_assert!(running.is_some(), "a call makes instances only while it holds a running slot");
        // `call` gets the grants, in a fresh instance: read-only ones when
        // the tool's own read-only claim is what allowed the call.
        let (out_tx, mut out_rx) = mpsc::channel::<Chunk>(32);
        let instance = match self.instantiate_loaded(&loaded, request.session.clone(), out_tx.clone(), phase).await {
            Ok(i) => i,
            Err(e) => return fail(format!("could not start tool '{}': {e:#}", request.tool)).await,
        };
        // The middleware chain attached to the tool (if any) wraps `call`.
        let chain = async {
            let layers = self.catalog.middleware_registry().chain_for(&loaded.info.name)?;
            crate::execution::middleware::chain::run_chain(
                self.clone(),
                layers,
                loaded.clone(),
                instance,
                input,
                input_text,
                self.states.for_call(request.session.clone()),
                self.settings.limits,
                permit,
                out_tx,
                phase,
            )
            .await
        };
        let mut response = ToolResponse::new(&request.id);
        let forward = async {
            while let Some(chunk) = out_rx.recv().await {
                response.append(chunk.clone());
                let _ = events.send(CallEvent::Chunk(chunk)).await;
            }
        };
        // Guest and forwarding share this task: a chunk reaches the caller
        // without a hop through another worker thread. The channel closes
        // when the chain drops its instances.
        let calling = Instant::now();
        let (outcome, ()) = tokio::join!(chain, forward);
        drop(running);
        let called = calling.elapsed();
        trace::note(|t| t.note(|n| n.call_time = Some(called)));
        let closing = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(tool_error)) => Some(tool_error_text(&tool_error)),
            Err(CallFailure::Tool(failure)) => {
                Some(format!("Error: tool '{}' failed in `call`: {failure}", request.tool))
            }
            Err(failure) => Some(format!("Error: {failure}")),
        };
        if let Some(text) = closing {
            let chunk = Chunk::text(text, ResultState::Error);
            response.append(chunk.clone());
            let _ = events.send(CallEvent::Chunk(chunk)).await;
        }
        Some(response)
    }

    /// The permission step of a call: runs the whole engine for `input`
    /// on `instance` ([`Permissions::evaluate`](super::permissions::Permissions::evaluate)) and turns the decision into a
    /// verdict, asking the caller when it says ask ([`Pipeline::answer`]).
    /// A middleware's rewritten input is decided here; the first decision of
    /// a call takes the two steps apart, to hold nothing while it asks.
    pub(crate) async fn decide(
        &self,
        instance: &mut CallableTool,
        permit: &Permit,
        input: &serde_json::Value,
        input_text: &str,
    ) -> Verdict {
        let tool = instance.name().to_owned();
        let decision = self.permissions.evaluate(instance, permit.mode, input_text).await;
        self.answer(decision, &tool, permit, input).await
    }

    /// The verdict of `decision` on a call of `tool` with `input`: an ask
    /// goes to the caller as a [`CallEvent::PermissionRequest`] (an
    /// unanswered or dropped request is a denial) and its answer decides.
    async fn answer(&self, decision: Decision, tool: &str, permit: &Permit, input: &serde_json::Value) -> Verdict {
        // A call allowed because the tool said it only reads runs with
        // read-only grants: the claim is not believed any further.
        let phase = if decision.read_only { Phase::ReadOnlyCall } else { Phase::Call };
        match decision.behavior {
            Behavior::Allow => Verdict::Allow(phase),
            Behavior::Deny => Verdict::Deny(Box::new(decision)),
            Behavior::Ask | Behavior::Passthrough => {
                let (reply, answer) = oneshot::channel();
                let asked = decision.message.clone();
                let prompt = PermissionRequest {
                    call_id: permit.call_id.clone(),
                    tool: tool.to_string(),
                    input: input.clone(),
                    decision,
                    reply,
                };
                if permit.events.send(CallEvent::PermissionRequest(prompt)).await.is_err() {
                    return Verdict::Gone;
                }
                let pending = self.telemetry.as_ref().map(|t| t.metrics().asks_pending.clone());
                if let Some(gauge) = &pending {
                    gauge.inc();
                }
                let answer = answer.await.unwrap_or(PermissionAnswer::Deny);
                if let Some(gauge) = &pending {
                    gauge.dec();
                }
                crate::audit::note(|a| a.answer(answer.as_str()));
                trace::note(|t| t.note(|n| n.answer = Some(answer.as_str())));
                match answer {
                    PermissionAnswer::AllowOnce => Verdict::Allow(phase),
                    PermissionAnswer::AllowAndRemember(rules) => {
                        for rule in rules {
                            if let Err(e) = self.permissions.remember(rule.clone()).await {
                                let failed = CallEvent::RememberFailed { rule, message: format!("{e:#}") };
                                let _ = permit.events.send(failed).await;
                            }
                        }
                        Verdict::Allow(phase)
                    }
                    PermissionAnswer::Deny => Verdict::UserDenied(asked),
                }
            }
        }
    }

    /// Turns the result an external executor reports into the call's
    /// response, validating its metadata against the tool's schema.
    pub fn complete_external(
        &self,
        call: &ExternalCall,
        result: ExternalResult,
    ) -> Result<ToolResponse, ExternalResultError> {
        if let Some(schema) = &call.result_metadata_schema {
            let validator =
                jsonschema::validator_for(schema).map_err(|e| ExternalResultError::InvalidSchema(e.to_string()))?;
            let metadata = serde_json::Value::Object(result.metadata.clone());
            if let Some(e) = validator.iter_errors(&metadata).next() {
                return Err(ExternalResultError::MetadataMismatch {
                    tool: call.tool.clone(),
                    at: e.instance_path().to_string(),
                    why: e.to_string(),
                });
            }
        }
        let mut chunk = Chunk::text(result.output, result.state.unwrap_or(ResultState::Success));
        chunk.metadata = result.metadata;
        Ok(ToolResponse::from_chunk(call.call_id.clone(), chunk))
    }
}

impl Pipeline {
    /// For an unknown name: the plugin files that failed to load in the
    /// background (one may have been meant), or nothing.
    fn failed_loads_text(&self) -> String {
        let failed = self.catalog.failed_loads();
        if failed.is_empty() {
            return String::new();
        }
        let files: Vec<String> = failed.iter().map(|f| f.file.display().to_string()).collect();
        format!(" These plugin files failed to load, so their tools are missing: {}.", files.join(", "))
    }
}

fn unknown_tool(name: &str) -> String {
    LookupError::Unknown(name.to_string()).to_string()
}

fn denied(id: &str, message: String) -> ToolResponse {
    ToolResponse::from_chunk(id, Chunk::text(message, ResultState::Denied))
}

/// The text of a typed tool error, for the model.
pub fn tool_error_text(e: &ToolError) -> String {
    match e {
        ToolError::InvalidInput(m) => format!("Error: invalid input: {m}"),
        ToolError::Denied(m) => format!("Error: {m}"),
        ToolError::NotFound(m) => format!("Error: not found: {m}"),
        ToolError::Timeout(m) => format!("Error: timed out: {m}"),
        ToolError::Io(m) => format!("Error: {m}"),
        ToolError::Unsupported(m) => format!("Error: unsupported: {m}"),
        ToolError::Internal(m) => format!("Error: internal error in the tool: {m}"),
    }
}

impl ExecutionHost for Pipeline {
    fn runtime(&self) -> &Runtime {
        self.catalog.runtime()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        self.call_backend()
    }

    fn middleware_grants(&self, name: &str, phase: Phase) -> Arc<Grants> {
        self.permissions.middleware_phase_grants(name, phase)
    }

    fn middleware_config(&self, name: &str) -> String {
        Pipeline::middleware_config(self, name)
    }

    fn instantiate<'a>(
        &'a self,
        tool: &'a LoadedTool,
        session: Option<Arc<AgentState>>,
        output: mpsc::Sender<Chunk>,
        phase: Phase,
    ) -> BoxFuture<'a, Result<CallableTool>> {
        Box::pin(self.instantiate_loaded(tool, session, output, phase))
    }

    fn decide<'a>(
        &'a self,
        instance: &'a mut CallableTool,
        permit: &'a Permit,
        input: &'a serde_json::Value,
        input_text: &'a str,
    ) -> BoxFuture<'a, Verdict> {
        Box::pin(Pipeline::decide(self, instance, permit, input, input_text))
    }
}
