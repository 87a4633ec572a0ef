//! The façade's side of the audit log ([`crate::audit`]): a call of a host
//! with an audit log runs inside a [`CallAudit`] scope, its instances get a
//! [`RecordingBackend`], and its record is queued when it ends.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use super::{CallRequest, Toolhost};
use crate::audit::{self, AuditLog, CallAudit, Record, RecordingBackend};
use crate::backend::Backend;
use crate::events::CallEvent;
use crate::permission::Behavior;
use crate::response::{ContentBlock, ResultState, ToolResponse};

impl Toolhost {
    /// The audit log of `[audit]`, when one is configured.
    pub fn audit_log(&self) -> Option<Arc<AuditLog>> {
        self.inner.audit.clone()
    }

    /// The backend for an instance of the current call: the host's own, or,
    /// inside an audited call, one that records every operation in it.
    pub(crate) fn call_backend(&self) -> Arc<dyn Backend> {
        let backend = Toolhost::backend(self);
        match audit::current() {
            Some(call) => Arc::new(RecordingBackend::new(backend, call)),
            None => backend,
        }
    }

    /// [`Toolhost::run_call`] with its record sent to `log`.
    pub(super) async fn run_audited(
        &self,
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
        let mode = request.mode.unwrap_or(self.mode());
        let session = request.session.as_ref().and_then(|s| s.file()).map(|p| p.display().to_string());
        let caller = request.caller.clone();
        let response = audit::scope(call.clone(), self.run_call(request, events)).await;
        let duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let gathered = call.take();
        let (outcome, output_bytes) = match &response {
            Some(r) => (state_name(r.state).to_owned(), output_bytes(r)),
            None => {
                let allowed = gathered.decision.as_ref().is_some_and(|d| d.behavior == Behavior::Allow)
                    || gathered.answer.as_deref().is_some_and(|a| a != "deny");
                ((if allowed { "external" } else { "gone" }).to_owned(), 0)
            }
        };
        let record = Record {
            kind: "call".into(),
            time: String::new(),
            call_id,
            session,
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

fn state_name(state: ResultState) -> &'static str {
    match state {
        ResultState::Running | ResultState::Success => "success",
        ResultState::Error => "error",
        ResultState::Interrupted => "interrupted",
        ResultState::Denied => "denied",
    }
}

fn output_bytes(response: &ToolResponse) -> u64 {
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
