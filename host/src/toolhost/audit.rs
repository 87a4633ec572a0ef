//! The façade's side of the audit log ([`crate::audit`]): a call of a host
//! with an audit log runs inside a [`CallAudit`] scope, its instances get a
//! [`RecordingBackend`], and its record is queued when it ends.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use super::CallRequest;
use super::pipeline::Pipeline;
use crate::audit::{self, AuditLog, CallAudit, Record, RecordingBackend};
use crate::backend::Backend;
use crate::events::CallEvent;
use crate::permission::Behavior;
use crate::response::{ContentBlock, ResultState, ToolResponse};

impl Pipeline {
    /// The audit log of `[audit]`, when one is configured.
    pub fn audit_log(&self) -> Option<Arc<AuditLog>> {
        self.audit.clone()
    }

    /// The backend for an instance of the current call: the host's own, or,
    /// inside an audited or traced call, one that records every operation
    /// in it.
    pub(crate) fn call_backend(&self) -> Arc<dyn Backend> {
        let backend = self.backend();
        match (audit::current(), crate::telemetry::trace::tracing()) {
            (None, false) => backend,
            (call, _) => Arc::new(RecordingBackend::new(backend, call)),
        }
    }

    /// [`Pipeline::run_call`] with its record sent to `log`.
    pub(super) async fn run_audited(
        self: &Arc<Self>,
        log: Arc<AuditLog>,
        request: CallRequest,
        events: &mpsc::Sender<CallEvent>,
    ) -> Option<ToolResponse> {
        let time = SystemTime::now();
        let started = Instant::now();
        let call = Arc::new(CallAudit::default());
        let call_id = request.id.clone();
        let tool = request.tool.clone();
        let raw_input = request.input.clone();
        let mode = request.mode.unwrap_or(self.permissions.mode());
        let session = request.session.as_ref().and_then(|s| s.location());
        let caller = request.caller.clone();
        let response = audit::scope(call.clone(), self.run_call(request, events)).await;
        let duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let gathered = call.take();
        let allowed = gathered.decision.as_ref().is_some_and(|d| d.behavior == Behavior::Allow)
            || gathered.answer.as_deref().is_some_and(|a| a != "deny");
        let outcome = outcome(response.as_ref(), allowed).to_owned();
        let output_bytes = response.as_ref().map_or(0, output_bytes);
        let record = Record {
            kind: "call".into(),
            time: String::new(),
            call_id,
            session,
            replica: self.replica.clone(),
            caller,
            tool,
            plugin_sha256: gathered.plugin_sha256,
            mode,
            input: serde_json::Value::Null,
            decision: gathered.decision,
            redecisions: gathered.redecisions,
            answer: gathered.answer,
            ops: gathered.ops,
            ops_dropped: gathered.ops_dropped,
            outcome,
            duration_us,
            output_bytes,
        };
        log.submit(record, raw_input, time);
        response
    }
}

/// How a call ended, as the audit log and the metrics name it: its result
/// state, or, when it stopped without a response, `external` (handed to an
/// external executor once `allowed`) or `gone` (the caller left).
pub(super) fn outcome(response: Option<&ToolResponse>, allowed: bool) -> &'static str {
    match response {
        Some(r) => state_name(r.state),
        None if allowed => "external",
        None => "gone",
    }
}

fn state_name(state: ResultState) -> &'static str {
    match state {
        ResultState::Running | ResultState::Success => "success",
        ResultState::Error => "error",
        ResultState::Interrupted => "interrupted",
        ResultState::Denied => "denied",
    }
}

pub(super) fn output_bytes(response: &ToolResponse) -> u64 {
    let bytes: usize = response
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            other => other.weight(),
        })
        .sum();
    bytes as u64
}
