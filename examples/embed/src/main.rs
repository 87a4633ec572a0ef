//! Embedding toolhost in a Rust program: build a host over a working
//! directory, call tools, and answer the permission engine's questions from
//! code (here: allow `Write` inside the working directory, deny the rest).
//!
//! Run: `cargo run -p embed-toolhost -- /some/dir`

use anyhow::{Context as _, Result};
use serde_json::json;
use toolhost::prelude::*;

#[tokio::main]
async fn main() -> Result<()> {
    let dir = std::env::args().nth(1).map(std::path::PathBuf::from).unwrap_or(std::env::current_dir()?);
    let dir = dir.canonicalize().with_context(|| format!("{} must exist", dir.display()))?;

    let mut settings = Settings::default();
    settings.permissions.working_dirs = vec![dir.display().to_string()];
    let host = Toolhost::builder().settings(settings, None).build().await?;
    // The names are known without loading anything; each built-in loads when first used.
    println!("tools: {}", host.names().join(", "));

    let note = dir.join("toolhost-embed-note.txt");
    let calls = [
        ("Bash", json!({"command": "ls"})),
        ("Write", json!({"file_path": note.display().to_string(), "content": "written by an embedder\n"})),
        ("Bash", json!({"command": "rm -rf /"})),
    ];
    for (tool, input) in calls {
        println!("\n> {tool} {input}");
        let mut stream = host.call(CallRequest::new(tool, input.to_string()));
        while let Some(event) = stream.next().await {
            match event {
                CallEvent::Chunk(chunk) => {
                    for block in chunk.content {
                        if let ContentBlock::Text { text } = block {
                            // A tool's output is someone else's text: never raw to the terminal.
                            print!("{}", toolhost::escape::block(&text));
                        }
                    }
                }
                CallEvent::PermissionRequest(request) => {
                    let message = toolhost::escape::line(&request.decision.message);
                    println!("[asked: {message} — {}]", request.decision.source.as_str());
                    if request.tool == "Write" && !request.decision.bypass_immune {
                        request.allow();
                    } else {
                        request.deny();
                    }
                }
                CallEvent::ExternalExecution(call) => println!("[external: {}]", toolhost::escape::line(&call.tool)),
                CallEvent::Finished(response) => println!("\n[{:?}]", response.state),
                CallEvent::RememberFailed { message, .. } => {
                    eprintln!("[not remembered: {}]", toolhost::escape::line(&message))
                }
            }
        }
    }
    Ok(())
}
