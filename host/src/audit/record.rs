//! What one line of the audit log holds.

use serde::{Deserialize, Serialize};

use crate::permission::{Behavior, Decision, Mode, Source};

/// One call, as the log keeps it (`"kind": "call"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Always `call`.
    pub kind: String,
    /// When the call started, UTC, RFC 3339 with milliseconds.
    pub time: String,
    /// The call id.
    pub call_id: String,
    /// The session's state file, or `null` for the host's own state.
    pub session: Option<String>,
    /// The process that took the call, by its replica id (`serve
    /// --replica-id`); absent for a process that was given none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// Who made the call, as the front end that took it knows it (an MCP
    /// client of `toolhost serve`); absent for `call`, `run` and library
    /// calls that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<Caller>,
    /// The tool name as called.
    pub tool: String,
    /// The SHA-256 of the tool's component (built-ins too); `null` when the
    /// call stopped before the tool was found.
    pub plugin_sha256: Option<String>,
    /// The mode the call was decided in.
    pub mode: Mode,
    /// The input, its string values redacted; the raw text (redacted) when
    /// it was not JSON.
    pub input: serde_json::Value,
    /// The permission decision; `null` when the call was refused before it
    /// (unknown tool, invalid input).
    pub decision: Option<DecisionRecord>,
    /// Decisions on inputs a middleware rewrote, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redecisions: Vec<DecisionRecord>,
    /// The user's answer to an ask: `allow_once`, `allow_and_remember`, `deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Every file and process operation the tool asked the host for, in
    /// order, redacted like the input.
    pub ops: Vec<HostOp>,
    /// Operations past the per-record limit, counted only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ops_dropped: u64,
    /// `success`, `error`, `denied`, `interrupted`, or `external` (handed to
    /// an external executor) / `gone` (the caller went away).
    pub outcome: String,
    /// Wall time of the call, microseconds.
    pub duration_us: u64,
    /// Bytes of text in the response.
    pub output_bytes: u64,
}

/// The caller of a call, as its front end names it: enough to tell clients
/// apart in the log, never a secret of theirs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    /// How the call arrived: `mcp-http` or `mcp-stdio` from `toolhost serve`.
    pub front: String,
    /// The MCP protocol version the request spoke (`2025-11-25`,
    /// `2026-07-28`), when the front end speaks MCP.
    pub protocol: Option<String>,
    /// A name for the client's session that is not its secret: for an MCP
    /// HTTP session, `sha256:` and the first 16 hex digits of the SHA-256 of
    /// its `Mcp-Session-Id` (the id itself lets anyone who reads it act in
    /// the session). `null` where the protocol has no sessions (2026-07-28:
    /// each request stands alone) or the transport has one client (stdio).
    pub session: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Records the writer dropped because its queue was full
/// (`"kind": "dropped"`), written before the next record that fits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// Always `dropped`.
    pub kind: String,
    /// When the count was written.
    pub time: String,
    /// How many records were lost since the last such line.
    pub count: u64,
}

/// What the writer saw of its file since its last write that it did not
/// do itself (`"kind": "tampered"`): the file removed, replaced by another
/// or cut short. Written first into the file it then opened (created
/// again when removed), so the gap in the record is on record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tampered {
    /// Always `tampered`.
    pub kind: String,
    /// When the writer noticed.
    pub time: String,
    /// What it saw.
    pub seen: String,
}

/// A permission decision, as logged and as replay compares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// `allow`, `deny` or `ask`.
    pub behavior: Behavior,
    /// The step that decided (`deny_rule`, `read_only`, `mode_fallback`, ...).
    pub step: Source,
    /// The rule that decided, when a rule did.
    pub rule: Option<String>,
    /// The reference message.
    pub message: String,
}

impl From<&Decision> for DecisionRecord {
    fn from(d: &Decision) -> Self {
        DecisionRecord { behavior: d.behavior, step: d.source, rule: d.rule.clone(), message: d.message.clone() }
    }
}

impl std::fmt::Display for DecisionRecord {
    /// `deny (deny_rule Bash(rm:*))`, `allow (read_only)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}", self.behavior, self.step.as_str())?;
        if let Some(rule) = &self.rule {
            write!(f, " {rule}")?;
        }
        f.write_str(")")
    }
}

/// One operation a tool made through the host's backend imports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum HostOp {
    /// A file read (whole contents).
    Read {
        /// The absolute path.
        path: String,
        /// Whether the backend allowed and did it.
        ok: bool,
    },
    /// A file written.
    Write {
        /// The absolute path.
        path: String,
        /// Bytes written.
        bytes: u64,
        /// Whether the backend allowed and did it.
        ok: bool,
    },
    /// A folder made.
    CreateDir {
        /// The absolute path.
        path: String,
        /// Whether it was done.
        ok: bool,
    },
    /// A file or folder removed.
    Remove {
        /// The absolute path.
        path: String,
        /// Whether it was done.
        ok: bool,
    },
    /// A folder listed, walked or searched, or a path looked up.
    List {
        /// `stat`, `list_dir`, `real_path`, `walk` or `search`.
        how: String,
        /// The absolute path or root.
        path: String,
        /// Whether it was done.
        ok: bool,
    },
    /// A process started.
    Spawn {
        /// Its command line, as the backend ran it.
        argv: Vec<String>,
        /// Its working directory (`null`: the backend's).
        cwd: Option<String>,
        /// Whether it started.
        ok: bool,
    },
}

impl HostOp {
    /// Applies the redaction rules to its paths and command line (a
    /// command line carries the input it came from).
    pub fn redact(&mut self) {
        let fix = |s: &mut String| {
            let (text, n) = toolhost_redaction::redact(s);
            if n > 0 {
                *s = text;
            }
        };
        match self {
            HostOp::Read { path, .. }
            | HostOp::Write { path, .. }
            | HostOp::CreateDir { path, .. }
            | HostOp::Remove { path, .. }
            | HostOp::List { path, .. } => fix(path),
            HostOp::Spawn { argv, cwd, .. } => {
                argv.iter_mut().for_each(fix);
                if let Some(cwd) = cwd {
                    fix(cwd);
                }
            }
        }
    }
}

/// `t` as RFC 3339 UTC with milliseconds (`2026-12-01T22:16:02.123Z`).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let u = crate::utc::UtcTime::of(t);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", u.year, u.month, u.day, u.hour, u.minute, u.second, u.millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_is_utc_calendar_time() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 2026-12-01T22:16:02.5Z
        let t = UNIX_EPOCH + Duration::from_millis(1_796_163_362_500);
        assert_eq!(rfc3339(t), "2026-12-01T22:16:02.500Z");
        // A leap day.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.000Z");
    }
}
