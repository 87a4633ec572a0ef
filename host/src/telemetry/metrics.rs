//! The host's Prometheus metrics: one registry, the families below, and
//! their text exposition for `/metrics`. Front ends add their own families
//! to the same registry ([`Metrics::registry`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use prometheus::{
    Encoder as _, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

use crate::sync::{MutexExt as _, RwLockExt as _};

/// Every metric of the host. Counters only go up; gauges are read or set
/// when something changes.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `toolhost_calls_total{tool, outcome, step}`.
    pub calls: IntCounterVec,
    /// `toolhost_call_phase_seconds{tool, phase}`: `decision`,
    /// `queue_wait`, `call`.
    pub phase_seconds: HistogramVec,
    /// `toolhost_state_conflicts_total{tool}`: a tool's compare-and-sets of
    /// agent state that found another value than expected (another call
    /// changed it first; the task tools then read and try again).
    pub state_conflicts: IntCounterVec,
    /// `toolhost_instances_in_use`: calls holding instances.
    pub instances_in_use: IntGauge,
    /// `toolhost_calls_waiting`: calls waiting for a slot.
    pub calls_waiting: IntGauge,
    /// `toolhost_asks_pending`: asks waiting for an answer.
    pub asks_pending: IntGauge,
    /// `toolhost_reloads_total`.
    pub reloads: IntCounter,
    /// `toolhost_reload_failures_total`.
    pub reload_failures: IntCounter,
    /// `toolhost_compile_cache_hits_total`.
    pub compile_cache_hits: IntCounter,
    /// `toolhost_audit_records_written_total`.
    pub audit_written: IntCounter,
    /// `toolhost_audit_records_dropped_total`.
    pub audit_dropped: IntCounter,
    /// `toolhost_upstream_restarts_total`: upstream MCP servers started
    /// again after their connection ended.
    pub upstream_restarts: IntCounter,
    /// `toolhost_http_connections`: MCP HTTP connections open now.
    pub http_connections: IntGauge,
    /// `toolhost_http_connections_total`: MCP HTTP connections accepted.
    pub http_connections_total: IntCounter,
    /// `toolhost_http_sessions`: live 2025-11-25 MCP sessions.
    pub http_sessions: IntGauge,
    /// `toolhost_trace_spans_exported_total`.
    pub spans_exported: IntCounter,
    /// `toolhost_trace_spans_dropped_total`: queue full, exporter failed or
    /// too slow.
    pub spans_dropped: IntCounter,
    /// `toolhost_metric_exports_failed_total`: pushes of these metrics to
    /// the OTLP collector that failed or had no answer in time.
    pub metric_exports_failed: IntCounter,
    /// Each tool's series, looked up once per call rather than once per
    /// series (tool names are registered names: the map stays small).
    tools: RwLock<HashMap<String, Arc<ToolMetrics>>>,
}

/// The series of one tool: its phase histograms and its call counters by
/// outcome and step.
#[derive(Debug)]
pub struct ToolMetrics {
    tool: String,
    calls: IntCounterVec,
    decision: Histogram,
    queue_wait: Histogram,
    call: Histogram,
    conflicts: IntCounter,
    /// `(outcome, step)` → its counter, filled as they occur.
    counted: Mutex<Vec<(&'static str, &'static str, IntCounter)>>,
}

/// A phase of a call, as `toolhost_call_phase_seconds{phase}` names it.
#[derive(Debug, Clone, Copy)]
pub enum Phase {
    /// The decision instance and the engine.
    Decision,
    /// Waiting for an instance slot.
    QueueWait,
    /// The call instance and the middleware chain.
    Call,
}

impl ToolMetrics {
    /// Counts a call that ended as `outcome`, decided at `step`.
    pub fn count(&self, outcome: &'static str, step: &'static str) {
        let mut counted = self.counted.lock_unpoisoned();
        if let Some((_, _, counter)) = counted.iter().find(|(o, s, _)| *o == outcome && *s == step) {
            counter.inc();
            return;
        }
        let counter = self.calls.with_label_values(&[self.tool.as_str(), outcome, step]);
        counter.inc();
        counted.push((outcome, step, counter));
    }

    /// Observes `elapsed` as `phase` of a call.
    pub fn phase(&self, phase: Phase, elapsed: Duration) {
        let histogram = match phase {
            Phase::Decision => &self.decision,
            Phase::QueueWait => &self.queue_wait,
            Phase::Call => &self.call,
        };
        histogram.observe(elapsed.as_secs_f64());
    }

    /// Counts `n` compare-and-sets of one call that found another value.
    pub fn conflicts(&self, n: u64) {
        self.conflicts.inc_by(n);
    }
}

/// Latency buckets from 100 µs to 30 s.
const BUCKETS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

