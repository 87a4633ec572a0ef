//! Tool middleware end to end: the example middleware components
//! (examples/components), the order of a chain, streaming through it,
//! native Rust middleware in the same chain, and hostile middleware
//! (tests/guests/mw-*) failing the call with an error naming it while the
//! next call succeeds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::capability::Policy;
use toolhost::middleware::{MiddlewareOutput, NativeMiddleware, Next};
use toolhost::response::{Chunk, ResultState};
use toolhost::settings::Settings;
use toolhost::tool::ToolInfo;
use toolhost::{AttachError, CallEvent, CallRequest, PermissionAnswer, ToolError, Toolhost};
use toolhost_e2e::{Scratch, call, example, guest, text};

/// Settings with no built-ins, the test tools loaded and the given
/// middleware files (attachments are made per test).
fn settings(scratch: &Scratch, middleware: &[&str]) -> Settings {
    let mut s = scratch.settings();
    s.builtins = false;
    for g in ["echo", "counter", "input-echo", "drip"] {
        s.plugins.push(guest(g));
    }
    for m in middleware {
        let path = if m.starts_with("mw-") { guest(m) } else { example(m) };
        s.middleware.files.push(path);
    }
    s
}

async fn host_with(scratch: &Scratch, middleware: &[&str], attach: &[(&str, &[&str])]) -> Toolhost {
    let mut s = settings(scratch, middleware);
    for (tool, names) in attach {
        s.middleware.attach.insert(tool.to_string(), names.iter().map(|n| n.to_string()).collect());
    }
    scratch.host(s).await
}

async fn echo(host: &Toolhost, text: &str) -> toolhost::response::ToolResponse {
    call(host, "Echo", json!({ "text": text }), PermissionAnswer::Deny).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chain_order_is_outer_pre_inner_pre_call_inner_post_outer_post() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &["mw-mark-a", "mw-mark-b"], &[("Echo", &["mw-mark-a", "mw-mark-b"])]).await;
    let r = echo(&host, "x").await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert_eq!(r.text(), "<a><b>x</b></a>");
    assert_eq!(host.middleware_for("Echo"), ["mw-mark-a", "mw-mark-b"]);

    // "*" layers wrap the tool's own; the reverse order reverses the nesting.
    let host =
        host_with(&scratch, &["mw-mark-a", "mw-mark-b"], &[("*", &["mw-mark-b"]), ("Echo", &["mw-mark-a"])]).await;
    assert_eq!(echo(&host, "x").await.text(), "<b><a>x</a></b>");
    // Other tools only get the "*" layer.
    let r = call(&host, "InputEcho", json!({"text": "t"}), PermissionAnswer::Deny).await;
    assert_eq!(r.text(), "<b>{\"text\":\"t\"}</b>");
}

/// A native middleware that marks its pre and post logic with `[n` and `n]`.
struct NativeMark;

#[toolhost::async_trait]
impl NativeMiddleware for NativeMark {
    fn name(&self) -> &str {
        "native-mark"
    }

    async fn on_tool_call(
        &self,
        tool: &ToolInfo,
        input: String,
        next: Next,
        out: &mut MiddlewareOutput,
    ) -> Result<(), ToolError> {
        assert_eq!(tool.name, "Echo");
        out.emit(Chunk::text("[n", ResultState::Running)).await;
        let mut inner = next.run(input).await?;
        while let Some(chunk) = inner.next().await {
            out.emit(chunk).await;
        }
        out.emit(Chunk::text("n]", ResultState::Running)).await;
        inner.outcome().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_middleware_runs_in_the_same_chain() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &["mw-mark-a", "mw-mark-b"], &[]).await;
    host.register_middleware(Arc::new(NativeMark)).unwrap();
    host.attach("Echo", ["mw-mark-a", "native-mark", "mw-mark-b"]).unwrap();
    let r = echo(&host, "x").await;
    assert_eq!(r.text(), "<a>[n<b>x</b>n]</a>", "{r:?}");
    assert!(host.middleware().iter().any(|m| m.name == "native-mark"));

