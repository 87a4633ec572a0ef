//! Getting finished spans and the metrics to the collector without holding
//! up a call: the span processor only puts a span in a bounded buffer (full:
//! dropped and counted), and an exporter on a thread of its own takes
//! batches from it and sends them with the OTLP exporter, each send bounded
//! by a timeout. The same thread pushes the metrics on their interval
//! (`metrics_otlp.rs`). A collector that is down or slow costs the calls
//! nothing but the drops.
//!
//! A call never wakes the exporter for a span of its own: only the first
//! span into an empty buffer (the exporter is idle) and the span that fills
//! a batch (or half the buffer, when that is less) do; otherwise the
//! exporter collects on its timer. Waking it for every span cost a call
//! more than making the span (the audit writer learned the same).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use opentelemetry::Context;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter as _, SpanProcessor};
use tokio::sync::{Notify, mpsc, oneshot};

use super::metrics_otlp::{Pusher, Target};
use super::otlp::{self, Signal, Transport};
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
    /// The memory of the last buffer the exporter emptied, put back in
    /// place at the next take: the calls then write their spans into pages
    /// already in use, not into a fresh allocation the kernel must zero.
    spare: Mutex<Vec<SpanData>>,
    /// The most spans it holds (`[telemetry] queue`).
    capacity: usize,
    /// The number of spans that wakes the exporter before its timer.
    wake_at: usize,
    /// Wakes the exporter: a first span arrived, or a batch is full.
    ready: Notify,
}

impl Buffer {
    /// What is buffered, leaving room for a batch (the spare memory, once
    /// there is one) so the calls' pushes do not grow the buffer again.
    fn take(&self) -> Vec<SpanData> {
        let mut room = std::mem::take(&mut *self.spare.lock_unpoisoned());
        if room.capacity() == 0 {
            room = Vec::with_capacity(BATCH.min(self.capacity));
        }
        std::mem::replace(&mut *self.spans.lock_unpoisoned(), room)
    }

    /// Keeps the memory of `emptied` (a buffer the exporter sent) for the
    /// next take.
    fn give_back(&self, emptied: Vec<SpanData>) {
        debug_assert!(emptied.is_empty());
        if emptied.capacity() <= self.capacity {
            *self.spare.lock_unpoisoned() = emptied;
        }
    }
}

/// The processor's side of the buffer.
#[derive(Debug, Clone)]
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
    /// Starts the thread that sends spans (when `traces`: the [`Queue`]
    /// for the tracer is returned) and pushes `metrics` (when `push` names
    /// a target), both describing `resource`; the thread has a
    /// single-threaded runtime of its own, so encoding and sending never
    /// take the host's workers.
    pub(super) fn start(
        settings: &TelemetrySettings,
        resource: &Resource,
        metrics: Arc<Metrics>,
        traces: bool,
        push: Option<Target>,
    ) -> Result<(Option<Queue>, Exporter)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the exporter's runtime")?;
        // A gRPC channel starts its connection task on the runtime it is
        // made in.
        let built = {
            let _inside = runtime.enter();
            exporters(settings, resource, traces, push)
        };
        let (otlp, pusher) = match built {
            Ok(exporters) => exporters,
            Err(e) => {
                // Dropping a runtime waits for its tasks, which the async
                // context this runs in forbids.
                runtime.shutdown_background();
                return Err(e);
            }
        };
        let capacity = settings.queue.max(1);
        let buffer = Arc::new(Buffer {
            spans: Mutex::new(Vec::with_capacity(if traces { BATCH.min(capacity) } else { 0 })),
            spare: Mutex::default(),
            capacity,
            wake_at: BATCH.min(capacity.div_ceil(2)),
            ready: Notify::new(),
        });
        let (flush, flushes) = mpsc::channel(4);
        let exporting = Exporting { otlp, pusher, buffer: buffer.clone(), metrics: metrics.clone() };
        std::thread::Builder::new()
            .name("toolhost-otlp".into())
            .spawn(move || {
                crate::background::lower_priority();
                runtime.block_on(exporting.run(flushes))
            })
            .context("starting the exporter's thread")?;
        let queue = traces.then(|| Queue { buffer, metrics });
        Ok((queue, Exporter { flush }))
    }

    /// Sends the spans queued now and the metrics, waiting at most `limit`.
    pub(super) async fn flush(&self, limit: Duration) {
        let (done, sent) = oneshot::channel();
        if self.flush.send(done).await.is_ok() {
            let _ = tokio::time::timeout(limit, sent).await;
        }
    }
}

