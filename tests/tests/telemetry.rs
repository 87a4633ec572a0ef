//! Traces and metrics end to end, with real receivers: OTLP receivers over
//! HTTP and gRPC decoding with the official protobuf definitions
//! (`support/otlp.rs`) get the span trees and the metrics of real calls,
//! over MCP from `toolhost serve` and from the library; a real Prometheus
//! server (`.ci/prometheus.sh`) scrapes `serve --metrics`.

#[path = "support/otlp.rs"]
mod otlp;

use std::time::{Duration, Instant};

use otlp::{Receiver, Span, all_text, attr, children, metric, number, of_trace, one};
use serde_json::{Value, json};
use toolhost::settings::Settings;
use toolhost::{PermissionAnswer, Toolhost};
use toolhost_e2e::mcp::{HttpServer, Transport, client, http_get, raw, serve_args};
use toolhost_e2e::{Scratch, call, guest, mcp_python, root, toolhost_bin};

/// The W3C context an agent sends: its trace and the span of its tool call.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN: &str = "00f067aa0ba902b7";

/// Text of the input that must never reach a span unless asked for.
const SECRET: &str = "INPUT-TEXT-MUST-NOT-LEAK";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `[telemetry]` sending to `receiver`, and the given lines.
fn telemetry_toml(receiver: &Receiver, extra: &str) -> String {
    format!("[telemetry]\notlp_endpoint = {:?}\n{extra}", receiver.url())
}

/// A host over `settings` with its exporter aimed at `receiver`.
async fn traced_host(scratch: &Scratch, receiver: &Receiver, mut settings: Settings) -> Toolhost {
    settings.telemetry.otlp_endpoint = Some(receiver.url());
    scratch.host(settings).await
}

/// Settings with the `echo` plugin and no built-ins.
fn echo_only(scratch: &Scratch) -> Settings {
    let mut settings = scratch.settings();
    settings.builtins = false;
    settings.plugins.push(guest("echo"));
    settings
}

/// Sends what the host queued (the tests need not wait for a batch).
async fn flush(host: &Toolhost) {
    host.telemetry().expect("telemetry is on").flush(Duration::from_secs(10)).await;
}

/// The span of the call of `tool`, once it and its `n` descendants (at
/// least) arrived.
fn call_span(receiver: &Receiver, name: &str) -> (Span, Vec<Span>) {
    let spans = receiver.wait(name, |spans| spans.iter().any(|s| s.name == name));
    let span = one(&spans, name).clone();
    let trace = of_trace(&spans, &span.trace_id);
    (span, trace)
}

/// `serve --http` in `scratch` with `toolhost.toml` holding `settings`.
fn serve(scratch: &Scratch, settings: &str, args: &[&str]) -> HttpServer {
    std::fs::write(scratch.work().join("toolhost.toml"), settings).unwrap();
    HttpServer::start(scratch, args)
}

/// A 2026-07-28 `tools/call` over raw HTTP with `_meta` entries and HTTP
/// headers of our own; the reply's result.
fn modern_call(addr: &str, tool: &str, args: Value, meta: Value, extra_headers: &[(&str, &str)]) -> Value {
    let (body, headers) = raw::modern("tools/call", json!({"name": tool, "arguments": args}));
    let mut body: Value = serde_json::from_str(&body).unwrap();
    for (key, value) in meta.as_object().unwrap() {
        body["params"]["_meta"][key] = value.clone();
    }
    let mut headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    headers.extend_from_slice(extra_headers);
    let (answer, _) = raw::exchange(addr, &raw::request(addr, "POST", &headers, &body.to_string()));
    let reply = raw::reply(&answer).unwrap_or_else(|| panic!("no JSON-RPC reply: {answer}"));
    reply["result"].clone()
}

