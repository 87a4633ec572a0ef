//! The `[telemetry]` table of `toolhost.toml`: where traces go, how many
//! are kept, and where Prometheus scrapes the metrics (the telemetry itself
//! is the host's, `toolhost::telemetry`).

use serde::{Deserialize, Serialize};

/// The `[telemetry]` table of `toolhost.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The OTLP collector traces are sent to (`http://host:4318` for
    /// HTTP/protobuf, `http://host:4317` for gRPC); unset, the
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
    /// environment variables decide, and without them no trace is made.
    pub otlp_endpoint: Option<String>,
    /// `http/protobuf` or `grpc`; unset, `OTEL_EXPORTER_OTLP_PROTOCOL`
    /// decides, else `http/protobuf`.
    pub protocol: Option<String>,
    /// The `service.name` of the traces (default `toolhost`, or
    /// `OTEL_SERVICE_NAME`).
    pub service_name: Option<String>,
    /// The share of calls traced, 0.0 to 1.0, when the caller's trace
    /// context does not decide (a sampled parent is always followed).
    pub sample_ratio: f64,
    /// Record the tool's input and output on the call span, redacted with
    /// the audit log's rules (off: neither is recorded).
    pub record_input: bool,
    /// Finished spans that may wait for the exporter; past that they are
    /// dropped and counted (`toolhost_trace_spans_dropped_total`).
    pub queue: usize,
    /// Where `toolhost serve` serves Prometheus metrics on `/metrics`
    /// (as `serve --metrics ADDR`).
    pub metrics_addr: Option<String>,
}

/// The most spans `[telemetry] queue` may hold.
pub const MAX_QUEUE: usize = 1 << 16;

impl Default for TelemetrySettings {
    /// No traces, every call sampled once there are, 2 048 spans queued,
    /// no metrics endpoint.
    fn default() -> Self {
        TelemetrySettings {
            otlp_endpoint: None,
            protocol: None,
            service_name: None,
            sample_ratio: 1.0,
            record_input: false,
            queue: 2048,
            metrics_addr: None,
        }
    }
}

impl TelemetrySettings {
    /// Checks the ratio, the protocol and the queue; the error names the
    /// key, the value and what it may be.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(format!(
                "[telemetry] sample_ratio = {} is not a share of calls; give a number from 0.0 to 1.0",
                self.sample_ratio
            ));
        }
        if let Some(protocol) = &self.protocol
            && protocol != "http/protobuf"
            && protocol != "grpc"
        {
            return Err(format!(
                "[telemetry] protocol = \"{protocol}\" is not known; give \"http/protobuf\" or \"grpc\""
            ));
        }
        if self.queue == 0 || self.queue > MAX_QUEUE {
            return Err(format!("[telemetry] queue = {} must be from 1 to {MAX_QUEUE} spans", self.queue));
        }
        Ok(())
    }
}
