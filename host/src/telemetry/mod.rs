//! Traces and metrics of the host's calls (`[telemetry]`, `serve --metrics`).
//!
//! A host with telemetry gives every call a span `execute_tool {name}`
//! (OpenTelemetry GenAI attributes, the decision, the outcome) with child
//! spans for the decision instance, each middleware layer, the call
//! instance and every host operation (`trace.rs`), sent to an OTLP
//! collector from a bounded queue by a background task that never holds up
//! a call (`export.rs`); and counts calls, latencies, waits and drops in a
//! Prometheus registry (`metrics.rs`). A host without it checks one
//! `Option` per call and does nothing else.
//!
//! Tool names in span names and metric labels are those of registered
//! tools; a name the host does not know is `(unknown)`, so a model cannot
//! grow the label set or put its text in a metric.

mod export;
pub mod metrics;
pub mod trace;

use std::sync::Arc;

use anyhow::Result;

pub use metrics::Metrics;
pub use toolhost_core::telemetry::TelemetrySettings;
pub use trace::{CallTrace, Child, TraceParent, Tracing};

/// The label and span name part of a tool the host does not know.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// A host's telemetry: traces when a collector is configured, metrics when
/// asked for (or when there are traces: the drop counts live there).
pub struct Telemetry {
    tracing: Option<Tracing>,
    metrics: Arc<Metrics>,
}

impl Telemetry {
    /// The telemetry `settings` ask for, with metrics when `metrics` is set;
    /// `None` when there is neither a collector (in the settings or the
    /// `OTEL_EXPORTER_OTLP_*` environment) nor metrics. Must run inside a
    /// Tokio runtime (the exporter's task starts here).
    pub fn start(settings: &TelemetrySettings, metrics: bool) -> Result<Option<Arc<Self>>> {
        let traces = trace::configured(settings);
        if !traces && !metrics {
            return Ok(None);
        }
        let registry = Arc::new(Metrics::new());
        let tracing = if traces { Some(Tracing::start(settings, registry.clone())?) } else { None };
        Ok(Some(Arc::new(Telemetry { tracing, metrics: registry })))
    }

    /// The tracer, when traces are configured.
    pub fn tracing(&self) -> Option<&Tracing> {
        self.tracing.as_ref()
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Sends the spans still queued, waiting at most `limit` (at the end of
    /// `serve`).
    pub async fn flush(&self, limit: std::time::Duration) {
        if let Some(tracing) = &self.tracing {
            tracing.flush(limit).await;
        }
    }
}