#[test]
fn an_mcp_call_continues_the_agents_trace_with_its_steps_and_no_input() {
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    let server = serve(&scratch, &telemetry_toml(&receiver, ""), &["--allow", "Bash"]);
    let traceparent = format!("00-{TRACE_ID}-{AGENT_SPAN}-01");
    // Writes a file: not read-only, so the allow rule decides.
    let args = json!({"command": format!("echo {SECRET} > said.txt")});
    let result = modern_call(&server.addr(), "Bash", args, json!({"traceparent": traceparent}), &[]);
    assert_eq!(result["isError"], false, "{result}");

    let (span, trace) = call_span(&receiver, "execute_tool Bash");
    // A child of the agent's span, in the agent's trace.
    assert_eq!(hex(&span.trace_id), TRACE_ID);
    assert_eq!(hex(&span.parent_span_id), AGENT_SPAN);
    for (key, value) in [
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "Bash"),
        ("toolhost.decision.behavior", "allow"),
        ("toolhost.decision.step", "allow_rule"),
        ("toolhost.decision.rule", "Bash"),
        ("toolhost.mode", "default"),
        ("toolhost.outcome", "success"),
    ] {
        assert_eq!(attr(&span, key).as_deref(), Some(value), "{key} of {span:?}");
    }
    assert!(attr(&span, "gen_ai.tool.call.id").is_some_and(|id| !id.is_empty()));
    assert!(attr(&span, "toolhost.plugin.sha256").is_some_and(|h| h.len() == 64), "{span:?}");
    assert!(attr(&span, "toolhost.output.bytes").is_some(), "{span:?}");
    // The steps: the decision instance, then the call instance, in which
    // the host spawned the command.
    assert_eq!(children(&trace, &span), ["call", "decide"]);
    let trace = receiver.wait("the host operation", |spans| spans.iter().any(|s| s.name == "host spawn"));
    let trace = of_trace(&trace, &span.trace_id);
    assert!(children(&trace, one(&trace, "call")).contains(&"host spawn".to_string()), "{trace:?}");
    assert!(!all_text(&receiver.spans()).contains(SECRET), "the input reached a span: {}", all_text(&trace));
    assert_eq!(receiver.service_names().first().map(String::as_str), Some("toolhost"));

    // The same context in HTTP headers (a client that puts it there).
    let other = "0af7651916cd43dd8448eb211c80319c";
    let header = format!("00-{other}-b7ad6b7169203331-01");
    let result =
        modern_call(&server.addr(), "Bash", json!({"command": "true"}), json!({}), &[("traceparent", &header)]);
    assert_eq!(result["isError"], false, "{result}");
    let spans = receiver.wait("the second call", |spans| spans.iter().any(|s| hex(&s.trace_id) == other));
    let second = one(&of_trace(&spans, &hex_bytes(other)), "execute_tool Bash").clone();
    assert_eq!(hex(&second.parent_span_id), "b7ad6b7169203331");
}

