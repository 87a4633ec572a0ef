//! Where and how a signal (traces, metrics) goes to the collector, as
//! `[telemetry]` and the `OTEL_*` environment say. The OpenTelemetry SDK
//! configuration rules: the settings before the environment, a signal's own
//! variable (`OTEL_EXPORTER_OTLP_METRICS_HEADERS`) before the general one
//! (`OTEL_EXPORTER_OTLP_HEADERS`); a general endpoint is a base the signal's
//! path is added to, a signal's own is used as it is.
//!
//! A value that cannot be read (a header without `=`, a timeout that is not
//! a number of milliseconds) stops the start with an error naming the
//! variable, rather than sending without it.

use std::time::Duration;

use anyhow::{Result, bail};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::TelemetrySettings;
use crate::escape;

/// A kind of telemetry sent over OTLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    /// The part of the signal's own variables: `OTEL_EXPORTER_OTLP_{TRACES}_…`.
    fn var_part(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }

    /// The path an HTTP collector takes the signal on.
    fn http_path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
        }
    }
}

/// How a signal is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    /// OTLP/HTTP with protobuf bodies.
    Http,
    /// OTLP/gRPC.
    Grpc,
}

/// An environment variable's value, `None` when unset or blank.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The signal's own variable `OTEL_EXPORTER_OTLP_{SIGNAL}_{what}`, else the
/// general `OTEL_EXPORTER_OTLP_{what}`, with the name of the one set.
fn signal_var(signal: Signal, what: &str) -> Option<(String, String)> {
    let own = format!("OTEL_EXPORTER_OTLP_{}_{what}", signal.var_part());
    let general = format!("OTEL_EXPORTER_OTLP_{what}");
    var(&own).map(|v| (own, v)).or_else(|| var(&general).map(|v| (general, v)))
}

/// Whether `signal` is sent: an endpoint in `[telemetry]` or the
/// environment, `OTEL_SDK_DISABLED` not `true`, and the signal's exporter
/// (`OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`) not `none`.
pub(super) fn configured(settings: &TelemetrySettings, signal: Signal) -> bool {
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let exporter = var(&format!("OTEL_{}_EXPORTER", signal.var_part()));
    !disabled
        && !exporter.is_some_and(|e| e.eq_ignore_ascii_case("none"))
        && (settings.otlp_endpoint.is_some() || signal_var(signal, "ENDPOINT").is_some())
}

/// gRPC when the settings (or the `OTEL_EXPORTER_OTLP_*PROTOCOL`
/// environment) say `grpc`, else HTTP/protobuf.
pub(super) fn transport(settings: &TelemetrySettings, signal: Signal) -> Result<Transport> {
    let protocol = match &settings.protocol {
        Some(p) => p.clone(),
        None => signal_var(signal, "PROTOCOL").map(|(_, v)| v).unwrap_or_else(|| "http/protobuf".into()),
    };
    match protocol.trim() {
        "grpc" => Ok(Transport::Grpc),
        "http/protobuf" => Ok(Transport::Http),
        other => bail!(
            "the OTLP protocol \"{other}\" is not supported; set [telemetry] protocol (or OTEL_EXPORTER_OTLP_PROTOCOL) \
             to \"http/protobuf\" or \"grpc\""
        ),
    }
}

/// The URL the signal is sent to, `None` when neither the settings nor the
/// environment name one. Over HTTP a base (`[telemetry] otlp_endpoint`,
/// `OTEL_EXPORTER_OTLP_ENDPOINT`) gets the signal's path; over gRPC the
/// endpoint is the server's.
pub(super) fn endpoint(settings: &TelemetrySettings, signal: Signal, transport: Transport) -> Option<String> {
    let (base, own) = match &settings.otlp_endpoint {
        Some(endpoint) => (endpoint.clone(), false),
        None => {
            let (name, value) = signal_var(signal, "ENDPOINT")?;
            (value, name.contains(signal.var_part()))
        }
    };
    let base = base.trim_end_matches('/');
    Some(match transport {
        Transport::Http if !own && !base.ends_with(signal.http_path()) => format!("{base}{}", signal.http_path()),
        _ => base.to_owned(),
    })
}

/// The headers every export of the signal carries:
/// `OTEL_EXPORTER_OTLP_{SIGNAL}_HEADERS` when set, else
/// `OTEL_EXPORTER_OTLP_HEADERS` (the signal's own replaces the general one,
/// as the trace exporter reads them too); `key=value` pairs separated by
/// commas, values percent-encoded, each checked to be valid in HTTP.
pub(super) fn headers(signal: Signal) -> Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    if let Some((name, value)) = signal_var(signal, "HEADERS") {
        add_headers(&name, &value, &mut headers)?;
    }
    Ok(headers)
}