impl Metrics {
    /// A registry with every family registered at zero.
    pub fn new() -> Self {
        let registry = Registry::new();
        let calls = IntCounterVec::new(
            Opts::new("toolhost_calls_total", "Tool calls by tool, outcome and the decision step that decided"),
            &["tool", "outcome", "step"],
        )
        .expect("a valid metric");
        let phase_seconds = HistogramVec::new(
            HistogramOpts::new("toolhost_call_phase_seconds", "Time of a call's phases (decision, queue_wait, call)")
                .buckets(BUCKETS.to_vec()),
            &["tool", "phase"],
        )
        .expect("a valid metric");
        let state_conflicts = IntCounterVec::new(
            Opts::new(
                "toolhost_state_conflicts_total",
                "Compare-and-sets of agent state that found another value than expected, by tool",
            ),
            &["tool"],
        )
        .expect("a valid metric");
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("a valid metric");
        let counter = |name: &str, help: &str| IntCounter::new(name, help).expect("a valid metric");
        let metrics = Metrics {
            calls,
            phase_seconds,
            state_conflicts,
            instances_in_use: gauge("toolhost_instances_in_use", "Calls holding instances now"),
            calls_waiting: gauge("toolhost_calls_waiting", "Calls waiting for an instance slot"),
            asks_pending: gauge("toolhost_asks_pending", "Permission asks waiting for an answer"),
            reloads: counter("toolhost_reloads_total", "Plugin files reloaded"),
            reload_failures: counter("toolhost_reload_failures_total", "Plugin reloads that failed"),
            compile_cache_hits: counter(
                "toolhost_compile_cache_hits_total",
                "Components loaded from the compile cache",
            ),
            audit_written: counter("toolhost_audit_records_written_total", "Audit records written"),
            audit_dropped: counter("toolhost_audit_records_dropped_total", "Audit records dropped (queue full)"),
            upstream_restarts: counter(
                "toolhost_upstream_restarts_total",
                "Upstream MCP servers started again after their connection ended",
            ),
            http_connections: gauge("toolhost_http_connections", "MCP HTTP connections open now"),
            http_connections_total: counter("toolhost_http_connections_total", "MCP HTTP connections accepted"),
            http_sessions: gauge("toolhost_http_sessions", "Live MCP sessions (2025-11-25 protocol)"),
            spans_exported: counter("toolhost_trace_spans_exported_total", "Spans sent to the OTLP collector"),
            spans_dropped: counter(
                "toolhost_trace_spans_dropped_total",
                "Spans dropped: queue full, or the collector failed or was too slow",
            ),
            metric_exports_failed: counter(
                "toolhost_metric_exports_failed_total",
                "Metric exports to the OTLP collector that failed or timed out",
            ),
            registry,
            tools: RwLock::default(),
        };
        metrics.register(Box::new(metrics.calls.clone()));
        metrics.register(Box::new(metrics.phase_seconds.clone()));
        metrics.register(Box::new(metrics.state_conflicts.clone()));
        for gauge in [
            &metrics.instances_in_use,
            &metrics.calls_waiting,
            &metrics.asks_pending,
            &metrics.http_connections,
            &metrics.http_sessions,
        ] {
            metrics.register(Box::new(gauge.clone()));
        }
        for counter in [
            &metrics.reloads,
            &metrics.reload_failures,
            &metrics.compile_cache_hits,
            &metrics.audit_written,
            &metrics.audit_dropped,
            &metrics.upstream_restarts,
            &metrics.http_connections_total,
            &metrics.spans_exported,
            &metrics.spans_dropped,
            &metrics.metric_exports_failed,
        ] {
            metrics.register(Box::new(counter.clone()));
        }
        metrics
    }

    fn register(&self, collector: Box<dyn prometheus::core::Collector>) {
        self.registry.register(collector).expect("each family is registered once");
    }

    /// The registry, for a front end's own families.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The series of `tool` (a registered name or
    /// [`super::UNKNOWN_TOOL`]).
    pub(crate) fn tool(&self, tool: &str) -> Arc<ToolMetrics> {
        if let Some(series) = self.tools.read_unpoisoned().get(tool) {
            return series.clone();
        }
        let phase = |name: &str| self.phase_seconds.with_label_values(&[tool, name]);
        let series = Arc::new(ToolMetrics {
            tool: tool.to_owned(),
            calls: self.calls.clone(),
            decision: phase("decision"),
            queue_wait: phase("queue_wait"),
            call: phase("call"),
            conflicts: self.state_conflicts.with_label_values(&[tool]),
            counted: Mutex::default(),
        });
        self.tools.write_unpoisoned().entry(tool.to_owned()).or_insert(series).clone()
    }

    /// Raises `counter` to `total`, a count kept elsewhere (the audit
    /// writer's), never lowering it.
    pub fn catch_up(counter: &IntCounter, total: u64) {
        let now = counter.get();
        if total > now {
            counter.inc_by(total - now);
        }
    }

    /// The Prometheus text exposition of every family.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            return format!("# encoding the metrics failed: {e}\n");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_series_are_made_once_and_count_into_the_registry() {
        let metrics = Metrics::new();
        let first = metrics.tool("Read");
        assert!(Arc::ptr_eq(&first, &metrics.tool("Read")), "the series are looked up, not made again");
        first.count("success", "allow_rule");
        metrics.tool("Read").count("success", "allow_rule");
        metrics.tool("Read").count("denied", "deny_rule");
        metrics.tool("Read").phase(Phase::QueueWait, Duration::from_millis(2));
        metrics.tool("TaskCreate").conflicts(3);
        let text = metrics.render();
        for line in [
            r#"toolhost_calls_total{outcome="success",step="allow_rule",tool="Read"} 2"#,
            r#"toolhost_calls_total{outcome="denied",step="deny_rule",tool="Read"} 1"#,
            r#"toolhost_call_phase_seconds_count{phase="queue_wait",tool="Read"} 1"#,
            r#"toolhost_state_conflicts_total{tool="TaskCreate"} 3"#,
        ] {
            assert!(text.contains(line), "{line} missing from {text}");
        }
    }
}
