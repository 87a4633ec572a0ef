//! `TrapEvery`: traps in the export its input names (`trap`), by a panic
//! (`"how": "panic"`, the default) or a bare `unreachable` with no message
//! (`"abort"`). Granted `fs-write` and `exec`, its `call` writes `marker`
//! (when given) before anything else, so a test sees whether `call` ran
//! with its grants:
//!
//! - `trap`: `check-read-only`, `check-permissions`, `match-rule`,
//!   `generate-suggestions` or `call` trap on entry; `call-after-spawn`
//!   starts `sh -c 'sleep 600' <tag>` and then traps; `none` traps nowhere;
//! - `hold`: `call` starts the same process, emits `spawned`, and waits
//!   for it (until something stops the call).
//!
//! Its metadata cannot trap on demand (no input exists at load):
//! `trap-metadata` does that.
use serde::Deserialize;
use toolhost_sdk::{
    Context, Decision, Output, PermissionBehavior, PermissionRule, Tool, ToolError, ToolSpec, backend, export_tool,
};

struct TrapEvery;

#[derive(Deserialize)]
struct Input {
    trap: String,
    #[serde(default)]
    how: String,
    #[serde(default)]
    marker: Option<String>,
    #[serde(default)]
    tag: String,
    #[serde(default)]
    hold: bool,
}

/// Traps when `input` names `export`.
fn maybe_trap(input: &Input, export: &str) {
    if input.trap != export {
        return;
    }
    if input.how == "abort" {
        std::process::abort();
    }
    panic!("TrapEvery traps in {export}");
}

/// Starts a process that sleeps, tagged with `tag` as its `$0`.
fn sleeper(tag: &str) -> Result<backend::Process, ToolError> {
    backend::spawn(&backend::ExecRequest {
        argv: vec!["/bin/sh".into(), "-c".into(), "sleep 600".into(), tag.into()],
        cwd: None,
        env: vec![],
        timeout_ms: 600_000,
        max_output_bytes: 0,
    })
}

impl Tool for TrapEvery {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("TrapEvery", "Traps in the export its input names.")
            .schema(serde_json::json!({
                "type": "object",
                "properties": {
                    "trap": {"enum": ["none", "check-read-only", "check-permissions", "match-rule",
                                      "generate-suggestions", "call", "call-after-spawn"]},
                    "how": {"enum": ["panic", "abort"]},
                    "marker": {"type": "string"},
                    "tag": {"type": "string"},
                    "hold": {"type": "boolean"}
                },
                "required": ["trap"]
            }))
            .writes("$WORKDIRS")
            .runs_processes()
    }
    fn check_read_only(input: &Input) -> bool {
        maybe_trap(input, "check-read-only");
        false
    }
    fn check_permissions(input: &Input, _ctx: &Context) -> Decision {
        maybe_trap(input, "check-permissions");
        Decision::passthrough("")
    }
    fn match_rules(_behavior: PermissionBehavior, _contents: &[String], input: &Input, _ctx: &Context) -> Option<u32> {
        maybe_trap(input, "match-rule");
        None
    }
    fn suggestions(input: &Input, _ctx: &Context) -> Vec<PermissionRule> {
        maybe_trap(input, "generate-suggestions");
        vec![toolhost_sdk::suggest("TrapEvery", None)]
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        maybe_trap(&input, "call");
        if let Some(marker) = &input.marker {
            backend::write_file(marker, b"call ran")?;
        }
        if input.trap == "call-after-spawn" {
            let _process = sleeper(&input.tag)?;
            panic!("TrapEvery traps in call after starting a process");
        }
        if input.hold {
            let process = sleeper(&input.tag)?;
            out.text("spawned\n");
            process.wait();
        }
        out.text("ran");
        Ok(())
    }
}
export_tool!(TrapEvery);
