//! An OTLP/HTTP trace receiver for the telemetry tests: a real HTTP server
//! on a loopback port that decodes each `POST /v1/traces` body with the
//! official protobuf definitions (the `opentelemetry-proto` crate) and
//! keeps the spans. It can also be slow: accept, read, and never answer.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// A running receiver; its threads end with the test process.
pub struct Receiver {
    port: u16,
    spans: Arc<Mutex<Vec<Span>>>,
    service_names: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    /// A receiver that answers every export at once.
    pub fn start() -> Self {
        Self::listen(false)
    }

    /// A receiver that takes every export and never answers it (a
    /// collector that hangs).
    pub fn hanging() -> Self {
        Self::listen(true)
    }

    fn listen(hang: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the OTLP receiver");
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let service_names = Arc::new(Mutex::new(Vec::new()));
        let (kept, names) = (spans.clone(), service_names.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (kept, names) = (kept.clone(), names.clone());
                std::thread::spawn(move || serve(stream, hang, &kept, &names));
            }
        });
        Receiver { port, spans, service_names }
    }

    /// The base URL (`[telemetry] otlp_endpoint`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// The `service.name` of every export so far.
    pub fn service_names(&self) -> Vec<String> {
        self.service_names.lock().unwrap().clone()
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
}

/// One connection: requests one after the other (the exporter keeps it
/// alive).
fn serve(stream: TcpStream, hang: bool, kept: &Mutex<Vec<Span>>, names: &Mutex<Vec<String>>) {
    let mut writer = stream.try_clone().expect("cloning the stream");
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut first = true;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if first {
                assert!(line.starts_with("POST /v1/traces "), "the exporter sent {line:?}");
                first = false;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("a Content-Length");
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP trace export");
        for resource in request.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?));
            names.lock().unwrap().extend(service);
            for scope in resource.scope_spans {
                kept.lock().unwrap().extend(scope.spans);
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
