//! A test MCP server: `toolhost_mcp` as a library over a host with the
//! MCP conformance suite's fixture tools (native function tools, served
//! through the whole pipeline) and a way for a test to change the tool set
//! while a client listens.
//!
//! ```text
//! mcp_fixture (--stdio | --http ADDR) [--conformance] [--add-when FILE]
//!             [--header-timeout-ms N] [--body-timeout-ms N] [--max-body-bytes N] [--cache-dir DIR]
//! mcp_fixture --hostile MODE --count FILE
//! ```
//!
//! `--add-when FILE`: when FILE appears, the tool `Added` is registered;
//! when it is removed again, `Added` is unloaded (through
//! `Toolhost::register_function` and `Toolhost::unload`, as hot reload does).
//! Over HTTP it prints `mcp_fixture: listening on URL` on stderr.
//!
//! `--hostile MODE`: instead, a hostile upstream server over stdio (no
//! toolhost inside; see `mcp_fixture/hostile.rs`), noting what it was
//! asked in FILE.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde_json::json;
use toolhost::Toolhost;
use toolhost::function::FunctionTool;
use toolhost::response::{Chunk, ContentBlock, ResultState};
use toolhost::settings::Settings;
use toolhost::state::MemoryStore;
use toolhost::state::SessionStates;
use toolhost_mcp::{HttpOptions, McpFront};

#[path = "mcp_fixture/hostile.rs"]
mod hostile;

/// A 1×1 red PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xde, 0x00, 0x00, 0x00, 0x0c, 0x49,
    0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0,
    0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of `samples` silent 8 kHz 8-bit mono samples.
fn wav(samples: u32) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + samples).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&8000u32.to_le_bytes());
    w.extend_from_slice(&8000u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&8u16.to_le_bytes());
    w.extend_from_slice(b"data");
    w.extend_from_slice(&samples.to_le_bytes());
    w.extend(std::iter::repeat_n(128u8, samples as usize));
    w
}

fn data(media_type: &str, bytes: &[u8], name: Option<&str>) -> ContentBlock {
    ContentBlock::Data { id: None, media_type: media_type.into(), data: bytes.to_vec(), name: name.map(Into::into) }
}

fn chunks(content: Vec<ContentBlock>) -> Vec<Chunk> {
    vec![Chunk { content, state: ResultState::Success, metadata: Default::default() }]
}

fn no_args() -> serde_json::Value {
    json!({"type": "object", "properties": {}})
}

/// The fixture tools of `@modelcontextprotocol/conformance` 0.1.10 that a
/// toolhost tool can be (the others need a tool that elicits, samples or
/// logs by itself: see tests/mcp/conformance-expected-failures.txt).
fn conformance_tools() -> Vec<FunctionTool> {
    vec![
        FunctionTool::new("test_simple_text", "Returns simple text.", no_args(), |_| async {
            Ok::<_, String>("This is a simple text response for testing.")
        }),
        FunctionTool::new("test_image_content", "Returns an image.", no_args(), |_| async {
            Ok::<_, String>(chunks(vec![data("image/png", PNG, None)]))
        }),
        FunctionTool::new("test_audio_content", "Returns audio.", no_args(), |_| async {
            Ok::<_, String>(chunks(vec![data("audio/wav", &wav(80), None)]))
        }),
        FunctionTool::new("test_embedded_resource", "Returns an embedded resource.", no_args(), |_| async {
            let text = b"This is an embedded resource content.";
            Ok::<_, String>(chunks(vec![data("text/plain", text, Some("test://embedded-resource"))]))
        }),
        FunctionTool::new("test_multiple_content_types", "Returns text, an image and a resource.", no_args(), |_| async {
            Ok::<_, String>(chunks(vec![
                ContentBlock::text("Multiple content types test:"),
                data("image/png", PNG, None),
                data("application/json", br#"{"test":"data","value":123}"#, Some("test://mixed-content-resource")),
            ]))
        }),
        FunctionTool::new("test_error_handling", "Always fails.", no_args(), |_| async {
            Err::<String, _>("This tool intentionally returns an error for testing".to_string())
        }),
        FunctionTool::new("test_tool_with_progress", "Reports progress three times.", no_args(), |_| async {
            let mut out = Vec::new();
            for step in [0, 50, 100] {
                out.push(Chunk::text(format!("{step}/100\n"), ResultState::Running));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok::<_, String>(out)
        }),
        FunctionTool::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                "additionalProperties": false
            }),
            |input| async move { Ok::<_, String>(format!("got {input}")) },
        ),
    ]
    .into_iter()
    .map(|t| t.read_only(true))
    .collect()
}