    // Attaching an unknown name is refused with the fix.
    let err = host.attach("Echo", ["mw-mark-a", "nope"]).unwrap_err();
    assert!(matches!(&err, AttachError::NotLoaded { name, .. } if name == "nope"), "{err}");
    let err = err.to_string();
    assert!(err.contains("no middleware of that name is loaded") && err.contains("--middleware"), "{err}");
    assert_eq!(host.middleware_for("Echo"), ["mw-mark-a", "native-mark", "mw-mark-b"], "nothing more attached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logging_passes_chunks_through_and_records_the_duration() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &["logging"], &[("Echo", &["logging"])]).await;
    let r = echo(&host, "hello").await;
    assert_eq!(r.state, ResultState::Success);
    assert_eq!(r.text(), "hello");
    let logged = &r.metadata["logging"];
    assert!(logged["elapsed_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{:?}", r.metadata);
    assert_eq!(logged["chunks"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_reruns_a_failing_tool_on_a_fresh_instance() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &["retry"]);
    s.grants.insert("Counter".into(), Policy { state: true, ..Policy::default() });
    s.middleware.attach.insert("Counter".into(), vec!["retry".into()]);
    let host = scratch.host(s).await;

    // Calls 1 and 2 fail, the third attempt succeeds; failed attempts' output is held back.
    let r = call(&host, "Counter", json!({"fail_until": 2}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert_eq!(r.text(), "call 3");
    assert_eq!(r.metadata["retry"]["attempts"], 3);

    // Three failures in a row: the last error is returned.
    let r = call(&host, "Counter", json!({"fail_until": 100}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Error);
    assert!(r.text().contains("transient failure on call 6"), "{}", r.text());
    assert_eq!(r.metadata["retry"]["attempts"], 3);
}

/// `[middleware.retry] max_attempts` reaches the retry component (read
/// from the settings file): 5 attempts on a tool that always fails, where
/// the default is 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_takes_max_attempts_from_its_middleware_settings() {
    let scratch = Scratch::new();
    let text = format!(
        "builtins = false\nplugins = [{:?}]\n[grants.Counter]\nstate = true\n\
         [middleware]\nfiles = [{:?}]\n[middleware.attach]\nCounter = [\"retry\"]\n\
         [middleware.retry]\nmax_attempts = 5\n",
        guest("counter"),
        example("retry")
    );
    let s = scratch.settings_file(&text);
    assert_eq!(s.middleware.config("retry"), json!({"max_attempts": 5}));
    let host = scratch.host(s).await;

    let r = call(&host, "Counter", json!({"fail_until": 100}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    assert_eq!(r.metadata["retry"]["attempts"], 5);
    assert!(r.text().contains("transient failure on call 5"), "{}", r.text());

    // A call that succeeds at once is not retried.
    let r = call(&host, "Counter", json!({"fail_until": 0}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    assert_eq!(r.metadata["retry"]["attempts"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewrite_input_changes_what_the_tool_sees() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &["rewrite-input"], &[("InputEcho", &["rewrite-input"])]).await;
    let r = call(&host, "InputEcho", json!({"text": "  hi  "}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    let seen: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert_eq!(seen, json!({"text": "hi", "mode": "plain"}));
    assert_eq!(r.metadata["rewrite_input"], json!({"trimmed": ["text"], "added": ["mode"]}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_run_revalidates_rewritten_input() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &["mw-bad-input"], &[("Echo", &["mw-bad-input"])]).await;
    let r = echo(&host, "fine").await;
    assert_eq!(r.state, ResultState::Error);
    assert!(
        r.text().contains("refused: Input validation failed for tool 'Echo'") && r.text().contains("/text"),
        "{}",
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_short_circuits_repeated_calls_without_running_the_tool() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &["cache"]);
    s.grants.insert("Counter".into(), Policy { state: true, ..Policy::default() });
    s.grants.insert("cache".into(), Policy { state: true, ..Policy::default() });
    s.middleware.attach.insert("Counter".into(), vec!["cache".into()]);
    let host = scratch.host(s).await;

    let first = call(&host, "Counter", json!({"tag": "a"}), PermissionAnswer::AllowOnce).await;
    assert_eq!((first.text().as_str(), &first.metadata["cache"]), ("call 1", &json!("miss")));
    let again = call(&host, "Counter", json!({"tag": "a"}), PermissionAnswer::AllowOnce).await;
    assert_eq!((again.text().as_str(), &again.metadata["cache"]), ("call 1", &json!("hit")));
    // The tool did not run for the hit: the next miss is its second call.
    let other = call(&host, "Counter", json!({"tag": "b"}), PermissionAnswer::AllowOnce).await;
    assert_eq!((other.text().as_str(), &other.metadata["cache"]), ("call 2", &json!("miss")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_without_the_state_grant_never_hits() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &["cache"]);
    s.grants.insert("Counter".into(), Policy { state: true, ..Policy::default() });
    s.middleware.attach.insert("Counter".into(), vec!["cache".into()]);
    let host = scratch.host(s).await;
    for n in 1..=2 {
        let r = call(&host, "Counter", json!({}), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.text(), format!("call {n}"));
        assert_eq!(r.metadata["cache"], "miss");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redact_masks_secrets_in_text_output() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &["redact"], &[("Echo", &["redact"])]).await;
    let r = echo(&host, "id AKIAABCDEFGHIJKLMNOP and password=hunter2 end").await;
    assert_eq!(r.text(), "id [REDACTED] and password=[REDACTED] end");
    assert_eq!(r.metadata["redact"]["count"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_stream_through_middleware_as_they_are_produced() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &["logging", "redact"], &[("Drip", &["logging", "redact"])]).await;
    let start = Instant::now();
    let mut stream = host.call(CallRequest::new("Drip", json!({"count": 3, "delay_ms": 400}).to_string()));
    let mut first_chunk = None;
    let mut finished = None;
    let mut texts = String::new();
    while let Some(event) = stream.next().await {
        match event {
            CallEvent::Chunk(c) => {
                if !c.content.is_empty() && first_chunk.is_none() {
                    first_chunk = Some(start.elapsed());
                }
                texts.push_str(&toolhost::response::ToolResponse::from_chunk("", c).text());
            }
            CallEvent::PermissionRequest(r) => r.deny(),
            CallEvent::Finished(_) => finished = Some(start.elapsed()),
            CallEvent::ExternalExecution(_) => panic!("not external"),
            CallEvent::RememberFailed { message, .. } => panic!("nothing was remembered: {message}"),
        }
    }
    assert_eq!(texts, "chunk 1\nchunk 2\nchunk 3\n");
    let (first, end) = (first_chunk.unwrap(), finished.unwrap());
    assert!(end >= Duration::from_millis(800), "{end:?}");
    assert!(
        end - first >= Duration::from_millis(600),
        "the first chunk came at {first:?}, the end at {end:?}: not streamed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_middleware_fails_the_call_naming_it_and_the_host_keeps_serving() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &["mw-trap", "mw-spin", "mw-flood", "mw-pass"]);
    s.limits.timeout_ms = 1_000;
    s.limits.max_output_bytes = 64 << 10;
    let host = scratch.host(s).await;

    for (name, expected) in [
        ("mw-trap", "middleware 'mw-trap' panicked"),
        ("mw-spin", "middleware 'mw-spin' did not finish within the call's time limit of 1000 ms"),
        ("mw-flood", "middleware 'mw-flood' exceeded the output limit"),
    ] {
        host.attach("Echo", [name]).unwrap();
        let r = echo(&host, "x").await;
        assert_eq!(r.state, ResultState::Error, "{name}");
        assert!(r.text().contains(expected), "{name}: {}", r.text());
        host.detach_all("Echo");
        let ok = echo(&host, "still here").await;
        assert_eq!((ok.state, ok.text().as_str()), (ResultState::Success, "still here"));
    }

    // An inner middleware that hangs is blamed, not the outer one waiting for it.
    host.attach("Echo", ["mw-pass", "mw-spin"]).unwrap();
    let r = echo(&host, "x").await;
    assert!(r.text().contains("middleware 'mw-spin' did not finish"), "{}", r.text());
    host.detach_all("Echo");

    // A failing inner middleware fails the call even under an outer one.
    host.attach("Echo", ["mw-pass", "mw-trap"]).unwrap();
    let r = echo(&host, "x").await;
    assert!(r.text().contains("middleware 'mw-trap' panicked"), "{}", r.text());
    host.detach_all("Echo");
    assert_eq!(echo(&host, "ok").await.text(), "ok");
}

/// A middleware whose worker thread is busy when the call's deadline
/// passes (as a loaded machine may leave a task unscheduled): it notices
/// the deadline seconds after the outer layer waiting for it gave up.
struct Stall;

#[toolhost::async_trait]
impl NativeMiddleware for Stall {
    fn name(&self) -> &str {
        "stall"
    }

    async fn on_tool_call(&self, _: &ToolInfo, _: String, _: Next, _: &mut MiddlewareOutput) -> Result<(), ToolError> {
        tokio::time::sleep(Duration::from_millis(900)).await;
        // Blocks this task past the 1 s deadline and past any grace period an outer layer
        // might allow; the runtime's other work (the outer layer's timer) goes on elsewhere.
        tokio::task::block_in_place(|| std::thread::sleep(Duration::from_secs(3)));
        std::future::pending().await
    }
}

/// Blame does not depend on timing: the outer layer that was only waiting
/// is never blamed for an inner layer's timeout, however late the inner
/// layer's own failure arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inner_layer_that_ends_late_is_blamed_not_the_outer_one_waiting_for_it() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &["mw-pass"]);
    s.limits.timeout_ms = 1_000;
    let host = scratch.host(s).await;
    host.register_middleware(Arc::new(Stall)).unwrap();
    host.attach("Echo", ["mw-pass", "stall"]).unwrap();
    let r = echo(&host, "x").await;
    assert_eq!(r.state, ResultState::Error);
    assert!(r.text().contains("middleware 'stall' did not finish within the call's time limit"), "{}", r.text());
    host.detach_all("Echo");
    assert_eq!(echo(&host, "still here").await.text(), "still here");
}

/// A middleware that starts its inner layers and then takes its time in
/// its own code, not waiting for them.
struct Dawdle;

#[toolhost::async_trait]
impl NativeMiddleware for Dawdle {
    fn name(&self) -> &str {
        "dawdle"
    }

    async fn on_tool_call(
        &self,
        _: &ToolInfo,
        input: String,
        next: Next,
        _: &mut MiddlewareOutput,
    ) -> Result<(), ToolError> {
        let _inner = next.run(input).await?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(())
    }
}

/// When time runs out, the innermost layer that was running then is
/// blamed: an inner middleware that spins, even when the outer one was busy
/// in its own code rather than waiting for it (as an outer layer is for a
/// moment when it reads the inner failure, and may be interrupted then);
/// the outer one when nothing inside was still running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_innermost_layer_running_when_time_runs_out_is_blamed() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &["mw-spin"]);
    s.limits.timeout_ms = 1_000;
    let host = scratch.host(s).await;
    host.register_middleware(Arc::new(Dawdle)).unwrap();
    host.attach("Echo", ["dawdle", "mw-spin"]).unwrap();
    let r = echo(&host, "x").await;
    assert!(r.text().contains("middleware 'mw-spin' did not finish within"), "{}", r.text());
    host.detach_all("Echo");
    host.attach("Echo", ["dawdle"]).unwrap();
    let r = echo(&host, "x").await;
    assert!(r.text().contains("middleware 'dawdle' did not finish within"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_tool_under_middleware_is_blamed_on_the_tool() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &["mw-pass"]);
    s.plugins.push(guest("spin"));
    s.limits.timeout_ms = 1_000;
    s.middleware.attach.insert("Spin".into(), vec!["mw-pass".into()]);
    let host = scratch.host(s).await;
    let r = call(&host, "Spin", json!({}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error);
    assert!(
        r.text().contains("exceeded its time limit of 1000 ms") && !r.text().contains("middleware"),
        "{}",
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loaders_refuse_the_wrong_kind_of_component() {
    let scratch = Scratch::new();
    let host = host_with(&scratch, &[], &[]).await;
    let err = format!("{:#}", host.load_middleware(&guest("echo")).await.unwrap_err());
    assert!(err.contains("is a tool component, not a middleware") && err.contains("--plugin"), "{err}");
    let err = format!("{:#}", host.load_file(&example("logging")).await.unwrap_err());
    assert!(err.contains("is a middleware component, not a tool") && err.contains("--middleware"), "{err}");
    let core = scratch.outside("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    let err = format!("{:#}", host.load_middleware(&core).await.unwrap_err());
    assert!(err.contains("core WebAssembly module"), "{err}");
    let info = host.load_middleware(&example("logging")).await.unwrap();
    assert_eq!(info.name, "logging");
    let err = format!("{:#}", host.load_middleware(&example("logging")).await.unwrap_err());
    assert!(err.contains("already loaded"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_but_missing_middleware_fails_closed() {
    let scratch = Scratch::new();
    let mut s = settings(&scratch, &[]);
    s.middleware.attach.insert("Echo".into(), vec!["redact".into()]);
    let err = format!("{:#}", Toolhost::builder().settings(s, None).build().await.err().unwrap());
    assert!(err.contains("[middleware.attach] Echo") && err.contains("'redact'"), "{err}");
}

#[test]
fn cli_middleware_and_attach_flags() {
    let scratch = Scratch::new();
    let out = scratch.cli(&[
        "--no-builtins",
        "--plugin",
        guest("echo").to_str().unwrap(),
        "--middleware",
        example("redact").to_str().unwrap(),
        "--middleware",
        guest("mw-mark-a").to_str().unwrap(),
        "--attach",
        "Echo=mw-mark-a,redact",
        "call",
        "Echo",
        r#"{"text":"token=abc"}"#,
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "<a>token=[REDACTED]</a>");

    let out = scratch.cli(&["--no-builtins", "--attach", "Echo", "list"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success() && stderr.contains("TOOL=NAME"), "{stderr}");
}

#[test]
fn settings_file_middleware_section() {
    let scratch = Scratch::new();
    let config = scratch.work().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "builtins = false\nplugins = [{:?}]\n[middleware]\nfiles = [{:?}]\n[middleware.attach]\n\"*\" = [\"redact\"]\n",
            guest("echo").display().to_string(),
            example("redact").display().to_string()
        ),
    )
    .unwrap();
    let out = scratch.cli(&["call", "Echo", r#"{"text":"password=x"}"#]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "password=[REDACTED]");
}

#[test]
fn list_and_describe_show_loaded_middleware_and_where_it_is_attached() {
    let scratch = toolhost_e2e::Scratch::new();
    let logging = toolhost_e2e::example("logging").display().to_string();
    let out = scratch.cli(&["--middleware", &logging, "--attach", "Bash=logging", "list"]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("MIDDLEWARE") && stdout.contains("logging") && stdout.contains("(on Bash)"), "{stdout}");
    let out = scratch.cli(&["--middleware", &logging, "--attach", "Bash=logging", "describe", "Bash"]);
    let (stdout, _) = toolhost_e2e::text(&out);
    assert!(stdout.contains("middleware (outermost first): logging"), "{stdout}");
}
