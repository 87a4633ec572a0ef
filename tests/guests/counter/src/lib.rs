//! `Counter`: counts its calls in the agent state (key `counter`) and
//! answers `call N`; calls up to `fail_until` fail with an I/O error
//! (a transient failure, for the retry tests). Needs the `state` grant.
//! Its metadata says read-only (what the cache middleware looks at), but
//! `check-read-only` says no: it writes the state, which a call admitted as
//! read-only may not, so its calls are asked about and run with the grants.
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool, state};

struct Counter;

#[derive(Deserialize)]
struct Input {
    #[serde(default)]
    fail_until: u32,
}

impl Tool for Counter {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("Counter", "Counts its calls.")
            .schema(serde_json::json!({"type": "object", "properties": {"fail_until": {"type": "integer", "minimum": 0}, "tag": {"type": "string"}}}))
            .read_only(true)
            .state_injected(true)
    }
    fn check_read_only(_input: &Input) -> bool {
        false
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        let n = state::get("counter").ok().flatten().and_then(|v| v.parse::<u32>().ok()).unwrap_or(0) + 1;
        state::set("counter", &n.to_string()).map_err(ToolError::Denied)?;
        if n <= input.fail_until {
            return Err(ToolError::Io(format!("transient failure on call {n}")));
        }
        out.text(&format!("call {n}"));
        Ok(())
    }
}
export_tool!(Counter);
