//! The Prometheus registry sent to an OTLP collector: every
//! `OTEL_METRIC_EXPORT_INTERVAL` (60 s unless set) and when the host
//! flushes, from the exporter's thread (`export.rs`).
//!
//! The registry is the one source of the numbers (`/metrics` serves the
//! same), converted as the OpenTelemetry data model maps Prometheus: a
//! counter is a cumulative monotonic sum named without `_total`, a gauge a
//! gauge, a histogram's cumulative buckets become per-bucket counts over
//! the same bounds; every point starts when the host started.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Gauge, Histogram, HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics,
    ScopeMetrics, Sum, Summary, SummaryDataPoint, metric, number_data_point, summary_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource as ProtoResource;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_sdk::Resource;
use prometheus::proto::{LabelPair, MetricFamily, MetricType};
use prost::Message as _;

use super::Metrics;
use super::TelemetrySettings;
use super::otlp::{self, Signal, Transport};

/// Where and how often the metrics go, read from the settings and the
/// environment before the exporter's thread starts (so a mistake stops the
/// start, not the thread).
#[derive(Debug)]
pub(super) struct Target {
    transport: Transport,
    endpoint: String,
    headers: reqwest::header::HeaderMap,
    timeout: Duration,
    interval: Duration,
}

impl Target {
    /// The target `settings` and the environment name, `None` when metrics
    /// are not sent over OTLP (no endpoint, `OTEL_METRICS_EXPORTER=none`).
    pub(super) fn configured(settings: &TelemetrySettings) -> Result<Option<Target>> {
        if !otlp::configured(settings, Signal::Metrics) {
            return Ok(None);
        }
        let transport = otlp::transport(settings, Signal::Metrics)?;
        let Some(endpoint) = otlp::endpoint(settings, Signal::Metrics, transport) else { return Ok(None) };
        let interval = match std::env::var("OTEL_METRIC_EXPORT_INTERVAL") {
            Ok(value) if !value.trim().is_empty() => otlp::millis("OTEL_METRIC_EXPORT_INTERVAL", value.trim())?,
            _ => Duration::from_secs(60),
        };
        Ok(Some(Target {
            transport,
            endpoint,
            headers: otlp::headers(Signal::Metrics)?,
            timeout: otlp::timeout(Signal::Metrics)?,
            interval,
        }))
    }
}

/// What sends one request.
enum Sender {
    Http { client: reqwest::Client, url: String, headers: reqwest::header::HeaderMap },
    Grpc { client: MetricsServiceClient<tonic::transport::Channel>, headers: tonic::metadata::MetadataMap },
}

/// Sends the registry's metrics to one collector.
pub(super) struct Pusher {
    sender: Sender,
    /// Bounds a push, connecting included, over either transport.
    timeout: Duration,
    interval: Duration,
    resource: ProtoResource,
    /// When the host's counts started (the start of every cumulative point).
    started: u64,
}

impl Pusher {
    /// A pusher to `target`, describing `resource`. Must run inside the
    /// runtime it will send from (a gRPC channel's connection task starts
    /// there).
    pub(super) fn new(target: Target, resource: &Resource) -> Result<Pusher> {
        let sender = match target.transport {
            Transport::Http => {
                Sender::Http { client: reqwest::Client::new(), url: target.endpoint, headers: target.headers }
            }
            Transport::Grpc => {
                let channel = tonic::transport::Endpoint::from_shared(target.endpoint.clone())
                    .with_context(|| format!("the OTLP metrics endpoint \"{}\" is not a URL", target.endpoint))?
                    .connect_lazy();
                Sender::Grpc {
                    client: MetricsServiceClient::new(channel),
                    headers: tonic::metadata::MetadataMap::from_headers(target.headers),
                }
            }
        };
        let resource = ProtoResource {
            attributes: ResourceAttributesWithSchema::from(resource).attributes.0,
            ..Default::default()
        };
        Ok(Pusher {
            sender,
            timeout: target.timeout,
            interval: target.interval,
            resource,
            started: unix_nanos(SystemTime::now()),
        })
    }

