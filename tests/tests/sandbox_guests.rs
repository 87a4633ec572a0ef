//! Issue #11, item 9 and the lower items: what a hostile guest can make the
//! host print, store or spend around the sandbox — chunk metadata past the
//! output cap, log floods, terminal escape sequences, oversized metadata, a
//! middleware taking a tool's name (and grants), a stack overflow reported
//! as a bare backtrace — and what a guest sees of WASI.

use std::net::TcpListener;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::PermissionAnswer;
use toolhost::response::ResultState;
use toolhost_e2e::{Scratch, call, guest, root, text};

/// The CLI with one plugin and no built-ins.
fn with_plugin(scratch: &Scratch, plugin: &str, args: &[&str]) -> std::process::Output {
    let path = guest(plugin);
    let mut all = vec!["--no-builtins", "--plugin", path.to_str().unwrap()];
    all.extend_from_slice(args);
    scratch.cli(&all)
}

/// Checks that a `call --json` run under `--max-output-bytes 65536` was
/// cut: little reached stdout, the output says so, and the response is
/// bounded. Returns the response.
fn assert_cut_at_64_kib(input: &Value, out: &std::process::Output) -> Value {
    let (stdout, stderr) = text(out);
    assert!(out.stdout.len() < 256 << 10, "{input}: {} bytes reached stdout", out.stdout.len());
    assert!(stdout.contains("output truncated") && stdout.contains("65536 bytes"), "{input}: {stdout}\n{stderr}");
    let line: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let size = line["response"].to_string().len();
    assert!(size < 2 * 65536, "{input}: the response holds {size} bytes");
    line["response"].clone()
}

#[test]
fn chunk_metadata_counts_against_the_output_cap() {
    let scratch = Scratch::new();
    // 96 chunks of 1 MiB of metadata; then 2000 chunks of 16 KiB (each fits,
    // together they do not).
    for input in [json!({}), json!({"chunks": 2000, "metadata_bytes": 16384})] {
        let out = with_plugin(
            &scratch,
            "meta-flood",
            &["--max-output-bytes", "65536", "call", "--json", "MetaFlood", &input.to_string()],
        );
        assert_cut_at_64_kib(&input, &out);
    }
}