fn hex_bytes(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_has_only_its_decision_and_an_unknown_name_is_not_repeated() {
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    let mut settings = scratch.settings();
    settings.permissions.deny = vec!["Bash".into()];
    let host = traced_host(&scratch, &receiver, settings).await;
    let r = call(&host, "Bash", json!({"command": format!("echo {SECRET}")}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, toolhost::response::ResultState::Denied, "{r:?}");
    // A model's made-up name: neither the span name nor an attribute keeps it.
    let hostile = "Evil\u{202e}Tool-with-a-long-attacker-chosen-name";
    let r = call(&host, hostile, json!({}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, toolhost::response::ResultState::Error, "{r:?}");
    flush(&host).await;

    let (span, trace) = call_span(&receiver, "execute_tool Bash");
    assert_eq!(attr(&span, "toolhost.decision.behavior").as_deref(), Some("deny"));
    assert_eq!(attr(&span, "toolhost.decision.step").as_deref(), Some("deny_rule"));
    assert_eq!(attr(&span, "toolhost.outcome").as_deref(), Some("denied"));
    assert_eq!(children(&trace, &span), ["decide"], "no call instance for a denied call");
    let (unknown, _) = call_span(&receiver, "execute_tool (unknown)");
    assert_eq!(attr(&unknown, "gen_ai.tool.name").as_deref(), Some("(unknown)"));
    let text = all_text(&receiver.spans());
    assert!(!text.contains("Evil") && !text.contains(SECRET), "{text}");
    // The metrics' label is just as fixed.
    let metrics = host.metrics_text().unwrap();
    assert!(metrics.contains(r#"toolhost_calls_total{outcome="error",step="none",tool="(unknown)"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"toolhost_calls_total{outcome="denied",step="deny_rule",tool="Bash"} 1"#), "{metrics}");
    assert!(!metrics.contains("Evil") && !metrics.contains(SECRET));
}

/// A compare-and-set of agent state that finds another value is counted
/// for its tool (`toolhost_state_conflicts_total`): the second call of a
/// plugin that creates three keys only where they are absent finds all
/// three there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_conflicts_are_counted_by_tool() {
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    let mut settings = scratch.settings();
    settings.builtins = false;
    settings.plugins.push(guest("state-hoarder"));
    settings.grants.entry("StateHoarder".into()).or_default().add_grant("state").unwrap();
    settings.permissions.allow = vec!["StateHoarder".into()];
    let host = traced_host(&scratch, &receiver, settings).await;
    let series = r#"toolhost_state_conflicts_total{tool="StateHoarder"}"#;
    let input = json!({"keys": 3, "bytes": 1, "cas": true});
    for expected in [0, 3] {
        let r = call(&host, "StateHoarder", input.clone(), PermissionAnswer::Deny).await;
        assert!(r.text().contains("stored 3\n"), "{r:?}");
        let metrics = host.metrics_text().unwrap();
        assert!(metrics.contains(&format!("{series} {expected}\n")), "{expected} expected: {metrics}");
    }
}

#[test]
fn an_asked_call_answered_over_mcp_shows_the_ask_and_the_answer() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    let server = serve(&scratch, &telemetry_toml(&receiver, ""), &[]);
    let file = scratch.work().join("asked.txt");
    let args = json!({"file_path": file.display().to_string(), "content": format!("{SECRET}\n")});
    let transport = server.transport(None);
    let r = client(
        py,
        &scratch,
        &transport,
        "legacy",
        "elicit",
        json!({"tool": "Write", "args": args, "answer": "allow_once"}),
    );
    assert_eq!(r["is_error"], false, "{r}");
    assert!(matches!(transport, Transport::Http { .. }));

    let (span, trace) = call_span(&receiver, "execute_tool Write");
    assert_eq!(attr(&span, "toolhost.decision.behavior").as_deref(), Some("ask"));
    assert_eq!(attr(&span, "toolhost.decision.answer").as_deref(), Some("allow_once"));
    assert_eq!(attr(&span, "toolhost.outcome").as_deref(), Some("success"));
    assert_eq!(children(&trace, &span), ["call", "decide"]);
    let spans = receiver.wait("the write", |spans| spans.iter().any(|s| s.name == "host write_file"));
    let trace = of_trace(&spans, &span.trace_id);
    assert!(children(&trace, one(&trace, "call")).contains(&"host write_file".to_string()));
    assert!(!all_text(&receiver.spans()).contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn middleware_layers_nest_around_the_call_instance() {
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    let mut settings = echo_only(&scratch);
    for m in ["mw-mark-a", "mw-mark-b"] {
        settings.middleware.files.push(guest(m));
    }
    settings.middleware.attach.insert("Echo".into(), vec!["mw-mark-a".into(), "mw-mark-b".into()]);
    let host = traced_host(&scratch, &receiver, settings).await;
    let r = call(&host, "Echo", json!({"text": SECRET}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.text(), format!("<a><b>{SECRET}</b></a>"));
    flush(&host).await;

    let (span, trace) = call_span(&receiver, "execute_tool Echo");
    assert_eq!(children(&trace, &span), ["decide", "middleware mw-mark-a"]);
    assert_eq!(children(&trace, one(&trace, "middleware mw-mark-a")), ["middleware mw-mark-b"]);
    assert_eq!(children(&trace, one(&trace, "middleware mw-mark-b")), ["call"]);
    assert!(!all_text(&trace).contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_input_and_output_are_redacted() {
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    let mut settings = echo_only(&scratch);
    settings.telemetry.record_input = true;
    let host = traced_host(&scratch, &receiver, settings).await;
    let text = "deploy with password=hunter2 and key AKIAABCDEFGHIJKLMNOP";
    let r = call(&host, "Echo", json!({"text": text}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.text(), text);
    flush(&host).await;

    let (span, _) = call_span(&receiver, "execute_tool Echo");
    let input = attr(&span, "gen_ai.tool.call.arguments").expect("the input is recorded");
    let output = attr(&span, "gen_ai.tool.call.result").expect("the output is recorded");
    for recorded in [&input, &output] {
        assert!(recorded.contains("deploy with"), "{recorded}");
        assert!(!recorded.contains("hunter2") && !recorded.contains("AKIAABCDEFGHIJKLMNOP"), "{recorded}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_mcp_call_is_a_span_whose_context_the_server_receives() {
    let Some(py) = mcp_python() else { return };
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    let script = root().join("tests/mcp/upstream_server.py").display().to_string();
    let table = format!(
        "[permissions]\nallow = [\"mcp__up__traceparent\"]\n[mcp_servers.up]\ncommand = {:?}\nargs = [{script:?}, \"stdio\"]\n",
        py.display().to_string()
    );
    let mut settings = scratch.settings_file(&table);
    settings.builtins = false;
    let host = traced_host(&scratch, &receiver, settings).await;
    let problems = host.upstream_problems();
    assert!(problems.is_empty(), "{problems:?}");
    let r = call(&host, "mcp__up__traceparent", json!({}), PermissionAnswer::Deny).await;
    let received = r.text();
    flush(&host).await;

    let (span, trace) = call_span(&receiver, "execute_tool mcp__up__traceparent");
    assert_eq!(children(&trace, one(&trace, "call")), ["mcp tools/call up"]);
    let request = one(&trace, "mcp tools/call up");
    // The server got the request span's context in `_meta`.
    assert_eq!(received, format!("00-{}-{}-01", hex(&span.trace_id), hex(&request.span_id)), "{r:?}");
}

/// A collector that hangs, or is not there: every call still ends as fast
/// as without telemetry (within a generous bound for a shared machine),
/// and the spans that could not go are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_or_missing_collector_neither_slows_nor_blocks_calls() {
    let scratch = Scratch::new();
    let hanging = Receiver::hanging();
    let missing = {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        format!("http://127.0.0.1:{port}")
    };
    let plain = echo_only(&scratch);
    let baseline = scratch.host(plain.clone()).await;
    let calls = 200;
    let time = |host: Toolhost| async move {
        let started = Instant::now();
        let mut slowest = Duration::ZERO;
        for i in 0..calls {
            let one = Instant::now();
            let r = call(&host, "Echo", json!({"text": format!("call {i}")}), PermissionAnswer::AllowOnce).await;
            assert_eq!(r.text(), format!("call {i}"));
            slowest = slowest.max(one.elapsed());
        }
        (started.elapsed(), slowest, host)
    };
    let (untraced, _, _) = time(baseline).await;
    for endpoint in [hanging.url(), missing] {
        let mut settings = plain.clone();
        settings.telemetry.otlp_endpoint = Some(endpoint.clone());
        settings.telemetry.queue = 16;
        let host = scratch.host(settings).await;
        let (traced, slowest, host) = time(host).await;
        assert!(
            traced < untraced * 2 + Duration::from_millis(500),
            "{endpoint}: {calls} calls took {traced:?}, against {untraced:?} without telemetry"
        );
        assert!(slowest < Duration::from_secs(1), "{endpoint}: a call took {slowest:?}");
        // The queue holds 16 spans: the rest were dropped, and counted.
        let dropped = wait_for_metric(&host, "toolhost_trace_spans_dropped_total", |n| n > 0);
        assert!(dropped <= (calls * 4) as u64, "{dropped}");
    }
}

/// `serve` pushes its metrics to the collector on
/// `OTEL_METRIC_EXPORT_INTERVAL` while it runs, not only when it ends: the
/// counts of the calls made, the latency histogram, the resource, and the
/// headers of `OTEL_EXPORTER_OTLP_METRICS_HEADERS` on the metrics only.
#[test]
fn serve_pushes_its_metrics_over_otlp_on_the_interval() {
    let scratch = Scratch::new();
    let receiver = Receiver::start();
    std::fs::write(scratch.work().join("toolhost.toml"), telemetry_toml(&receiver, "")).unwrap();
    let mut args: Vec<String> = [
        "env",
        "OTEL_METRIC_EXPORT_INTERVAL=200",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS=x-tenant=team%20a",
        "OTEL_SERVICE_NAME=tools-east",
    ]
    .map(String::from)
    .to_vec();
    args.extend(serve_args(&["--http", "127.0.0.1:0", "--allow", "Bash"]));
    let server = HttpServer::spawn(&scratch, &args);
    let calls: u32 = 5;
    for i in 0..calls {
        let result =
            modern_call(&server.addr(), "Bash", json!({"command": format!("echo {SECRET} {i}")}), json!({}), &[]);
        assert_eq!(result["isError"], false, "{result}");
    }
    let bash = [("tool", "Bash"), ("outcome", "success")];
    let export = receiver
        .wait_metrics("the calls counted", |export| number(export, "toolhost_calls", &bash) == Some(f64::from(calls)));
    // `server` still runs: the counts came on the interval, not at its end.
    let Some(metric::Data::Histogram(phases)) = &metric(&export, "toolhost_call_phase_seconds").unwrap().data else {
        panic!("the phases are a histogram")
    };
    let call_phase = phases
        .data_points
        .iter()
        .find(|p| p.attributes.iter().any(|kv| kv.key == "phase" && format!("{:?}", kv.value).contains("\"call\"")))
        .expect("a call phase point");
    assert_eq!(call_phase.count, u64::from(calls));
    assert_eq!(call_phase.bucket_counts.iter().sum::<u64>(), u64::from(calls));
    let resource = export.resource_metrics[0].resource.as_ref().unwrap();
    assert!(
        resource
            .attributes
            .iter()
            .any(|kv| kv.key == "service.name" && format!("{:?}", kv.value).contains("tools-east")),
        "{resource:?}"
    );
    assert!(!format!("{export:?}").contains(SECRET), "the metrics carry tool input");
    let exports = receiver.exports();
    let tenant = |signal: &str| {
        exports
            .iter()
            .filter(|(s, _)| s == signal)
            .all(|(_, headers)| headers.contains(&("x-tenant".to_string(), "team a".to_string())))
    };
    assert!(tenant("metrics"), "{exports:?}");
    assert!(exports.iter().any(|(s, _)| s == "traces"), "the traces went to the same collector: {exports:?}");
    assert!(!tenant("traces"), "the metrics' own headers reached the traces: {exports:?}");
}

/// Over gRPC, to the official services: the spans and the metrics of the
/// calls arrive, the metrics when the host flushes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_and_metrics_go_over_grpc() {
    let scratch = Scratch::new();
    let receiver = Receiver::grpc();
    let mut settings = echo_only(&scratch);
    settings.telemetry.protocol = Some("grpc".into());
    let host = traced_host(&scratch, &receiver, settings).await;
    let calls = 3;
    for i in 0..calls {
        let r = call(&host, "Echo", json!({"text": format!("{SECRET} {i}")}), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.text(), format!("{SECRET} {i}"));
    }
    flush(&host).await;

    let spans = receiver
        .wait("three call spans", |spans| spans.iter().filter(|s| s.name == "execute_tool Echo").count() == calls);
    let first = spans.iter().find(|s| s.name == "execute_tool Echo").unwrap();
    assert_eq!(children(&of_trace(&spans, &first.trace_id), first), ["call", "decide"]);
    let export = receiver.wait_metrics("the calls counted", |export| {
        number(export, "toolhost_calls", &[("tool", "Echo"), ("outcome", "success")]) == Some(calls as f64)
    });
    assert_eq!(number(&export, "toolhost_trace_spans_dropped", &[]), Some(0.0));
    assert!(!all_text(&spans).contains(SECRET) && !format!("{export:?}").contains(SECRET));
    let signals: std::collections::BTreeSet<String> = receiver.exports().into_iter().map(|(s, _)| s).collect();
    assert_eq!(signals.into_iter().collect::<Vec<_>>(), ["metrics", "traces"]);
}

/// An `OTEL_*` value toolhost cannot read stops `serve` with an error
/// naming the variable (and, unless it may be a secret, the value), rather
/// than sending without the API key or on a made-up interval.
#[test]
fn an_unreadable_otel_variable_stops_the_start_and_is_named() {
    let scratch = Scratch::new();
    for (name, value, quoted) in [
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key s3cret-value", false),
        // A line break would smuggle a header in; it is refused, unquoted.
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=s3cret%0D%0AX-Evil: 1", false),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon", true),
        ("OTEL_METRIC_EXPORT_INTERVAL", "0", true),
    ] {
        let out = std::process::Command::new(toolhost_bin())
            .args(["serve", "--http", "127.0.0.1:0"])
            .current_dir(scratch.work())
            .env("HOME", scratch.dir.path())
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
            .env(name, value)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("running toolhost serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}={value}: serve started; it said {stderr}");
        assert!(stderr.contains(name), "{name}={value}: {stderr}");
        // A header may be a secret: it is not quoted back.
        assert_eq!(stderr.contains(value), quoted, "{name}={value}: {stderr}");
        assert!(!stderr.contains("s3cret"), "{name}={value}: a header's value was quoted back: {stderr}");
    }
}

/// The value of an unlabelled metric once `done` says so (at most 20 s).
fn wait_for_metric(host: &Toolhost, name: &str, done: impl Fn(u64) -> bool) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = host.metrics_text().unwrap();
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        if done(value) {
            return value;
        }
        assert!(Instant::now() < deadline, "{name} stayed at {value}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The Prometheus server of `.ci/prometheus.sh`: its URL and the folder of
/// its scrape targets. `None` (the test skips) when it is not running,
/// except under `CI=true`, where that fails the test.
fn prometheus() -> Option<(String, std::path::PathBuf)> {
    let url = std::env::var("TOOLHOST_PROMETHEUS_URL").ok();
    let targets = std::env::var("TOOLHOST_PROMETHEUS_TARGETS").ok();
    match (url, targets) {
        (Some(url), Some(targets)) => Some((url, targets.into())),
        _ => {
            assert!(
                std::env::var("CI").is_err(),
                "no Prometheus server: TOOLHOST_PROMETHEUS_URL and TOOLHOST_PROMETHEUS_TARGETS are unset; run \
                 `source .ci/prometheus.sh`"
            );
            eprintln!("skipped: no Prometheus server (run `source .ci/prometheus.sh`)");
            None
        }
    }
}

#[test]
fn prometheus_scrapes_the_call_counter() {
    let Some((prometheus, targets)) = prometheus() else { return };
    let scratch = Scratch::new();
    let server = serve(&scratch, "", &["--allow", "Bash", "--metrics", "127.0.0.1:0"]);
    let addr = server.metrics_addr();
    let calls = 7;
    for i in 0..calls {
        let result =
            modern_call(&server.addr(), "Bash", json!({"command": format!("echo {SECRET} {i}")}), json!({}), &[]);
        assert_eq!(result["isError"], false, "{result}");
    }
    let (status, text) = http_get(&addr, "/metrics", None);
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains(SECRET), "the metrics carry tool input: {text}");

    // Prometheus scrapes it (file discovery, every second) under a label
    // of this run's own.
    let run = format!("run-{}-{}", std::process::id(), addr.replace([':', '.'], "-"));
    let target = targets.join(format!("{run}.json"));
    let entry = json!([{"targets": [addr], "labels": {"run": run}}]);
    std::fs::write(&target, entry.to_string()).unwrap();
    let _remove = Remove(target);
    let query = format!("sum(toolhost_calls_total{{run=\"{run}\",tool=\"Bash\",outcome=\"success\"}})");
    let path = format!("/api/v1/query?query={}", encode(&query));
    let prometheus = prometheus.trim_start_matches("http://").to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let value = loop {
        let (status, body) = http_get(&prometheus, &path, None);
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        if let Some(value) = answer["data"]["result"][0]["value"][1].as_str() {
            break value.to_string();
        }
        assert!(Instant::now() < deadline, "Prometheus never scraped {addr}: {answer}");
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(value, calls.to_string());
}

#[test]
fn metrics_off_loopback_need_a_token() {
    let scratch = Scratch::new();
    let out = scratch.cli_within(&["serve", "--metrics", "0.0.0.0:0"], Duration::from_secs(60)).expect("serve refuses");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--metrics-token"), "{stderr}");

    let server = serve(&scratch, "", &["--metrics", "127.0.0.1:0", "--metrics-token", "s3cret"]);
    let addr = server.metrics_addr();
    assert_eq!(http_get(&addr, "/metrics", None).0, 401);
    assert_eq!(http_get(&addr, "/metrics", Some("wrong")).0, 401);
    let (status, body) = http_get(&addr, "/metrics", Some("s3cret"));
    assert_eq!(status, 200);
    assert!(body.contains("toolhost_instances_in_use 0"), "{body}");
}

/// Percent-encodes a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Removes a file when dropped.
struct Remove(std::path::PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
