//! Traces and metrics of the host's calls (`[telemetry]`, `serve --metrics`).
//!
//! A host with telemetry gives every call a span `execute_tool {name}`
//! (OpenTelemetry GenAI attributes, the decision, the outcome) with child
//! spans for the decision instance, each middleware layer, the call
//! instance and every host operation (`trace.rs`), sent to an OTLP
//! collector from a bounded queue by a background thread that never holds
//! up a call (`export.rs`, where and how from `otlp.rs`); and counts calls,
//! latencies, waits and drops in a Prometheus registry (`metrics.rs`),
//! served on `/metrics` by the front end and pushed to the same collector
//! (`metrics_otlp.rs`). A host without it checks one `Option` per call and
//! does nothing else.
//!
//! Tool names in span names and metric labels are those of registered
//! tools; a name the host does not know is `(unknown)`, so a model cannot
//! grow the label set or put its text in a metric.

mod export;
pub(crate) mod metrics;
mod metrics_otlp;
mod otlp;
pub(crate) mod trace;

use std::sync::Arc;

use anyhow::Result;
use opentelemetry_sdk::Resource;

pub use metrics::Metrics;
pub use toolhost_core::telemetry::TelemetrySettings;
pub use trace::TraceParent;
use trace::Tracing;

/// The label and span name part of a tool the host does not know.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// A host's telemetry: traces when a collector is configured, metrics when
/// asked for or when there is a collector (they are pushed to it, and the
/// span drop counts live there).
pub struct Telemetry {
    tracing: Option<Tracing>,
    metrics: Arc<Metrics>,
    /// The thread sending spans and metrics to the collector, when there is
    /// one; after `tracing`, so the tracer's last spans reach its buffer
    /// before the thread sends what is left.
    exporter: Option<export::Exporter>,
}

impl Telemetry {
    /// The telemetry `settings` ask for, with metrics when `metrics` is set;
    /// `None` when there is neither a collector (in the settings or the
    /// `OTEL_EXPORTER_OTLP_*` environment) nor metrics. The errors name a
    /// setting or variable that cannot be read.
    pub fn start(settings: &TelemetrySettings, metrics: bool) -> Result<Option<Arc<Self>>> {
        let traces = trace::configured(settings);
        let push = metrics_otlp::Target::configured(settings)?;
        if !traces && push.is_none() && !metrics {
            return Ok(None);
        }
        let registry = Arc::new(Metrics::new());
        let (tracing, exporter) = if traces || push.is_some() {
            let resource = resource(settings);
            let (queue, exporter) = export::Exporter::start(settings, &resource, registry.clone(), traces, push)?;
            (queue.map(|queue| Tracing::new(settings, resource, queue)), Some(exporter))
        } else {
            (None, None)
        };
        Ok(Some(Arc::new(Telemetry { tracing, metrics: registry, exporter })))
    }

    /// The tracer, when traces are configured.
    pub(crate) fn tracing(&self) -> Option<&Tracing> {
        self.tracing.as_ref()
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Sends the spans still queued and the metrics as they are now,
    /// waiting at most `limit` (at the end of `serve`).
    pub async fn flush(&self, limit: std::time::Duration) {
        if let Some(exporter) = &self.exporter {
            exporter.flush(limit).await;
        }
    }
}

/// What the spans and metrics describe: `service.name` from the settings,
/// else `OTEL_SERVICE_NAME`, else `toolhost`; `OTEL_RESOURCE_ATTRIBUTES`
/// and the SDK's own attributes.
fn resource(settings: &TelemetrySettings) -> Resource {
    let mut resource = Resource::builder();
    match &settings.service_name {
        Some(name) => resource = resource.with_service_name(name.clone()),
        None if std::env::var_os("OTEL_SERVICE_NAME").is_none() => resource = resource.with_service_name("toolhost"),
        None => {}
    }
    resource.build()
}
