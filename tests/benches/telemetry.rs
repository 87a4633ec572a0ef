//! Issue-34 figures: what telemetry costs a trivial call (the `echo`
//! plugin), end to end through the library as an agent makes it. Three
//! hosts in the same run, measured in interleaved rounds so a change in the
//! machine's load reaches every row alike: telemetry off; metrics only (as
//! `serve --metrics`); and traces at `sample_ratio = 1.0` sent over
//! OTLP/HTTP to a real receiver (`tests/tests/support/otlp.rs`, decoding
//! every export), with metrics; the same with a collector that hangs (the
//! spans are made and queued, then dropped: the calls' side alone). Beside
//! them, in the same rounds, the
//! OpenTelemetry SDK alone making a traced call's three spans and ending
//! them into a processor that drops them: the floor the traced row cannot
//! go under while its spans are the SDK's.
//!
//! Run: `cargo bench -p toolhost-e2e --bench telemetry` (`ITERATIONS`,
//! default 20 000 per host; `PROFILE_ROW=N` makes only row N's calls, for
//! a profiler).

#[path = "../tests/support/otlp.rs"]
#[allow(dead_code)]
mod otlp;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::Toolhost;
use toolhost::state::AgentState;
use toolhost_e2e::{Scratch, env_number, guest, percentile};

const ROUNDS: usize = 20;

async fn call(host: &Toolhost, state: &Arc<AgentState>, input: &str) -> String {
    toolhost_e2e::session_call(host, state, "Echo", input).await
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations: usize = env_number("ITERATIONS", 20_000);
    let scratch = Scratch::new();
    let receiver = otlp::Receiver::counting();
    let mut settings = scratch.settings();
    settings.builtins = false;
    settings.plugins.push(guest("echo"));
    let build = |settings: toolhost::settings::Settings, metrics: bool| async move {
        let host = Toolhost::builder().settings(settings, None).metrics(metrics).build().await.expect("a host");
        host.ready().await.expect("the plugin loads");
        host
    };
    let mut traced = settings.clone();
    traced.telemetry.otlp_endpoint = Some(receiver.url());
    traced.telemetry.sample_ratio = 1.0;
    // The same spans made and queued, but the collector takes the first
    // export and never answers: the rest are dropped at the queue, so this
    // row is the calls' own side of tracing without the export work.
    let hanging = otlp::Receiver::hanging();
    let mut unsent = traced.clone();
    unsent.telemetry.otlp_endpoint = Some(hanging.url());
    let hosts = [
        ("telemetry off", build(settings.clone(), false).await),
        ("metrics only", build(settings, true).await),
        ("traces (sampling 1.0) + metrics", build(traced, true).await),
        ("  the same, collector hanging", build(unsent, true).await),
    ];
    let state = Arc::new(AgentState::new());
    let input = json!({"text": "hi"}).to_string();
    for (_, host) in &hosts {
        for _ in 0..500 {
            assert_eq!(call(host, &state, &input).await, "hi");
        }
    }
    // For a profiler: only host N's calls, nothing printed.
    if let Ok(row) = std::env::var("PROFILE_ROW") {
        let (_, host) = &hosts[row.parse::<usize>().expect("PROFILE_ROW is a row number from 0")];
        for _ in 0..iterations {
            call(host, &state, &input).await;
        }
        return;
    }
    let mut samples: Vec<Vec<Duration>> = hosts.iter().map(|_| Vec::with_capacity(iterations)).collect();
    let floor = SdkFloor::new();
    let mut floor_samples = Vec::with_capacity(iterations);
    // Each round's p50 of each host over the untraced host's: the load of
    // the machine changes between rounds more than within one.
    let mut round_ratios: Vec<Vec<f64>> = hosts.iter().map(|_| Vec::with_capacity(ROUNDS)).collect();
    for _ in 0..ROUNDS {
        for _ in 0..iterations / ROUNDS {
            floor_samples.push(floor.three_spans());
        }
        let mut round_p50 = Vec::with_capacity(hosts.len());
        for ((_, host), samples) in hosts.iter().zip(&mut samples) {
            let mut round = Vec::with_capacity(iterations / ROUNDS);
            for _ in 0..iterations / ROUNDS {
                let start = Instant::now();
                let text = call(host, &state, &input).await;
                round.push(start.elapsed());
                assert_eq!(text, "hi");
            }
            samples.extend_from_slice(&round);
            round_p50.push(percentile(&mut round, 0.50));
        }
        for (ratios, p50) in round_ratios.iter_mut().zip(&round_p50) {
            ratios.push(p50.as_secs_f64() / round_p50[0].as_secs_f64());
        }
    }
    hosts[2].1.telemetry().expect("traced").flush(Duration::from_secs(30)).await;
    let metrics = hosts[2].1.metrics_text().expect("metrics");
    let exported = metric(&metrics, "toolhost_trace_spans_exported_total");
    let dropped = metric(&metrics, "toolhost_trace_spans_dropped_total");

    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = |s: &[Duration]| s.iter().map(|d| us(*d)).sum::<f64>() / s.len() as f64;
    let off_p50 = us(percentile(&mut samples[0], 0.50));
    let off_mean = mean(&samples[0]);
    println!(
        "{:<34} {:>9} {:>9} {:>9} {:>10} {:>11} {:>15}",
        "trivial call (echo plugin)", "p50 µs", "p99 µs", "mean µs", "p50 /off", "mean /off", "rounds' p50/off"
    );
    for (((name, _), samples), ratios) in hosts.iter().zip(&mut samples).zip(&mut round_ratios) {
        let p50 = us(percentile(samples, 0.50));
        let p99 = us(percentile(samples, 0.99));
        let m = mean(samples);
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ratios.len() / 2];
        println!(
            "{name:<34} {p50:>9.1} {p99:>9.1} {m:>9.1} {:>9.3}x {:>10.3}x {median:>14.3}x",
            p50 / off_p50,
            m / off_mean
        );
    }
    let p50 = us(percentile(&mut floor_samples, 0.50));
    let p99 = us(percentile(&mut floor_samples, 0.99));
    let m = mean(&floor_samples);
    let name = "SDK alone: the 3 spans, dropped";
    println!(
        "{name:<34} {p50:>9.1} {p99:>9.1} {m:>9.1} {:>9.3}  {:>10.3}   (share of an untraced call)",
        p50 / off_p50,
        m / off_mean
    );
    println!("spans received by the OTLP receiver: {} (exported {exported}, dropped {dropped})", receiver.span_count());
}

