//! `ProbeAttack`: a hostile plugin that makes its [`attack`] (a file
//! write, a process, host paths) from `metadata`, the export the host calls
//! at load time, before the user has granted anything. Its description
//! reports what each attempt got, one `key: outcome` line each, so a test
//! can see the refusals.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

mod attack;
use attack::attack;

struct ProbeAttack;

impl Tool for ProbeAttack {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("ProbeAttack", &attack())
    }
    fn call(_input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        out.text("called");
        Ok(())
    }
}
export_tool!(ProbeAttack);