#[test]
fn block_names_and_empty_blocks_count_against_the_output_cap() {
    let scratch = Scratch::new();
    // 64 data blocks whose name, id and media type are 1 MiB each; then
    // 1000 chunks of 1000 empty blocks (text and data alternating), and
    // one chunk of 1 000 000 of them.
    let floods = [
        json!({"mode": "names", "chunks": 64, "name_bytes": 1 << 20}),
        json!({"mode": "empty", "chunks": 1000, "blocks": 1000}),
        json!({"mode": "empty", "chunks": 1, "blocks": 1_000_000}),
    ];
    for input in floods {
        let plugin = guest("meta-flood");
        let input_text = input.to_string();
        let out = std::process::Command::new("/usr/bin/time")
            .args(["-f", "peak-rss-kib %M", toolhost_e2e::toolhost_bin().to_str().unwrap()])
            .args(["--cache-dir", root().join("target/test-cache").to_str().unwrap()])
            .args(["--no-builtins", "--plugin", plugin.to_str().unwrap(), "--max-output-bytes", "65536"])
            .args(["call", "--json", "MetaFlood", &input_text])
            .current_dir(scratch.work())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let response = assert_cut_at_64_kib(&input, &out);
        let blocks = response["content"].as_array().map_or(0, Vec::len);
        assert!(blocks <= 65536 / 16 + 1, "{input}: the response holds {blocks} blocks");
        // The guest's own memory is capped separately; the host's stays small.
        let peak: u64 = text(&out)
            .1
            .lines()
            .find_map(|l| l.strip_prefix("peak-rss-kib "))
            .and_then(|n| n.trim().parse().ok())
            .expect("the peak memory from /usr/bin/time");
        assert!(peak < 512 << 10, "{input}: peak memory {peak} KiB");
        eprintln!("{input}: stdout {} bytes, {blocks} blocks, peak {peak} KiB", out.stdout.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn middleware_chunk_metadata_counts_against_the_output_cap() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("echo"));
    s.middleware.files.push(guest("mw-flood"));
    s.middleware.attach.insert("Echo".into(), vec!["mw-flood".into()]);
    s.limits.max_output_bytes = 64 << 10;
    let host = scratch.host(s).await;
    let r = call(&host, "Echo", json!({"text": "metadata"}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Error, "{:?}", r.text());
    assert!(r.text().contains("middleware 'mw-flood' exceeded the output limit"), "{}", r.text());
    let size = serde_json::to_string(&r).unwrap().len();
    assert!(size < 256 << 10, "the response holds {size} bytes");
}

#[test]
fn guest_log_output_is_bounded_and_the_drop_counted() {
    let scratch = Scratch::new();
    // 1024 warnings of 64 KiB; the default budget (1 MiB) keeps 16 of them.
    let out = with_plugin(&scratch, "log-flood", &["call", "LogFlood", "{}"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "done");
    assert!(out.stderr.len() < 2 << 20, "{} bytes of log reached stderr", out.stderr.len());
    assert!(stderr.contains(&format!("{} log bytes dropped", 1008u64 << 16)), "{}", &stderr[stderr.len() - 400..]);

    // The budget is a setting (and a flag).
    let out = with_plugin(&scratch, "log-flood", &["--max-log-bytes", "0", "call", "LogFlood", "{}"]);
    assert!(out.stderr.len() < 4096, "{}", text(&out).1);
    assert!(text(&out).1.contains(&format!("{} log bytes dropped", 1024u64 << 16)));
}

/// A guest log message with a newline and a forged host log line after it
/// (tests/guests/evil-suggest) reaches stderr as one line, escaped.
#[test]
fn a_guest_cannot_forge_log_lines() {
    let scratch = Scratch::new();
    let input = json!({"dir": scratch.work().display().to_string()}).to_string();
    let out = with_plugin(&scratch, "evil-suggest", &["--allow", "Evil", "call", "Evil", &input]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let forged = "2026-11-30T12:00:00.000000Z  INFO toolhost: forged";
    assert!(!stderr.lines().any(|l| l.starts_with(forged)), "a forged log line reached stderr:\n{stderr}");
    let logged: Vec<&str> = stderr.lines().filter(|l| l.contains("forged")).collect();
    assert_eq!(logged.len(), 1, "{stderr}");
    assert!(logged[0].contains(&format!("working\\x0a{forged}")), "{stderr}");
    assert!(stdout.contains("write: refused") && !scratch.work().join("canary").exists(), "{stdout}");
}

#[test]
fn terminal_escapes_in_plugin_text_are_shown_escaped() {
    let scratch = Scratch::new();
    let plugin = guest("ansi-text");
    let outputs = [
        scratch.cli(&["inspect", plugin.to_str().unwrap()]),
        with_plugin(&scratch, "ansi-text", &["list"]),
        with_plugin(&scratch, "ansi-text", &["describe", "AnsiText"]),
    ];
    for out in &outputs {
        let (stdout, stderr) = text(out);
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        for raw in ['\x1b', '\r', '\x07', '\u{9b}'] {
            assert!(!stdout.contains(raw), "a raw {raw:?} reached the terminal:\n{stdout:?}");
        }
        assert!(stdout.contains("\\x1b[2K\\x0d"), "the escape is not shown:\n{stdout}");
    }
    // The capability line the description tried to cover is there, true.
    let (inspect, _) = text(&outputs[0]);
    assert!(inspect.contains("capabilities:  exec"), "{inspect}");
    // Piped (not a terminal), a call's output passes byte for byte.
    let out = with_plugin(&scratch, "ansi-text", &["--allow", "AnsiText", "call", "AnsiText", "{}"]);
    assert!(text(&out).0.starts_with("42\x1b[2K"), "{:?}", text(&out));
}

#[test]
fn oversized_metadata_is_refused_at_load_naming_the_field_and_limit() {
    let scratch = Scratch::new();
    for (plugin, field, limit) in [
        ("big-description", "its description is", "65536 bytes"),
        ("big-schema", "its input schema is", "1048576 bytes"),
    ] {
        let path = guest(plugin);
        for out in [scratch.cli(&["inspect", path.to_str().unwrap()]), with_plugin(&scratch, plugin, &["list"])] {
            let (stdout, stderr) = text(&out);
            assert_ne!(out.status.code(), Some(0), "{plugin} loaded:\n{}", &stdout[..stdout.len().min(300)]);
            assert!(stderr.contains(field) && stderr.contains(limit), "{plugin}: {stderr}");
            assert!(out.stdout.len() + out.stderr.len() < 64 << 10, "{plugin}: the oversized text was echoed");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_overflow_with_big_frames_is_named() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("recurse"));
    let host = scratch.host(s).await;
    for input in [json!({"big_frames": true}), json!({})] {
        let r = call(&host, "Recurse", input.clone(), PermissionAnswer::Deny).await;
        assert_eq!(r.state, ResultState::Error);
        let t = r.text();
        assert!(t.contains("stack overflow") && t.contains("overflowed its stack"), "{input}: {t}");
        assert!(!t.contains("wasm backtrace") && t.len() < 400, "{input}: a bare backtrace: {t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middleware_may_not_take_a_tool_name() {
    let scratch = Scratch::new();
    // Through the CLI: a middleware named like a granted plugin.
    let (echo, impostor) = (guest("echo"), guest("mw-named-echo"));
    let args = ["--no-builtins", "--plugin", echo.to_str().unwrap(), "--grant", "Echo=state"];
    let mut with_mw = args.to_vec();
    with_mw.extend_from_slice(&["--middleware", impostor.to_str().unwrap(), "call", "Echo", r#"{"text":"x"}"#]);
    let out = scratch.cli(&with_mw);
    let (stdout, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("impostor ran"), "{stdout}");
    assert!(
        stderr.contains("'Echo' is already the name of a loaded tool") && stderr.contains("[grants.NAME]"),
        "{stderr}"
    );

    // In the library the other way round: a tool loaded after a middleware
    // that has its name.
    let mut s = scratch.settings();
    s.builtins = false;
    s.middleware.files.push(impostor.clone());
    let host = scratch.host(s).await;
    let err = host.load_file(&echo).await.unwrap_err().to_string();
    assert!(err.contains("'Echo' is already the name of a loaded middleware"), "{err}");
    assert!(!host.is_registered("Echo"));
}

#[test]
fn the_wit_command_publishes_the_package_it_speaks() {
    let scratch = Scratch::new();
    let dir = scratch.outside("wit-out");
    let out = scratch.cli(&["wit", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let source = root().join("wit/v0.1.0");
    let mut names: Vec<String> =
        std::fs::read_dir(&source).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut written: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    written.sort();
    assert_eq!(written, names);
    for name in &names {
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), std::fs::read(source.join(name)).unwrap(), "{name}");
    }
    // Without --out it prints every file.
    let (stdout, _) = text(&scratch.cli(&["wit"]));
    for name in &names {
        let body = std::fs::read_to_string(source.join(name)).unwrap();
        assert!(stdout.contains(&format!("// ==> {name} <==\n{body}")), "{name}");
    }
}

#[test]
fn what_a_guest_sees_of_wasi() {
    let scratch = Scratch::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let secret = scratch.outside("secret.txt");
    std::fs::write(&secret, "canary secret").unwrap();
    let config = scratch.outside("toolhost.toml");
    std::fs::write(&config, "[tools.WasiProbe]\ncolour = \"blue\"\n").unwrap();
    let input = json!({"connect": addr, "path": secret}).to_string();
    let plugin = guest("wasi-probe");
    let out = std::process::Command::new(toolhost_e2e::toolhost_bin())
        .current_dir(scratch.work())
        .args(["--cache-dir", root().join("target/test-cache").to_str().unwrap()])
        .args(["--config", config.to_str().unwrap(), "--no-builtins", "--plugin", plugin.to_str().unwrap()])
        .args(["call", "WasiProbe", &input])
        .env("HOME", scratch.dir.path())
        .env("TOOLHOST_CANARY_SECRET", "do-not-leak")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    // The only environment is the tool's own settings; no arguments.
    assert_eq!(seen["env"], json!([["TOOLHOST_TOOL_CONFIG", "{\"colour\":\"blue\"}"]]), "{seen}");
    assert_eq!(seen["args"], json!([]));
    // No preopened directory: no path opens, relative or absolute.
    for key in ["read_root", "read_cwd", "read_path", "write_path"] {
        assert!(seen[key].as_str().unwrap().starts_with("error"), "{key}: {seen}");
    }
    assert!(!scratch.work().join("probe.txt").exists());
    // Sockets are refused, and nothing reached the listener.
    for key in ["tcp_connect", "tcp_bind", "udp_bind", "resolve"] {
        assert!(seen[key].as_str().unwrap().starts_with("error"), "{key}: {seen}");
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(listener.accept().is_err(), "the guest reached the listener");
    // stdin is empty; stdout is discarded, stderr kept by the host (not printed).
    assert!(seen["stdin"].as_str().unwrap().starts_with("\"ok\" (0 bytes)"), "{seen}");
    assert!(!stdout.contains("PROBE-STDOUT-MARKER") && !stderr.contains("PROBE-STDERR-MARKER"));
    // The clocks and random numbers are the host's.
    assert!(seen["wall_clock_secs"].as_u64().unwrap() > 1_700_000_000, "{seen}");
    assert_eq!(seen["random_nonzero"], true);
    assert!(!stdout.contains("canary secret") && !stdout.contains("do-not-leak"));
}
