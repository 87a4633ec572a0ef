//! OTLP receivers for the telemetry tests, decoding with the official
//! protobuf definitions (the `opentelemetry-proto` crate): over HTTP, a
//! real server on a loopback port taking `POST /v1/traces` and
//! `POST /v1/metrics`; over gRPC, a tonic server of the official trace and
//! metrics services. Both keep the spans, the metric exports and the
//! headers each export came with. The HTTP one can also hang: accept, read,
//! and never answer.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
pub use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::metrics::v1::{Metric, number_data_point};
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// What a receiver got, shared by its connections.
#[derive(Default)]
struct Received {
    /// Whether the spans are kept (`spans`) or only counted.
    keep_spans: bool,
    spans: Vec<Span>,
    span_count: usize,
    /// Trace exports not decoded yet (a counting receiver decodes them when
    /// asked for the count, not while the host sends).
    undecoded: Vec<Vec<u8>>,
    service_names: Vec<String>,
    /// Every metric export, in arrival order.
    metrics: Vec<ExportMetricsServiceRequest>,
    /// Each export's signal (`traces`, `metrics`) and its headers (names
    /// lowercase).
    exports: Vec<(String, Vec<(String, String)>)>,
}

impl Received {
    fn traces(&mut self, request: ExportTraceServiceRequest) {
        for resource in request.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?));
            self.service_names.extend(service);
            for scope in resource.scope_spans {
                self.span_count += scope.spans.len();
                if self.keep_spans {
                    self.spans.extend(scope.spans);
                }
            }
        }
    }
}

/// A running receiver; its threads end with the test process.
pub struct Receiver {
    url: String,
    received: Arc<Mutex<Received>>,
}

impl Receiver {
    /// An OTLP/HTTP receiver that answers every export at once.
    pub fn start() -> Self {
        Self::listen(false, true)
    }

    /// An OTLP/HTTP receiver that answers every export at once and only
    /// counts the spans ([`Receiver::span_count`]), as a collector in
    /// another process would cost the host no memory; it decodes the
    /// exports when asked for the count, so that a benchmark's timed calls
    /// do not share the cores with a collector's decoding.
    #[allow(dead_code, reason = "the telemetry bench's receiver")]
    pub fn counting() -> Self {
        Self::listen(false, false)
    }

    /// An OTLP/HTTP receiver that takes every export and never answers it
    /// (a collector that hangs).
    pub fn hanging() -> Self {
        Self::listen(true, true)
    }

