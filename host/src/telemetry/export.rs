//! Getting finished spans to the collector without holding up a call: the
//! span processor only puts a span in a bounded queue (full: dropped and
//! counted), and one background task takes batches from it and sends them
//! with the OTLP exporter, each send bounded by a timeout. A collector that
//! is down or slow costs the calls nothing but the drops.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use opentelemetry::Context;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter as _, SpanProcessor};
use tokio::sync::{mpsc, oneshot};

use super::{Metrics, TelemetrySettings};

/// The most spans one export request carries.
const BATCH: usize = 512;

/// How long the first span of a batch waits for others to join it.
const BATCH_DELAY: Duration = Duration::from_millis(100);

/// The longest one export may take before it is given up (its spans are
/// counted as dropped).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The processor's side of the queue.
#[derive(Debug)]
pub(super) struct Queue {
    spans: mpsc::Sender<SpanData>,
    metrics: Arc<Metrics>,
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if self.spans.try_send(span).is_err() {
            self.metrics.spans_dropped.inc();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The handle on the background task, to flush it.
pub(super) struct Exporter {
    flush: mpsc::Sender<oneshot::Sender<()>>,
}

impl Exporter {
    /// Builds the OTLP exporter `settings` and the environment ask for,
    /// its spans describing `resource`, and starts the task that feeds it.
    pub(super) fn start(
        settings: &TelemetrySettings,
        resource: &Resource,
        metrics: Arc<Metrics>,
    ) -> Result<(Queue, Exporter)> {
        let mut otlp = otlp_exporter(settings)?;
        otlp.set_resource(resource);
        let (spans, rx) = mpsc::channel(settings.queue);
        let (flush, flushes) = mpsc::channel(4);
        tokio::spawn(run(otlp, rx, flushes, metrics.clone()));
        Ok((Queue { spans, metrics }, Exporter { flush }))
    }

    /// Sends what is queued now, waiting at most `limit`.
    pub(super) async fn flush(&self, limit: Duration) {
        let (done, sent) = oneshot::channel();
        if self.flush.send(done).await.is_ok() {
            let _ = tokio::time::timeout(limit, sent).await;
        }
    }
}

/// The exporter: gRPC when the settings (or `OTEL_EXPORTER_OTLP_PROTOCOL`)
/// say `grpc`, else HTTP/protobuf; headers, timeout and an endpoint not in
/// the settings come from the `OTEL_EXPORTER_OTLP_*` environment.
fn otlp_exporter(settings: &TelemetrySettings) -> Result<opentelemetry_otlp::SpanExporter> {
    let protocol = match &settings.protocol {
        Some(p) => p.clone(),
        None => std::env::var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_else(|_| "http/protobuf".into()),
    };
    let endpoint = settings.otlp_endpoint.as_deref().map(|e| e.trim_end_matches('/'));
    let exporter = match protocol.trim() {
        "grpc" => {
            let mut builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            builder.build()?
        }
        "http/protobuf" => {
            let mut builder =
                opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
            // As OTEL_EXPORTER_OTLP_ENDPOINT: the base, the signal's path added.
            if let Some(endpoint) = endpoint {
                let url = if endpoint.ends_with("/v1/traces") {
                    endpoint.to_owned()
                } else {
                    format!("{endpoint}/v1/traces")
                };
                builder = builder.with_endpoint(url);
            }
            builder.build()?
        }
        other => bail!(
            "the OTLP protocol \"{other}\" is not supported; set [telemetry] protocol (or OTEL_EXPORTER_OTLP_PROTOCOL) \
             to \"http/protobuf\" or \"grpc\""
        ),
    };
    Ok(exporter)
}

/// The background task: a batch is the spans that arrive within
/// [`BATCH_DELAY`] of its first (at most [`BATCH`]); a flush sends what is
/// queued at once.
async fn run(
    otlp: opentelemetry_otlp::SpanExporter,
    mut rx: mpsc::Receiver<SpanData>,
    mut flushes: mpsc::Receiver<oneshot::Sender<()>>,
    metrics: Arc<Metrics>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let flushed = tokio::select! {
            span = rx.recv() => match span {
                Some(span) => { batch.push(span); None }
                None => return,
            },
            Some(done) = flushes.recv() => Some(done),
        };
        if flushed.is_none() {
            let deadline = tokio::time::Instant::now() + BATCH_DELAY;
            while batch.len() < BATCH {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(span)) => batch.push(span),
                    Ok(None) | Err(_) => break,
                }
            }
        }
        while batch.len() < BATCH
            && let Ok(span) = rx.try_recv()
        {
            batch.push(span);
        }
        send(&otlp, &mut batch, &metrics).await;
        if let Some(done) = flushed {
            while let Ok(span) = rx.try_recv() {
                batch.push(span);
                if batch.len() == BATCH {
                    send(&otlp, &mut batch, &metrics).await;
                }
            }
            send(&otlp, &mut batch, &metrics).await;
            let _ = done.send(());
        }
    }
}

async fn send(otlp: &opentelemetry_otlp::SpanExporter, batch: &mut Vec<SpanData>, metrics: &Metrics) {
    if batch.is_empty() {
        return;
    }
    let spans = std::mem::replace(batch, Vec::with_capacity(BATCH));
    let n = spans.len() as u64;
    match tokio::time::timeout(EXPORT_TIMEOUT, otlp.export(spans)).await {
        Ok(Ok(())) => metrics.spans_exported.inc_by(n),
        Ok(Err(e)) => {
            metrics.spans_dropped.inc_by(n);
            tracing::debug!("exporting {n} spans failed: {e}");
        }
        Err(_) => {
            metrics.spans_dropped.inc_by(n);
            tracing::debug!("exporting {n} spans took more than {EXPORT_TIMEOUT:?}; dropped");
        }
    }
}
