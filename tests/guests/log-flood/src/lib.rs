//! `LogFlood`: logs 64 MiB of warnings (1024 lines of 64 KiB) in one call,
//! then answers `done`.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("LogFlood", "Logs 64 MiB of warnings in one call.").read_only(true)
    }
    fn call(_input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let line = "w".repeat(1 << 16);
        for _ in 0..1024 {
            toolhost_sdk::log::warn(&line);
        }
        out.text("done");
        Ok(())
    }
}
export_tool!(Hostile);
