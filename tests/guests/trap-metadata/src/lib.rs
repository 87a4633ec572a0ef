//! `TrapMetadata`: its `metadata` export, which the host calls at load
//! time, panics. Loading it must fail naming the file, the export and the
//! panic, and leave the host serving.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct TrapMetadata;

impl Tool for TrapMetadata {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        panic!("TrapMetadata traps in metadata");
    }
    fn call(_input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        out.text("never loaded");
        Ok(())
    }
}
export_tool!(TrapMetadata);
