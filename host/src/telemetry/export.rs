//! Getting finished spans to the collector without holding up a call: the
//! span processor only puts a span in a bounded buffer (full: dropped and
//! counted), and an exporter on a thread of its own takes batches from it
//! and sends them with the OTLP exporter, each send bounded by a timeout. A
//! collector that is down or slow costs the calls nothing but the drops.
//!
//! A call never wakes the exporter for a span of its own: only the first
//! span into an empty buffer (the exporter is idle) and the span that fills
//! a batch (or half the buffer, when that is less) do; otherwise the
//! exporter collects on its timer. Waking it for every span cost a call
//! more than making the span (the audit writer learned the same).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use opentelemetry::Context;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter as _, SpanProcessor};
use tokio::sync::{Notify, mpsc, oneshot};

use super::{Metrics, TelemetrySettings};
use crate::sync::MutexExt;

/// The most spans one export request carries.
const BATCH: usize = 512;

/// How long the first span of a batch waits for others to join it.
const BATCH_DELAY: Duration = Duration::from_millis(100);

/// The longest one export may take before it is given up (its spans are
/// counted as dropped).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Finished spans waiting for the exporter.
#[derive(Debug)]
struct Buffer {
    spans: Mutex<Vec<SpanData>>,
    /// The most spans it holds (`[telemetry] queue`).
    capacity: usize,
    /// The number of spans that wakes the exporter before its timer.
    wake_at: usize,
    /// Wakes the exporter: a first span arrived, or a batch is full.
    ready: Notify,
}

impl Buffer {
    /// What is buffered, leaving room for a batch so the calls' pushes
    /// do not grow the buffer again.
    fn take(&self) -> Vec<SpanData> {
        std::mem::replace(&mut *self.spans.lock_unpoisoned(), Vec::with_capacity(BATCH.min(self.capacity)))
    }
}

/// The processor's side of the buffer.
#[derive(Debug)]
pub(super) struct Queue {
    buffer: Arc<Buffer>,
    metrics: Arc<Metrics>,
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let mut spans = self.buffer.spans.lock_unpoisoned();
        if spans.len() >= self.buffer.capacity {
            drop(spans);
            self.metrics.spans_dropped.inc();
            return;
        }
        spans.push(span);
        let wake = spans.len() == 1 || spans.len() == self.buffer.wake_at;
        drop(spans);
        if wake {
            self.buffer.ready.notify_one();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The handle on the exporter's thread, to flush it; the thread ends when
/// this is dropped.
pub(super) struct Exporter {
    flush: mpsc::Sender<oneshot::Sender<()>>,
}

impl Exporter {
    /// Builds the OTLP exporter `settings` and the environment ask for,
    /// its spans describing `resource`, and starts the thread that feeds it
    /// (a single-threaded runtime of its own, so encoding and sending never
    /// take the host's workers).
    pub(super) fn start(
        settings: &TelemetrySettings,
        resource: &Resource,
        metrics: Arc<Metrics>,
    ) -> Result<(Queue, Exporter)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the exporter's runtime")?;
        // A gRPC channel starts its connection task on the runtime it is
        // made in.
        let mut otlp = {
            let _inside = runtime.enter();
            otlp_exporter(settings)?
        };
        otlp.set_resource(resource);
        let capacity = settings.queue.max(1);
        let buffer = Arc::new(Buffer {
            spans: Mutex::new(Vec::with_capacity(BATCH.min(capacity))),
            capacity,
            wake_at: BATCH.min(capacity.div_ceil(2)),
            ready: Notify::new(),
        });
        let (flush, flushes) = mpsc::channel(4);
        let exporting = Exporting { otlp, buffer: buffer.clone(), metrics: metrics.clone() };
        std::thread::Builder::new()
            .name("toolhost-otlp".into())
            .spawn(move || {
                crate::background::lower_priority();
                runtime.block_on(exporting.run(flushes))
            })
            .context("starting the exporter's thread")?;
        Ok((Queue { buffer, metrics }, Exporter { flush }))
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

/// The exporter's thread: what it sends with, and where from.
struct Exporting {
    otlp: opentelemetry_otlp::SpanExporter,
    buffer: Arc<Buffer>,
    metrics: Arc<Metrics>,
}

impl Exporting {
    /// Idle until a first span or a flush; a batch is the spans that
    /// arrive within [`BATCH_DELAY`] of its first (or until the buffer
    /// wakes it early); a flush sends what is buffered at once. Ends, sending what
    /// is left, when the [`Exporter`] is dropped.
    async fn run(self, mut flushes: mpsc::Receiver<oneshot::Sender<()>>) {
        loop {
            let flushed = tokio::select! {
                () = self.buffer.ready.notified() => None,
                request = flushes.recv() => match request {
                    Some(done) => Some(done),
                    None => {
                        self.send(self.buffer.take()).await;
                        return;
                    }
                },
            };
            if flushed.is_none() {
                tokio::select! {
                    () = tokio::time::sleep(BATCH_DELAY) => {}
                    () = self.buffer.ready.notified() => {}
                }
            }
            self.send(self.buffer.take()).await;
            if let Some(done) = flushed {
                let _ = done.send(());
            }
        }
    }

    async fn send(&self, mut spans: Vec<SpanData>) {
        while !spans.is_empty() {
            let rest = spans.split_off(spans.len().min(BATCH));
            let batch = std::mem::replace(&mut spans, rest);
            let n = batch.len() as u64;
            match tokio::time::timeout(EXPORT_TIMEOUT, self.otlp.export(batch)).await {
                Ok(Ok(())) => self.metrics.spans_exported.inc_by(n),
                Ok(Err(e)) => {
                    self.metrics.spans_dropped.inc_by(n);
                    tracing::debug!("exporting {n} spans failed: {e}");
                }
                Err(_) => {
                    self.metrics.spans_dropped.inc_by(n);
                    tracing::debug!("exporting {n} spans took more than {EXPORT_TIMEOUT:?}; dropped");
                }
            }
        }
    }
}
