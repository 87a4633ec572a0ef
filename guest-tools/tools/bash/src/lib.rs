//! `Bash`: runs a shell command on the backend and streams its output
//! (`shared/spec/agentscope-tools.md` §5).
//!
//! * Permissions: delegated to `bash-analysis` (a real shell parser; every
//!   part of a compound command judged on its own; see
//!   `docs/bash-deviations.md`). The tool's settings (`[tools.Bash]` in
//!   `toolhost.toml`: `dangerous_files`, `dangerous_directories`) become its
//!   [`DangerLists`].
//! * Execution: a fresh `/bin/sh -c` (or `cmd /c` on a Windows backend) in
//!   the backend's working directory, streamed by `shell-exec`; see the
//!   "Execution" section of `docs/bash-deviations.md` for how the streamed
//!   output differs from the reference's single chunk.

use bash_analysis::{Behavior, DangerLists, Mode, RuleKind};
use serde::Deserialize;
use serde_json::json;
use shell_exec::{LineEndings, MAX_OUTPUT_CHARS, StreamOptions};
use toolhost_sdk::{
    Context, Decision, Output, PermissionBehavior, PermissionMode, PermissionRule, Tool, ToolError, ToolSpec, backend,
    export_tool, suggest,
};

mod description;

/// The tool.
pub struct Bash;

/// The input (validated by the host against [`Bash::spec`]'s schema).
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

/// The input schema (spec §5.1).
pub fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command to execute"
            },
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
    })
}

/// The SDK mode as the analysis's mode.
pub fn mode(m: PermissionMode) -> Mode {
    match m {
        PermissionMode::Default => Mode::Default,
        PermissionMode::AcceptEdits => Mode::AcceptEdits,
        PermissionMode::Explore => Mode::Explore,
        PermissionMode::Bypass => Mode::Bypass,
        PermissionMode::DontAsk => Mode::DontAsk,
    }
}

/// The SDK context as the analysis's context.
pub fn analysis_context(ctx: &Context) -> bash_analysis::Context {
    bash_analysis::Context {
        mode: mode(ctx.mode),
        working_dirs: ctx.working_dirs.clone(),
        cwd: ctx.cwd.clone(),
        home: ctx.home.clone(),
    }
}

/// The tool's judgement (spec §5.3), or a denial naming the fault when the
/// tool's settings are malformed (fail closed: a dangerous-file list that
/// cannot be read must not silently become the default one).
pub fn decide(command: &str, ctx: &Context) -> Decision {
    let lists = match danger_lists(&ctx.tool_config) {
        Ok(l) => l,
        Err(e) => {
            return Decision::deny(format!(
                "The Bash tool's settings are invalid: {e}. Fix `[tools.Bash]` in toolhost.toml (or `tool_config`)."
            ))
            .because("Invalid Bash tool configuration");
        }
    };
    let v = bash_analysis::check_permissions(command, &analysis_context(ctx), &lists);
    let d = match v.behavior {
        Behavior::Allow => Decision::allow(v.message),
        Behavior::Deny => Decision::deny(v.message),
        Behavior::Ask if v.bypass_immune => Decision::safety_ask(v.message),
        Behavior::Ask => Decision::ask(v.message),
        Behavior::Passthrough => Decision::passthrough(v.message),
    };
    match v.reason {
        Some(r) => d.because(r),
        None => d,
    }
}

thread_local! {
    /// The lists built from the last tool configuration seen: one instance
    /// answers many checks with the same settings.
    static LISTS: std::cell::RefCell<Option<(serde_json::Value, std::rc::Rc<DangerLists>)>> =
        const { std::cell::RefCell::new(None) };
}

/// [`DangerLists::from_tool_config`], remembered for the last configuration
/// (a pure function of it; errors are not remembered).
fn danger_lists(config: &serde_json::Value) -> Result<std::rc::Rc<DangerLists>, String> {
    if let Some(lists) = LISTS.with_borrow(|c| c.as_ref().filter(|(k, _)| k == config).map(|(_, l)| l.clone())) {
        return Ok(lists);
    }
    let lists = std::rc::Rc::new(DangerLists::from_tool_config(config)?);
    LISTS.set(Some((config.clone(), lists.clone())));
    Ok(lists)
}

/// The argv that runs `command` on a backend of this OS family.
pub fn argv(os: backend::OsFamily, command: &str) -> Vec<String> {
    match os {
        backend::OsFamily::Windows => vec!["cmd".into(), "/c".into(), command.into()],
        backend::OsFamily::Posix => vec!["/bin/sh".into(), "-c".into(), command.into()],
    }
}

impl Tool for Bash {
    type Input = Input;

    fn spec() -> ToolSpec {
        ToolSpec::new("Bash", description::DESCRIPTION)
            .schema(schema())
            .read_only(false)
            .concurrency_safe(false)
            .runs_processes()
    }

    fn check_read_only(input: &Input) -> bool {
        bash_analysis::check_read_only(&input.command)
    }

    fn check_permissions(input: &Input, ctx: &Context) -> Decision {
        decide(&input.command, ctx)
    }

    fn match_rules(behavior: PermissionBehavior, contents: &[String], input: &Input, _ctx: &Context) -> Option<u32> {
        let kind = match behavior {
            PermissionBehavior::Allow => RuleKind::Allow,
            PermissionBehavior::Deny => RuleKind::Deny,
            PermissionBehavior::Ask => RuleKind::Ask,
            // Rules are only ever allow, deny or ask; nothing matches otherwise.
            PermissionBehavior::Passthrough => return None,
        };
        bash_analysis::match_rules(kind, contents, &input.command).and_then(|i| u32::try_from(i).ok())
    }

    /// One narrow rule per part that is not read-only
    /// ([`bash_analysis::suggestions`]); none for a safety ask, which no
    /// allow rule can silence.
    fn suggestions(input: &Input, ctx: &Context) -> Vec<PermissionRule> {
        if decide(&input.command, ctx).bypass_immune {
            return Vec::new();
        }
        bash_analysis::suggestions(&input.command).into_iter().map(|c| suggest("Bash", Some(c))).collect()
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        let timeout_ms = shell_exec::timeout_ms(input.timeout.as_ref()).map_err(ToolError::InvalidInput)?;
        let opts =
            StreamOptions { command: &input.command, timeout_ms, endings: LineEndings::CrLf, limit: MAX_OUTPUT_CHARS };
        shell_exec::run(argv(backend::os(), &input.command), &opts, out)
    }
}

export_tool!(Bash);

#[cfg(test)]
mod tests;