    fn listen(hang: bool, keep_spans: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the OTLP receiver");
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Received { keep_spans, ..Received::default() }));
        let kept = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, hang, &kept));
            }
        });
        Receiver { url: format!("http://127.0.0.1:{port}"), received }
    }

    /// An OTLP/gRPC receiver: the official trace and metrics services.
    pub fn grpc() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the OTLP/gRPC receiver");
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let received = Arc::new(Mutex::new(Received { keep_spans: true, ..Received::default() }));
        let services = Services(received.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                tonic::transport::Server::builder()
                    .add_service(TraceServiceServer::new(services.clone()))
                    .add_service(MetricsServiceServer::new(services))
                    .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                    .await
                    .expect("the OTLP/gRPC receiver");
            });
        });
        Receiver { url: format!("http://127.0.0.1:{port}"), received }
    }

    /// The base URL (`[telemetry] otlp_endpoint`).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.received.lock().unwrap().spans.clone()
    }

    /// How many spans were received so far.
    #[allow(dead_code, reason = "the telemetry bench's count")]
    pub fn span_count(&self) -> usize {
        let mut received = self.received.lock().unwrap();
        for body in std::mem::take(&mut received.undecoded) {
            received.traces(ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP trace export"));
        }
        received.span_count
    }

    /// The `service.name` of every trace export so far.
    pub fn service_names(&self) -> Vec<String> {
        self.received.lock().unwrap().service_names.clone()
    }

    /// Every metric export so far.
    pub fn metric_exports(&self) -> Vec<ExportMetricsServiceRequest> {
        self.received.lock().unwrap().metrics.clone()
    }

    /// The signal and the headers of every export so far.
    pub fn exports(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.received.lock().unwrap().exports.clone()
    }

    /// Waits (at most 20 s) until the spans received satisfy `done`;
    /// returns them.
    pub fn wait(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
            assert!(Instant::now() < deadline, "timed out waiting for {what}; spans so far: {names:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits (at most 20 s) for a metric export in which `done` holds;
    /// returns that export.
    pub fn wait_metrics(
        &self,
        what: &str,
        done: impl Fn(&ExportMetricsServiceRequest) -> bool,
    ) -> ExportMetricsServiceRequest {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(found) = self.metric_exports().into_iter().rev().find(|r| done(r)) {
                return found;
            }
            let n = self.metric_exports().len();
            assert!(Instant::now() < deadline, "timed out waiting for {what}; {n} metric exports so far");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The gRPC services, keeping what they receive.
#[derive(Clone)]
struct Services(Arc<Mutex<Received>>);

fn grpc_headers(metadata: &tonic::metadata::MetadataMap) -> Vec<(String, String)> {
    metadata
        .iter()
        .filter_map(|entry| match entry {
            tonic::metadata::KeyAndValueRef::Ascii(key, value) => {
                Some((key.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            }
            tonic::metadata::KeyAndValueRef::Binary(..) => None,
        })
        .collect()
}

#[tonic::async_trait]
impl TraceService for Services {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut received = self.0.lock().unwrap();
        received.exports.push(("traces".into(), grpc_headers(request.metadata())));
        received.traces(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Services {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let mut received = self.0.lock().unwrap();
        received.exports.push(("metrics".into(), grpc_headers(request.metadata())));
        received.metrics.push(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// One connection: requests one after the other (the exporter keeps it
/// alive).
fn serve(stream: TcpStream, hang: bool, received: &Mutex<Received>) {
    let mut writer = stream.try_clone().expect("cloning the stream");
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut signal = None;
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if signal.is_none() {
                signal = Some(match line.split(' ').take(2).collect::<Vec<_>>()[..] {
                    ["POST", "/v1/traces"] => "traces",
                    ["POST", "/v1/metrics"] => "metrics",
                    _ => panic!("the exporter sent {line:?}"),
                });
                continue;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_owned());
                if name == "content-length" {
                    length = value.parse().expect("a Content-Length");
                }
                headers.push((name, value));
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        {
            let mut received = received.lock().unwrap();
            let signal = signal.expect("a request line");
            received.exports.push((signal.into(), headers));
            if signal == "traces" && !received.keep_spans {
                received.undecoded.push(body);
            } else if signal == "traces" {
                received.traces(ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP trace export"));
            } else {
                let request = ExportMetricsServiceRequest::decode(body.as_slice()).expect("an OTLP metrics export");
                received.metrics.push(request);
            }
        }
        if hang {
            std::thread::sleep(Duration::from_secs(3600));
            return;
        }
        let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The metric named `name` in `export`, if there.
pub fn metric<'a>(export: &'a ExportMetricsServiceRequest, name: &str) -> Option<&'a Metric> {
    export.resource_metrics.iter().flat_map(|r| &r.scope_metrics).flat_map(|s| &s.metrics).find(|m| m.name == name)
}

/// The value of the sum or gauge `name` in `export` at the point whose
/// attributes include every one of `labels`, summed over such points.
pub fn number(export: &ExportMetricsServiceRequest, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let points = match &metric(export, name)?.data {
        Some(metric::Data::Sum(sum)) => &sum.data_points,
        Some(metric::Data::Gauge(gauge)) => &gauge.data_points,
        _ => return None,
    };
    let matching: Vec<f64> = points
        .iter()
        .filter(|p| {
            labels.iter().all(|(key, want)| {
                p.attributes.iter().any(|kv| {
                    kv.key == *key && kv.value.as_ref().and_then(|v| text(v.value.as_ref()?)).as_deref() == Some(*want)
                })
            })
        })
        .map(|p| match p.value {
            Some(number_data_point::Value::AsDouble(v)) => v,
            Some(number_data_point::Value::AsInt(i)) => i as f64,
            None => 0.0,
        })
        .collect();
    (!matching.is_empty()).then(|| matching.iter().sum())
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::StringValue(s) => Some(s.clone()),
        Value::IntValue(i) => Some(i.to_string()),
        Value::BoolValue(b) => Some(b.to_string()),
        Value::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

/// A span's attribute as text (strings, numbers and booleans).
pub fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?))
}

/// Every attribute value of `spans` as text, and every span name: what a
/// collector would store.
pub fn all_text(spans: &[Span]) -> String {
    let mut out = String::new();
    for span in spans {
        out.push_str(&span.name);
        out.push('\n');
        for kv in &span.attributes {
            if let Some(value) = kv.value.as_ref().and_then(|v| text(v.value.as_ref()?)) {
                out.push_str(&format!("{}={value}\n", kv.key));
            }
        }
        for event in &span.events {
            out.push_str(&event.name);
        }
        if let Some(status) = &span.status {
            out.push_str(&status.message);
        }
    }
    out
}

/// The span named `name`; fails listing the names when there is none or
/// more than one.
pub fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(found.len(), 1, "one span named {name:?} expected among {names:?}");
    found[0]
}

/// The spans whose parent is `parent`, by name, sorted.
pub fn children(spans: &[Span], parent: &Span) -> Vec<String> {
    let mut names: Vec<String> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent.span_id && s.trace_id == parent.trace_id)
        .map(|s| s.name.clone())
        .collect();
    names.sort();
    names
}

/// The spans of one trace.
pub fn of_trace(spans: &[Span], trace_id: &[u8]) -> Vec<Span> {
    spans.iter().filter(|s| s.trace_id == trace_id).cloned().collect()
}
