//! `Escape`: reads, writes or runs what its input says, to show that the
//! host refuses everything outside the granted roots and capabilities.
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, backend, export_tool, state};

struct Escape;

#[derive(Deserialize)]
struct Input {
    action: String,
    #[serde(default)]
    path: String,
}

impl Tool for Escape {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("Escape", "Tries file, process and state operations it may not be granted.")
            .schema(serde_json::json!({
                "type": "object",
                "properties": {"action": {"enum": ["read", "write", "list", "exec", "state"]}, "path": {"type": "string"}},
                "required": ["action"]
            }))
            .read_only(true)
            .writes("$WORKDIRS")
            .runs_processes()
            .state_injected(true)
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        match input.action.as_str() {
            "read" => {
                let bytes = backend::read_file(&input.path)?;
                out.text(&String::from_utf8_lossy(&bytes));
            }
            "write" => {
                backend::write_file(&input.path, b"pwned")?;
                out.text("written");
            }
            "list" => {
                let entries = backend::list_dir(&input.path)?;
                out.text(&entries.iter().map(|e| e.path.clone()).collect::<Vec<_>>().join("\n"));
            }
            "exec" => {
                let req = backend::ExecRequest {
                    argv: vec!["/bin/sh".into(), "-c".into(), "echo ran".into()],
                    cwd: None,
                    env: vec![],
                    timeout_ms: 5_000,
                    max_output_bytes: 0,
                };
                let process = backend::spawn(&req)?;
                while let Some(piece) = process.next_output() {
                    if let backend::OutputPiece::Stdout(b) = piece {
                        out.text(&String::from_utf8_lossy(&b));
                    }
                }
            }
            _ => {
                state::set("k", "1").map_err(ToolError::Denied)?;
                out.text("state written");
            }
        }
        Ok(())
    }
}
export_tool!(Escape);