/// The OpenTelemetry SDK configured as toolhost configures it (parent-based
/// ratio sampler at 1.0), its ended spans dropped.
struct SdkFloor {
    tracer: opentelemetry_sdk::trace::SdkTracer,
}

#[derive(Debug)]
struct Discard;

impl opentelemetry_sdk::trace::SpanProcessor for Discard {
    fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &opentelemetry::Context) {}
    fn on_end(&self, span: opentelemetry_sdk::trace::SpanData) {
        std::hint::black_box(span);
    }
    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
}

impl SdkFloor {
    fn new() -> Self {
        use opentelemetry::trace::TracerProvider as _;
        use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
        let provider = SdkTracerProvider::builder()
            .with_span_processor(Discard)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(1.0))))
            .build();
        SdkFloor { tracer: provider.tracer("toolhost") }
    }

    /// A call span with the attributes a traced call gets, and its
    /// `decide` and `call` children: the time to make and end them.
    fn three_spans(&self) -> Duration {
        use opentelemetry::KeyValue;
        use opentelemetry::trace::{Span as _, TraceContextExt as _, Tracer as _};
        let start = Instant::now();
        let mut call =
            self.tracer.build(self.tracer.span_builder(format!("execute_tool {}", "Echo")).with_attributes([
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", "Echo".to_owned()),
                KeyValue::new("gen_ai.tool.call.id", "call-1".to_owned()),
            ]));
        let cx = opentelemetry::Context::new().with_remote_span_context(call.span_context().clone());
        for name in ["decide", "call"] {
            let mut child = self.tracer.build_with_context(self.tracer.span_builder(name), &cx);
            child.end();
        }
        for (key, value) in [("toolhost.mode", "default"), ("toolhost.outcome", "success")] {
            call.set_attribute(KeyValue::new(key, value));
        }
        call.set_attribute(KeyValue::new("toolhost.output.bytes", 2));
        call.end();
        start.elapsed()
    }
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok()).unwrap_or(0)
}
