//! `StateHoarder`: a plugin granted `state` that stores a new key on each
//! `set` (`{"keys": N, "bytes": M}`: up to `N` keys of an `M`-byte string
//! each; `"cas": true` uses `compare-and-set`), and stops at the first
//! refusal. It reports how many keys were stored and the refusal.
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool, state};

struct StateHoarder;

impl Tool for StateHoarder {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("StateHoarder", "Fills the agent state with new keys.").state_injected(true)
    }
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        let keys = input["keys"].as_u64().unwrap_or(1_000_000);
        let bytes = input["bytes"].as_u64().unwrap_or(1 << 20) as usize;
        let cas = input["cas"].as_bool().unwrap_or(false);
        let value = serde_json::Value::String("v".repeat(bytes)).to_string();
        let mut stored = 0u64;
        let mut refusal = String::from("none");
        for i in 0..keys {
            let key = format!("hoard-{i}");
            let result =
                if cas { state::compare_and_set(&key, None, &value).map(|_| ()) } else { state::set(&key, &value) };
            match result {
                Ok(()) => stored += 1,
                Err(e) => {
                    refusal = e;
                    break;
                }
            }
        }
        out.text(&format!("stored {stored}\nrefused: {refusal}"));
        Ok(())
    }
}

export_tool!(StateHoarder);