/// Adds the `key=value,…` pairs of the variable `name` to `headers`, a
/// later pair replacing an earlier one of the same name. A value is never
/// quoted back in an error: a header is often a secret.
fn add_headers(name: &str, value: &str, headers: &mut HeaderMap) -> Result<()> {
    for (n, pair) in value.split(',').map(str::trim).filter(|p| !p.is_empty()).enumerate() {
        let entry = n + 1;
        let Some((key, value)) = pair.split_once('=') else {
            bail!(
                "{name}: entry {entry} is not key=value (its text is not shown, it may be a secret); give pairs \
                 like api-key=secret,tenant=a"
            );
        };
        let key = key.trim();
        if key.is_empty() {
            bail!("{name}: entry {entry} has no name; give pairs like api-key=secret");
        }
        let Ok(key) = HeaderName::try_from(key) else {
            bail!("{name}: entry {entry}'s name \"{}\" is not a valid HTTP header name", escape::line(key));
        };
        let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
        let Ok(value) = HeaderValue::try_from(value.as_ref()) else {
            bail!(
                "{name}: entry {entry}'s value is not valid in an HTTP header (a line break or other control \
                 character; its text is not shown)"
            );
        };
        headers.insert(key, value);
    }
    Ok(())
}

/// How long one export may take: `OTEL_EXPORTER_OTLP_{SIGNAL}_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` in milliseconds, else 10 s.
pub(super) fn timeout(signal: Signal) -> Result<Duration> {
    match signal_var(signal, "TIMEOUT") {
        None => Ok(Duration::from_secs(10)),
        Some((name, value)) => millis(&name, &value),
    }
}

/// A positive number of milliseconds read from the variable `name`.
pub(super) fn millis(name: &str, value: &str) -> Result<Duration> {
    match value.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => bail!("{name} = \"{value}\" is not a number of milliseconds above 0; give one like 10000"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(endpoint: Option<&str>) -> TelemetrySettings {
        TelemetrySettings { otlp_endpoint: endpoint.map(str::to_owned), ..TelemetrySettings::default() }
    }

    #[test]
    fn a_base_from_the_settings_gets_the_signals_path_over_http_only() {
        let s = settings(Some("http://collector:4318/"));
        assert_eq!(endpoint(&s, Signal::Metrics, Transport::Http).as_deref(), Some("http://collector:4318/v1/metrics"));
        assert_eq!(endpoint(&s, Signal::Traces, Transport::Http).as_deref(), Some("http://collector:4318/v1/traces"));
        assert_eq!(endpoint(&s, Signal::Metrics, Transport::Grpc).as_deref(), Some("http://collector:4318"));
        let full = settings(Some("http://collector:4318/v1/metrics"));
        assert_eq!(
            endpoint(&full, Signal::Metrics, Transport::Http).as_deref(),
            Some("http://collector:4318/v1/metrics")
        );
    }

    #[test]
    fn headers_are_decoded_and_a_later_variable_wins_for_a_key() {
        let mut headers = HeaderMap::new();
        add_headers("OTEL_EXPORTER_OTLP_HEADERS", "Api-Key=a%20b, tenant=one", &mut headers).unwrap();
        add_headers("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "tenant=two", &mut headers).unwrap();
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.to_str().unwrap())).collect();
        assert_eq!(pairs, [("api-key", "a b"), ("tenant", "two")]);
        let error =
            add_headers("OTEL_EXPORTER_OTLP_HEADERS", "a=b,secret-token", &mut headers).unwrap_err().to_string();
        assert!(error.contains("OTEL_EXPORTER_OTLP_HEADERS") && error.contains("entry 2"), "{error}");
        assert!(!error.contains("secret-token"), "a malformed header is quoted back: {error}");
    }

    #[test]
    fn a_header_value_cannot_inject_another_header_and_is_not_quoted() {
        let mut headers = HeaderMap::new();
        for value in ["api-key=s3cret%0D%0AX-Injected: yes", "api-key=s3cret%00"] {
            let error = add_headers("OTEL_EXPORTER_OTLP_HEADERS", value, &mut headers).unwrap_err().to_string();
            assert!(error.contains("entry 1") && error.contains("not valid in an HTTP header"), "{error}");
            assert!(!error.contains("s3cret") && !error.contains("Injected"), "the value is quoted back: {error}");
        }
        assert!(headers.is_empty(), "{headers:?}");
        let error = add_headers("OTEL_EXPORTER_OTLP_HEADERS", "bad name=x", &mut headers).unwrap_err().to_string();
        assert!(error.contains("not a valid HTTP header name"), "{error}");
    }

    #[test]
    fn milliseconds_must_be_a_positive_number() {
        assert_eq!(millis("X", "250").unwrap(), Duration::from_millis(250));
        for bad in ["0", "-1", "1.5", "ten"] {
            let error = millis("OTEL_METRIC_EXPORT_INTERVAL", bad).unwrap_err().to_string();
            assert!(error.contains("OTEL_METRIC_EXPORT_INTERVAL") && error.contains(bad), "{error}");
        }
    }
}