fn added_tool() -> FunctionTool {
    FunctionTool::new("Added", "Registered while the server runs.", no_args(), |_| async { Ok::<_, String>("added") })
        .read_only(true)
}

/// Registers `Added` when `file` appears and unloads it when it goes.
async fn follow(host: Toolhost, file: PathBuf) {
    let mut present = false;
    loop {
        let now = file.exists();
        if now && !present {
            host.register_function(added_tool()).expect("registering Added");
        } else if present && !now {
            host.unload("Added");
        }
        present = now;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Args {
    http: Option<std::net::SocketAddr>,
    conformance: bool,
    add_when: Option<PathBuf>,
    cache_dir: Option<PathBuf>,
    header_timeout: Option<Duration>,
    body_timeout: Option<Duration>,
    max_body_bytes: Option<usize>,
    hostile: Option<String>,
    count: Option<PathBuf>,
}

fn parse() -> Result<Args> {
    let mut args = Args {
        http: None,
        conformance: false,
        add_when: None,
        cache_dir: None,
        header_timeout: None,
        body_timeout: None,
        max_body_bytes: None,
        hostile: None,
        count: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--stdio" => {}
            "--http" => args.http = Some(value()?.parse()?),
            "--conformance" => args.conformance = true,
            "--add-when" => args.add_when = Some(value()?.into()),
            "--cache-dir" => args.cache_dir = Some(value()?.into()),
            "--header-timeout-ms" => args.header_timeout = Some(Duration::from_millis(value()?.parse()?)),
            "--body-timeout-ms" => args.body_timeout = Some(Duration::from_millis(value()?.parse()?)),
            "--max-body-bytes" => args.max_body_bytes = Some(value()?.parse()?),
            "--hostile" => args.hostile = Some(value()?),
            "--count" => args.count = Some(value()?.into()),
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = parse()?;
    if let Some(mode) = &args.hostile {
        let count = args.count.clone().context("--hostile needs --count FILE")?;
        return hostile::serve(mode, count).await;
    }
    let mut settings = Settings { builtins: false, cache_dir: args.cache_dir.clone(), ..Settings::default() };
    settings.permissions.working_dirs = vec![std::env::current_dir()?.display().to_string()];
    let host = Toolhost::builder().settings(settings, None).build().await?;
    if args.conformance {
        for tool in conformance_tools() {
            host.register_function(tool)?;
        }
    }
    if let Some(file) = args.add_when.clone() {
        tokio::spawn(follow(host.clone(), file));
    }
    let front = McpFront::new(host, SessionStates::per_session(Arc::new(MemoryStore::default())))?;
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match args.http {
        None => toolhost_mcp::serve_stdio(front, Duration::from_secs(1), stop).await,
        Some(addr) => {
            let mut options = HttpOptions::new(addr);
            options.grace = Duration::from_secs(1);
            if let Some(t) = args.header_timeout {
                options.header_timeout = t;
            }
            if let Some(t) = args.body_timeout {
                options.body_timeout = t;
            }
            if let Some(n) = args.max_body_bytes {
                options.max_body_bytes = n;
            }
            let announce = |bound| eprintln!("mcp_fixture: listening on http://{bound}/mcp");
            toolhost_mcp::serve_http(front, options, announce, stop).await
        }
    }
}
