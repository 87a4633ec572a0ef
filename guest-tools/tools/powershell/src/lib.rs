//! `PowerShell`: runs a PowerShell command on the backend and streams its
//! output (`shared/spec/agentscope-tools.md` §5.10).
//!
//! * Permissions: every call asks (non-immune `Execute PowerShell command`;
//!   no static analysis of PowerShell exists), only tool-level rules match,
//!   and no rule is suggested.
//! * Execution: `pwsh`, else `powershell.exe` (probed each call, see
//!   [`probe`]), with the command passed through `-EncodedCommand` (see
//!   [`encode`]); output handled as Bash's, with every line ending
//!   normalised to `\n`.

use serde::Deserialize;
use serde_json::json;
use shell_exec::{LineEndings, MAX_OUTPUT_CHARS, StreamOptions};
use toolhost_sdk::{
    Context, Decision, Output, PermissionRule, ResultState, Tool, ToolError, ToolSpec, export_tool, text_chunk,
};

pub mod encode;
pub mod probe;

/// The tool.
pub struct PowerShell;

/// The input (the same schema as Bash).
#[derive(Debug, Deserialize)]
pub struct Input {
    /// The command to run.
    pub command: String,
    /// What the command does, for the user (not used to run it).
    #[serde(default)]
    pub description: Option<String>,
    /// Milliseconds before the process group is killed.
    #[serde(default)]
    pub timeout: Option<serde_json::Number>,
}

/// Returned when neither `pwsh` nor `powershell.exe` starts.
pub const NOT_AVAILABLE: &str = "PowerShell is not available: neither pwsh nor powershell.exe was found on the backend. Install PowerShell (https://aka.ms/powershell) or use the Bash tool.";

/// The description the model reads.
pub const DESCRIPTION: &str = "\
Executes a PowerShell command and returns its output.

Each call starts a new PowerShell process (`pwsh`, or Windows PowerShell `powershell.exe` when pwsh is missing) in the working directory, without a profile and non-interactively. Nothing persists between calls: a `Set-Location`, variables, functions and imported modules last only until the end of that one command.

Usage:
- Prefer the dedicated tools: Glob to find files, Grep to search contents, Read to read files, Edit and Write to change them. Keep PowerShell for running programs and cmdlets.
- Use absolute paths, or paths relative to the working directory, instead of changing directory. Quote paths that contain spaces.
- `timeout` is in milliseconds: 120000 (2 minutes) by default, at most 600000 (10 minutes). At the timeout the command and every process it started are killed.
- Output and errors come back together, in the order they were written, streamed while the command runs, with line endings as `\\n`. Output past 30000 characters is cut and marked `... (output truncated)`; use `Select-Object -First N` or `-Last N` for big outputs.
- The exit code is that of the last native program the command ran (or `exit N`); a non-zero one ends the result with `Command failed with exit code N: <command>`.
- Give a short `description` of what the command does (5-10 words), for the user.
- Every PowerShell command needs the user's approval unless a rule allows the PowerShell tool as a whole.";

impl Tool for PowerShell {
    type Input = Input;

    fn spec() -> ToolSpec {
        ToolSpec::new("PowerShell", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The PowerShell command to execute"},
                    "description": {
                        "type": "string",
                        "description": "Clear, concise description of what this command does in 5-10 words"
                    },
                    "timeout": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": shell_exec::MAX_TIMEOUT_MS,
                        "default": shell_exec::DEFAULT_TIMEOUT_MS,
                        "description": "Optional timeout in milliseconds (default 120000, at most 600000); the command and everything it started are killed when it expires"
                    }
                },
                "required": ["command"]
            }))
            .read_only(false)
            .concurrency_safe(false)
            .runs_processes()
    }

    fn check_permissions(_input: &Input, _ctx: &Context) -> Decision {
        Decision::ask("Execute PowerShell command").because("PowerShell command validation is not enabled")
    }

    fn suggestions(_input: &Input, _ctx: &Context) -> Vec<PermissionRule> {
        Vec::new()
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        let timeout_ms = shell_exec::timeout_ms(input.timeout.as_ref()).map_err(ToolError::InvalidInput)?;
        let Some(exe) = probe::find()? else {
            out.emit(text_chunk(NOT_AVAILABLE, ResultState::Error, None));
            return Ok(());
        };
        let opts =
            StreamOptions { command: &input.command, timeout_ms, endings: LineEndings::All, limit: MAX_OUTPUT_CHARS };
        shell_exec::run(encode::argv(exe, &input.command), &opts, out)
    }
}

export_tool!(PowerShell);

#[cfg(test)]
mod tests;
