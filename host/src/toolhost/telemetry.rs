//! The façade's side of telemetry ([`crate::telemetry`]): a call of a host
//! with telemetry runs inside a [`CallTrace`] scope; when it ends its span
//! gets the decision and the outcome, and the metrics count it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use tokio::sync::mpsc;

use super::CallRequest;
use super::audit::{outcome, output_bytes};
use super::pipeline::Pipeline;
use crate::events::CallEvent;
use crate::permission::Behavior;
use crate::response::{ContentBlock, ToolResponse};
use crate::telemetry::metrics::Phase;
use crate::telemetry::trace::{self, CallTrace, Notes};
use crate::telemetry::{Metrics, Telemetry, UNKNOWN_TOOL};

impl Pipeline {
    /// Traces and metrics, when the settings or the builder turned either
    /// on ([`super::ToolhostBuilder::metrics`]).
    pub fn telemetry(&self) -> Option<&Arc<Telemetry>> {
        self.telemetry.as_ref()
    }

    /// The Prometheus text of the host's metrics, the gauges and counts
    /// kept elsewhere (slots in use, the audit writer's, the compile
    /// cache's) read now; `None` when the host keeps no metrics.
    pub fn metrics_text(&self) -> Option<String> {
        let metrics = self.telemetry()?.metrics();
        let in_use = self.running_calls();
        metrics.instances_in_use.set(in_use as i64);
        if let Some(log) = self.audit_log() {
            let stats = log.stats();
            Metrics::catch_up(&metrics.audit_written, stats.written);
            Metrics::catch_up(&metrics.audit_dropped, stats.dropped);
        }
        Metrics::catch_up(&metrics.compile_cache_hits, self.catalog.runtime().cache_hits());
        Some(metrics.render())
    }

    /// [`Pipeline::run_call`], audited when the host keeps an audit log.
    pub(super) async fn run_logged(
        self: &Arc<Self>,
        request: CallRequest,
        events: &mpsc::Sender<CallEvent>,
    ) -> Option<ToolResponse> {
        match self.audit_log() {
            Some(log) => self.run_audited(log, request, events).await,
            None => self.run_call(request, events).await,
        }
    }

    /// [`Pipeline::run_logged`] in a [`CallTrace`] scope, then counted and
    /// its span completed.
    pub(super) async fn run_observed(
        self: &Arc<Self>,
        telemetry: Arc<Telemetry>,
        request: CallRequest,
        events: &mpsc::Sender<CallEvent>,
    ) -> Option<ToolResponse> {
        let started = Instant::now();
        // A name the host does not know is the model's text: neither a span
        // name nor a label carries it.
        let tool =
            if self.catalog.is_registered(&request.tool) { request.tool.clone() } else { UNKNOWN_TOOL.to_owned() };
        let mode = request.mode.unwrap_or(self.permissions.mode());
        let call = Arc::new(match telemetry.tracing() {
            Some(tracing) => tracing.call_span(&tool, &request.id, request.trace.as_ref()),
            None => CallTrace::untraced(),
        });
        if call.records_input() {
            let input = crate::audit::redacted_input(&request.input).to_string();
            call.set(KeyValue::new("gen_ai.tool.call.arguments", input));
        }
        let response = trace::scope(call.clone(), self.run_logged(request, events)).await;
        let notes = call.take_notes();
        let allowed = notes.decision.as_ref().is_some_and(|d| d.0 == Behavior::Allow)
            || notes.answer.is_some_and(|a| a != "deny");
        let outcome = outcome(response.as_ref(), allowed);
        let step = notes.decision.as_ref().map_or("none", |d| d.1.as_str());
        let series = telemetry.metrics().tool(&tool);
        series.count(outcome, step);
        if notes.state_conflicts > 0 {
            series.conflicts(notes.state_conflicts);
        }
        for (phase, time) in [
            (Phase::Decision, notes.decision_time),
            (Phase::QueueWait, notes.queue_wait),
            (Phase::Call, notes.call_time),
        ] {
            if let Some(time) = time {
                series.phase(phase, time);
            }
        }
        if call.recording() {
            let duration = started.elapsed();
            complete_span(&call, notes, mode.as_str(), outcome, response.as_ref(), duration);
        }
        call.end();
        response
    }
}

/// The attributes known once the call ended, set at once.
fn complete_span(
    call: &CallTrace,
    notes: Notes,
    mode: &'static str,
    outcome: &'static str,
    response: Option<&ToolResponse>,
    duration: Duration,
) {
    let mut attributes = Vec::with_capacity(10);
    attributes.push(KeyValue::new("toolhost.mode", mode));
    if let Some((behavior, step, rule)) = notes.decision {
        attributes.push(KeyValue::new("toolhost.decision.behavior", behavior.as_str()));
        attributes.push(KeyValue::new("toolhost.decision.step", step.as_str()));
        if let Some(rule) = rule {
            attributes.push(KeyValue::new("toolhost.decision.rule", rule));
        }
    }
    if let Some(answer) = notes.answer {
        attributes.push(KeyValue::new("toolhost.decision.answer", answer));
    }
    if let Some(sha256) = notes.sha256 {
        attributes.push(KeyValue::new("toolhost.plugin.sha256", sha256));
    }
    attributes.push(KeyValue::new("toolhost.outcome", outcome));
    if let Some(response) = response {
        attributes.push(KeyValue::new("toolhost.output.bytes", output_bytes(response) as i64));
        if call.records_input() {
            let text: String = response
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            attributes.push(KeyValue::new("gen_ai.tool.call.result", toolhost_redaction::redact(&text).0));
        }
    }
    attributes.push(KeyValue::new("toolhost.duration_us", duration.as_micros() as i64));
    call.set_all(attributes);
    if outcome == "error" {
        call.fail("the call ended with an error");
    }
}
