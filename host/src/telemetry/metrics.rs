//! The host's Prometheus metrics: one registry, the families below, and
//! their text exposition for `/metrics`. Front ends add their own families
//! to the same registry ([`Metrics::registry`]).

use std::time::Duration;

use prometheus::{
    Encoder as _, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

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
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("a valid metric");
        let counter = |name: &str, help: &str| IntCounter::new(name, help).expect("a valid metric");
        let metrics = Metrics {
            calls,
            phase_seconds,
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
        };
        metrics.register(Box::new(metrics.calls.clone()));
        metrics.register(Box::new(metrics.phase_seconds.clone()));
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

    /// Observes `elapsed` as `phase` of a call of `tool`.
    pub fn phase(&self, tool: &str, phase: &str, elapsed: Duration) {
        self.phase_seconds.with_label_values(&[tool, phase]).observe(elapsed.as_secs_f64());
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
