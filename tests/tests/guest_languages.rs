//! Tools and middleware in Python and JavaScript, end to end: the word-count
//! and redact examples (examples/python, examples/js) as the committed
//! fixtures built by componentize-py and componentize-js
//! (`toolhost_e2e::fixtures`: hash-checked, rebuilt when their sources
//! change), loaded by the real host; and `toolhost new` + `toolhost build`
//! in all three languages with the real toolchains.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolhost::response::{ResultState, ToolResponse};
use toolhost::settings::Settings;
use toolhost::{CallEvent, CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::fixtures::{self, FIXTURES, fixture};
use toolhost_e2e::{Scratch, call, example, guest, text};

/// The word-count tool of each language: its fixture and its tool name.
const WORD_COUNT: &[(&str, &str)] = &[("word_count_py.wasm", "word_count"), ("word_count_js.wasm", "wordCount")];

fn settings_with(scratch: &Scratch, plugin: &str, grants: &[&str]) -> Settings {
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(fixture(plugin));
    s.state_dir = Some(scratch.dir.path().join("sessions"));
    for (_, tool) in WORD_COUNT.iter().filter(|(f, _)| *f == plugin) {
        for g in grants {
            s.grants.entry(tool.to_string()).or_default().add_grant(g).expect("a valid grant");
        }
    }
    s
}

/// Calls `tool`, answering an ask with allow, and returns the response and
/// how many chunks with text arrived before the end.
async fn call_streamed(host: &Toolhost, tool: &str, input: Value) -> (ToolResponse, usize) {
    let mut stream = host.call(CallRequest::new(tool, input.to_string()));
    let mut texts = 0;
    let mut response = None;
    while let Some(event) = stream.next().await {
        match event {
            CallEvent::Chunk(c) => texts += usize::from(!ToolResponse::from_chunk("", c).text().is_empty()),
            CallEvent::PermissionRequest(r) => r.allow(),
            CallEvent::Finished(r) => response = Some(r),
            CallEvent::ExternalExecution(_) => panic!("not external"),
            CallEvent::RememberFailed { message, .. } => panic!("nothing was remembered: {message}"),
        }
    }
    (response.expect("the call finished"), texts)
}

#[test]
fn fixtures_match_their_sources_and_hashes() {
    // Rebuilds any fixture whose sources changed (with the pinned toolchains), then checks each hash.
    for f in FIXTURES {
        let path = fixture(f.file);
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(fixtures::dir().join("manifest.json")).unwrap()).unwrap();
        assert_eq!(manifest["fixtures"][f.file]["sources_sha256"], fixtures::sources_sha256(f), "{}", f.file);
        assert!(std::fs::metadata(&path).unwrap().len() > 1_000_000, "{} is a whole guest runtime", f.file);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn word_count_in_python_and_js_schema_stream_errors_denial_and_state() {
    for (file, tool) in WORD_COUNT {
        let scratch = Scratch::new();
        let work = scratch.work();
        std::fs::write(work.join("a.txt"), "one two three\nfour\n").unwrap();
        std::fs::write(work.join("b.txt"), "five six\n").unwrap();
        let (a, b) = (work.join("a.txt").display().to_string(), work.join("b.txt").display().to_string());

        // The schema derived from the docstring / JSDoc, the flags and capabilities from the decorator / options.
        let host = scratch.host(settings_with(&scratch, file, &["fs-read", "state"])).await;
        let info = host.describe(tool).await.unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(info.description, "Counts lines, words and bytes of text files (like `wc`). Pass absolute paths.");
        assert_eq!(
            info.input_schema,
            json!({
                "type": "object",
                "properties": {
                    "paths": {"type": "array", "items": {"type": "string"}, "description": "Absolute paths of the files to count."},
                    "remember": {"type": "boolean", "description": "Add the totals to the running count kept for this session.", "default": false}
                },
                "required": ["paths"],
                "additionalProperties": false
            }),
            "{file}"
        );
        assert!(info.concurrency_safe && info.state_injected && !info.read_only, "{file}: {info:?}");
        assert_eq!(info.capabilities.fs_read, ["$WORKDIRS"], "{file}");

        // Streaming: one chunk per yielded line, and the metadata chunk.
        let (r, texts) = call_streamed(&host, tool, json!({"paths": [a, b]})).await;
        assert_eq!(r.state, ResultState::Success, "{file}: {r:?}");
        assert_eq!(
            r.text(),
            format!(
                "       2        4       19 {a}\n       1        2        9 {b}\n       3        6       28 total\n"
            ),
            "{file}"
        );
        assert_eq!(texts, 3, "{file}: each yielded line is its own chunk");
        assert_eq!(r.metadata["files"][1], json!({"path": b, "lines": 1, "words": 2, "bytes": 9}), "{file}");

        // A raised ToolError ends the call with its kind and text.
        let r = call(&host, tool, json!({"paths": []}), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.state, ResultState::Error, "{file}: {r:?}");
        assert!(r.text().contains("pass at least one path"), "{file}: {}", r.text());
        // A backend error (not found) raised by the SDK and not caught reaches the caller.
        let missing = work.join("missing.txt").display().to_string();
        let r = call(&host, tool, json!({"paths": [missing]}), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.state, ResultState::Error, "{file}: {r:?}");
        assert!(r.text().contains("missing.txt"), "{file}: {}", r.text());

        // State: `remember` adds to a running count kept by the host.
        for expected in ["4 words counted in this session", "8 words counted in this session"] {
            let r = call(&host, tool, json!({"paths": [a], "remember": true}), PermissionAnswer::AllowOnce).await;
            assert_eq!(r.state, ResultState::Success, "{file}: {r:?}");
            assert!(r.text().contains(expected), "{file}: {}", r.text());
        }

        // Without the grant, reading is denied: the guest sees `denied` and the content never leaves the file.
        let host = scratch.host(settings_with(&scratch, file, &[])).await;
        let r = call(&host, tool, json!({"paths": [a]}), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.state, ResultState::Error, "{file}: {r:?}");
        assert!(r.text().contains("denied") && r.text().contains("outside the roots granted"), "{file}: {}", r.text());
        assert!(!r.text().contains("one two"), "{file}: {}", r.text());
        // State was not granted either: `remember` fails, and nothing is stored.
        let r = call(&host, tool, json!({"paths": [a], "remember": true}), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.state, ResultState::Error, "{file}: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_js_redact_run_in_a_chain_with_rust_middleware() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("echo"));
    s.middleware.files.extend([
        guest("mw-mark-a"),
        example("redact"),
        fixture("redact_py.wasm"),
        fixture("redact_js.wasm"),
    ]);
    let chain = ["mw-mark-a", "redact", "redact-js", "redact-py"];
    s.middleware.attach.insert("Echo".into(), chain.map(String::from).to_vec());
    let host = scratch.host(s).await;
    assert_eq!(host.middleware_for("Echo"), chain);

    let secret = "key AKIAABCDEFGHIJKLMNOP, url?user=a&password=hunter2&x=1 Secret=s3 tokens=ok";
    let r = call(&host, "Echo", json!({"text": secret}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, ResultState::Success, "{r:?}");
    // The marker wraps them all; the Python one (innermost) redacts; the JS and the Rust ones
    // outside it find only masked values, which they neither mask nor count again.
    assert_eq!(r.text(), "<a>key [REDACTED], url?user=a&password=[REDACTED]&x=1 Secret=[REDACTED] tokens=ok</a>");
    assert_eq!(r.metadata["redact-py"], json!({"count": 3}), "{:?}", r.metadata);
    assert_eq!(r.metadata["redact-js"], json!({"count": 0}), "{:?}", r.metadata);
    assert_eq!(r.metadata["redact"], json!({"count": 0}), "{:?}", r.metadata);
}

/// Each redact middleware on its own (Rust, JavaScript, Python) masks and
/// counts exactly as the shared Rust rules (`toolhost_redaction::redact`),
/// on the cases where a regex twin could drift: masked values, key ids
/// inside and beside values, keys in any case, word boundaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_redact_middleware_follows_the_shared_rules() {
    let texts = [
        "key AKIAABCDEFGHIJKLMNOP, url?user=a&password=hunter2&x=1 Secret=s3 tokens=ok",
        "key [REDACTED], url?user=a&password=[REDACTED]&x=1 Secret=[REDACTED] tokens=ok",
        "token=AKIAABCDEFGHIJKLMNOP and TOKEN=AKIAABCDEFGHIJKLMNOPxyz",
        "AKIAABCDEFGHIJKLMNOPpassword=x XAKIAABCDEFGHIJKLMNOP AKIAABCDEFGHIJKLMNOPQ",
        "token=[REDACTED]x \"api_key=k1\";passwd='p' mysecret=no secret= end",
    ];
    let scratch = Scratch::new();
    for mw in ["redact", "redact-js", "redact-py"] {
        let mut s = scratch.settings();
        s.builtins = false;
        s.plugins.push(guest("echo"));
        s.middleware.files.extend([example("redact"), fixture("redact_py.wasm"), fixture("redact_js.wasm")]);
        s.middleware.attach.insert("Echo".into(), vec![mw.into()]);
        let host = scratch.host(s).await;
        for text in texts {
            let (expected, count) = toolhost_redaction::redact(text);
            let r = call(&host, "Echo", json!({"text": text}), PermissionAnswer::Deny).await;
            assert_eq!(r.text(), expected, "{mw} on {text:?}");
            assert_eq!(r.metadata[mw], json!({"count": count}), "{mw} on {text:?}");
        }
    }
}

/// `toolhost new NAME --lang L`, then `toolhost build` in it with the
/// pinned toolchains, then a call of the built tool through the CLI.
#[test]
fn new_then_build_makes_a_working_tool_in_each_language() {
    let env: BTreeMap<String, String> = fixtures::toolchain_env().into_iter().collect();
    for (lang, name, tool) in [("python", "say-hi", "say_hi"), ("js", "say-hi", "sayHi"), ("rust", "say-hi", "SayHi")] {
        let scratch = Scratch::new();
        let out = scratch.cli(&["new", name, "--lang", lang]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{lang}: {stdout}{stderr}");
        let project = scratch.work().join(name);
        assert!(project.join("README.md").exists() && project.join("toolhost-plugin.toml").exists(), "{lang}");
        let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
        assert!(readme.contains("toolhost build") && readme.contains("lock"), "{lang}: {readme}");

        // A second `new` over it refuses rather than overwrite.
        let again = scratch.cli(&["new", name, "--lang", lang]);
        assert!(!again.status.success() && text(&again).1.contains("already exists"), "{lang}");

        let out = std::process::Command::new(toolhost_e2e::toolhost_bin())
            .current_dir(&project)
            .arg("build")
            .envs(&env)
            .output()
            .expect("running toolhost build");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{lang}: toolhost build failed:\n{stdout}\n{stderr}");
        let mut lines = stdout.lines();
        let wasm = std::path::PathBuf::from(lines.next().expect("the .wasm path"));
        let sha = lines.next().and_then(|l| l.strip_prefix("sha256: ")).expect("the SHA-256 line").to_string();
        assert_eq!(sha, toolhost::lockfile::sha256_hex(&std::fs::read(&wasm).unwrap()), "{lang}");

        // The component lies in the working directory: it runs only pinned
        // (as the project's README says).
        let wasm = wasm.display().to_string();
        let out = scratch.cli(&["--no-builtins", "--plugin", &wasm, "call", tool, r#"{"name":"Ada","times":2}"#]);
        assert!(!out.status.success() && text(&out).1.contains("toolhost lock"), "{lang}: {:?}", text(&out));
        let out = scratch.cli(&["--no-builtins", "--plugin", &wasm, "lock"]);
        assert!(out.status.success(), "{lang}: {:?}", text(&out));
        let out = scratch.cli(&["--no-builtins", "--plugin", &wasm, "call", tool, r#"{"name":"Ada","times":2}"#]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{lang}: {stdout}{stderr}");
        assert_eq!(stdout.trim_end(), "Hello, Ada!\nHello, Ada!", "{lang}: {stderr}");
    }
}

#[test]
fn build_names_a_missing_toolchain_and_how_to_install_it() {
    let scratch = Scratch::new();
    assert!(scratch.cli(&["new", "lonely", "--lang", "python"]).status.success());
    let out = std::process::Command::new(toolhost_e2e::toolhost_bin())
        .current_dir(scratch.work().join("lonely"))
        .arg("build")
        .env("PATH", "/nonexistent")
        .env_remove("TOOLHOST_COMPONENTIZE_PY")
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("componentize-py is not on PATH") && stderr.contains("pip install componentize-py==0.25.1"),
        "{stderr}"
    );
    assert!(!scratch.work().join("lonely/lonely.wasm").exists());
}