    /// How often the metrics are sent.
    pub(super) fn interval(&self) -> Duration {
        self.interval
    }

    /// Sends what `metrics` holds now; a failure is counted
    /// (`toolhost_metric_exports_failed_total`), never retried: the next
    /// push carries the same totals.
    pub(super) async fn push(&self, metrics: &Metrics) {
        let request =
            request(&metrics.registry().gather(), &self.resource, self.started, unix_nanos(SystemTime::now()));
        let sent = tokio::time::timeout(self.timeout, self.send(request)).await;
        let failure = match sent {
            Ok(Ok(())) => return,
            Ok(Err(e)) => format!("{e:#}"),
            Err(_) => format!("no answer within {:?}", self.timeout),
        };
        metrics.metric_exports_failed.inc();
        tracing::debug!("exporting metrics failed: {failure}");
    }

    async fn send(&self, request: ExportMetricsServiceRequest) -> Result<()> {
        match &self.sender {
            Sender::Http { client, url, headers } => {
                let response = client
                    .post(url)
                    .headers(headers.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
                    .body(request.encode_to_vec())
                    .send()
                    .await?;
                let status = response.status();
                anyhow::ensure!(status.is_success(), "the collector answered {status}");
            }
            Sender::Grpc { client, headers } => {
                let mut call = tonic::Request::new(request);
                *call.metadata_mut() = headers.clone();
                client.clone().export(call).await?;
            }
        }
        Ok(())
    }
}

fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn text(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.into())) }),
        ..Default::default()
    }
}

/// The export request for `families`, cumulative from `start` to `now`
/// (Unix nanoseconds).
fn request(families: &[MetricFamily], resource: &ProtoResource, start: u64, now: u64) -> ExportMetricsServiceRequest {
    let metrics = families.iter().filter_map(|family| metric(family, start, now)).collect();
    let scope = InstrumentationScope {
        name: "toolhost".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![ScopeMetrics { scope: Some(scope), metrics, schema_url: String::new() }],
            schema_url: String::new(),
        }],
    }
}

const CUMULATIVE: i32 = AggregationTemporality::Cumulative as i32;