/// The span exporter (when `traces`) and the metrics pusher (when `push`),
/// describing `resource`.
fn exporters(
    settings: &TelemetrySettings,
    resource: &Resource,
    traces: bool,
    push: Option<Target>,
) -> Result<(Option<opentelemetry_otlp::SpanExporter>, Option<Pusher>)> {
    let otlp = if traces {
        let mut otlp = span_exporter(settings).context("starting the OTLP trace exporter")?;
        otlp.set_resource(resource);
        Some(otlp)
    } else {
        None
    };
    let pusher = match push {
        Some(target) => Some(Pusher::new(target, resource).context("starting the OTLP metrics exporter")?),
        None => None,
    };
    Ok((otlp, pusher))
}

/// The span exporter the settings and the environment ask for; headers and
/// the timeout come from the `OTEL_EXPORTER_OTLP_*` environment (read by
/// the exporter itself, checked here first: it would skip what it cannot
/// read, and send without an API key rather than say so).
fn span_exporter(settings: &TelemetrySettings) -> Result<opentelemetry_otlp::SpanExporter> {
    otlp::headers(Signal::Traces)?;
    otlp::timeout(Signal::Traces)?;
    let transport = otlp::transport(settings, Signal::Traces)?;
    let endpoint = otlp::endpoint(settings, Signal::Traces, transport);
    let exporter = match transport {
        Transport::Grpc => {
            let mut builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            builder.build()?
        }
        Transport::Http => {
            let mut builder =
                opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            builder.build()?
        }
    };
    Ok(exporter)
}

/// The exporter's thread: what it sends with, and where from.
struct Exporting {
    /// The span exporter, when traces are sent.
    otlp: Option<opentelemetry_otlp::SpanExporter>,
    /// The metrics pusher, when metrics are sent.
    pusher: Option<Pusher>,
    buffer: Arc<Buffer>,
    metrics: Arc<Metrics>,
}

impl Exporting {
    /// Idle until a first span, a flush or the metrics' interval; a batch
    /// is the spans that arrive within [`BATCH_DELAY`] of its first (or
    /// until the buffer wakes it early); a flush sends what is buffered and
    /// the metrics at once. Ends, sending what is left, when the
    /// [`Exporter`] is dropped.
    async fn run(self, mut flushes: mpsc::Receiver<oneshot::Sender<()>>) {
        // Without metrics to push the timer is never polled (its period
        // then only has to be valid).
        let period = self.pusher.as_ref().map_or(BATCH_DELAY, Pusher::interval);
        let mut push_timer = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        push_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = self.buffer.ready.notified() => {
                    tokio::select! {
                        () = tokio::time::sleep(BATCH_DELAY) => {}
                        () = self.buffer.ready.notified() => {}
                    }
                    self.send(self.buffer.take()).await;
                }
                _ = push_timer.tick(), if self.pusher.is_some() => self.push().await,
                request = flushes.recv() => {
                    self.send(self.buffer.take()).await;
                    self.push().await;
                    match request {
                        Some(done) => {
                            let _ = done.send(());
                        }
                        None => return,
                    }
                }
            }
        }
    }

    async fn push(&self) {
        if let Some(pusher) = &self.pusher {
            pusher.push(&self.metrics).await;
        }
    }

    /// Sends `spans` in batches, then gives their buffer's memory back.
    async fn send(&self, mut spans: Vec<SpanData>) {
        let Some(otlp) = &self.otlp else { return };
        while !spans.is_empty() {
            let batch: Vec<SpanData> = spans.drain(..spans.len().min(BATCH)).collect();
            let n = batch.len() as u64;
            match tokio::time::timeout(EXPORT_TIMEOUT, otlp.export(batch)).await {
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
        self.buffer.give_back(spans);
    }
}