/// One family as an OTLP metric.
fn metric(family: &MetricFamily, start: u64, now: u64) -> Option<Metric> {
    let attributes = |labels: &[LabelPair]| labels.iter().map(|l| text(l.name(), l.value())).collect();
    let number = |labels: &[LabelPair], value: f64| NumberDataPoint {
        attributes: attributes(labels),
        start_time_unix_nano: start,
        time_unix_nano: now,
        value: Some(number_data_point::Value::AsDouble(value)),
        ..Default::default()
    };
    let points = family.get_metric();
    let mut name = family.name();
    let data = match family.get_field_type() {
        MetricType::COUNTER => {
            name = name.strip_suffix("_total").unwrap_or(name);
            metric::Data::Sum(Sum {
                data_points: points.iter().map(|m| number(m.get_label(), m.get_counter().get_value())).collect(),
                aggregation_temporality: CUMULATIVE,
                is_monotonic: true,
            })
        }
        MetricType::GAUGE => metric::Data::Gauge(Gauge {
            data_points: points.iter().map(|m| number(m.get_label(), m.get_gauge().get_value())).collect(),
        }),
        // The registry makes none (the type is the text format's, on its way out).
        MetricType::UNTYPED => return None,
        MetricType::HISTOGRAM => metric::Data::Histogram(Histogram {
            data_points: points
                .iter()
                .map(|m| {
                    let histogram = m.get_histogram();
                    let finite: Vec<_> =
                        histogram.get_bucket().iter().filter(|b| b.upper_bound().is_finite()).collect();
                    let mut below = 0;
                    let mut bucket_counts: Vec<u64> = finite
                        .iter()
                        .map(|b| {
                            let count = b.cumulative_count().saturating_sub(below);
                            below = b.cumulative_count();
                            count
                        })
                        .collect();
                    bucket_counts.push(histogram.get_sample_count().saturating_sub(below));
                    HistogramDataPoint {
                        attributes: attributes(m.get_label()),
                        start_time_unix_nano: start,
                        time_unix_nano: now,
                        count: histogram.get_sample_count(),
                        sum: Some(histogram.get_sample_sum()),
                        bucket_counts,
                        explicit_bounds: finite.iter().map(|b| b.upper_bound()).collect(),
                        ..Default::default()
                    }
                })
                .collect(),
            aggregation_temporality: CUMULATIVE,
        }),
        MetricType::SUMMARY => metric::Data::Summary(Summary {
            data_points: points
                .iter()
                .map(|m| {
                    let summary = m.get_summary();
                    SummaryDataPoint {
                        attributes: attributes(m.get_label()),
                        start_time_unix_nano: start,
                        time_unix_nano: now,
                        count: summary.sample_count(),
                        sum: summary.sample_sum(),
                        quantile_values: summary
                            .get_quantile()
                            .iter()
                            .map(|q| summary_data_point::ValueAtQuantile { quantile: q.quantile(), value: q.value() })
                            .collect(),
                        ..Default::default()
                    }
                })
                .collect(),
        }),
    };
    let unit = if name.ends_with("_seconds") { "s" } else { "" };
    Some(Metric {
        name: name.to_owned(),
        description: family.help().to_owned(),
        unit: unit.to_owned(),
        data: Some(data),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point_value(point: &NumberDataPoint) -> f64 {
        match point.value {
            Some(number_data_point::Value::AsDouble(v)) => v,
            other => panic!("a double expected, got {other:?}"),
        }
    }

    #[test]
    fn counters_gauges_and_histograms_map_as_the_otel_data_model_says() {
        let metrics = Metrics::new();
        let read = metrics.tool("Read");
        for _ in 0..3 {
            read.count("ok", "allow_rule");
        }
        metrics.calls_waiting.set(2);
        for ms in [0.05, 0.3, 0.3, 40_000.0] {
            read.phase(crate::telemetry::metrics::Phase::Call, Duration::from_secs_f64(ms / 1000.0));
        }
        let request = request(&metrics.registry().gather(), &ProtoResource::default(), 10, 20);
        let scope = &request.resource_metrics[0].scope_metrics[0];
        let find =
            |name: &str| scope.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}"));

        let Some(metric::Data::Sum(calls)) = &find("toolhost_calls").data else { panic!("calls is not a sum") };
        assert!(calls.is_monotonic && calls.aggregation_temporality == CUMULATIVE);
        let point = &calls.data_points[0];
        assert_eq!(point_value(point), 3.0);
        assert_eq!((point.start_time_unix_nano, point.time_unix_nano), (10, 20));
        let labels: Vec<(&str, String)> = point
            .attributes
            .iter()
            .map(|kv| match &kv.value.as_ref().unwrap().value {
                Some(any_value::Value::StringValue(s)) => (kv.key.as_str(), s.clone()),
                other => panic!("a string label expected, got {other:?}"),
            })
            .collect();
        assert_eq!(labels, [("outcome", "ok".into()), ("step", "allow_rule".into()), ("tool", "Read".into())]);

        let Some(metric::Data::Gauge(waiting)) = &find("toolhost_calls_waiting").data else { panic!("not a gauge") };
        assert_eq!(point_value(&waiting.data_points[0]), 2.0);

        let phase = find("toolhost_call_phase_seconds");
        assert_eq!(phase.unit, "s");
        let Some(metric::Data::Histogram(histogram)) = &phase.data else { panic!("not a histogram") };
        let point = &histogram.data_points[0];
        assert_eq!(point.count, 4);
        assert_eq!(point.bucket_counts.len(), point.explicit_bounds.len() + 1);
        assert_eq!(point.bucket_counts.iter().sum::<u64>(), 4, "per-bucket counts, not cumulative");
        assert_eq!(point.bucket_counts[0], 1, "0.05 ms is in the first bucket (≤ 100 µs)");
        assert_eq!(*point.bucket_counts.last().unwrap(), 1, "40 s is above every bound");
        assert!(point.explicit_bounds.iter().all(|b| b.is_finite()));
    }
}
