//! `toolhost audit replay FILE`: every call of an audit log decided again
//! under the settings in force, and the calls whose decision would change.
//! A regression test for a policy change: replay last week's log against
//! the new rules before they go live.
//!
//! Each `call` record with a decision is re-decided with the permission
//! engine, as `toolhost check` would: the logged tool, mode and input
//! (redacted as logged: a rule that matches a secret's value sees
//! `[REDACTED]`), the current rules, working directories and tools. A
//! call whose behaviour (allow, deny, ask) differs is a change. Calls the
//! log shows refused before the decision (unknown tool, invalid input) and
//! `dropped` lines are counted, `tampered` lines noted, none replayed.

use anyhow::{Context as _, Result};

use crate::Toolhost;
use crate::audit::{DecisionRecord, Record};

/// One logged call whose decision would now be different.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The line of the log (1-based).
    pub line: usize,
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The decision as logged.
    pub before: DecisionRecord,
    /// The decision now, or why there is none (the tool is gone, its input
    /// no longer validates).
    pub after: Result<DecisionRecord, String>,
}

/// What a replay found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Calls decided again.
    pub replayed: usize,
    /// Calls with no decision to compare (refused before it).
    pub undecided: usize,
    /// Records the log says were dropped (never written).
    pub dropped: u64,
    /// The lines where the writer says the file was removed, replaced or
    /// cut short behind its back (records before may be missing).
    pub tampered: Vec<usize>,
    /// The calls whose decision changed, in log order.
    pub changes: Vec<Change>,
}

/// Replays the log `text` (JSON lines) on `host`. A line that is not a
/// record of the audit log is an error naming the line.
pub async fn replay(host: &Toolhost, text: &str) -> Result<Report> {
    let mut report = Report::default();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("line {number} of the audit log is not JSON"))?;
        match value.get("kind").and_then(|k| k.as_str()) {
            Some("dropped") => {
                report.dropped += value.get("count").and_then(|c| c.as_u64()).unwrap_or(0);
                continue;
            }
            Some("tampered") => {
                report.tampered.push(number);
                continue;
            }
            Some("call") => {}
            _ => anyhow::bail!("line {number} of the audit log is not an audit record (no \"kind\": \"call\")"),
        }
        let record: Record = serde_json::from_value(value)
            .with_context(|| format!("line {number} of the audit log is not a call record"))?;
        let Some(before) = record.decision.clone() else {
            report.undecided += 1;
            continue;
        };
        report.replayed += 1;
        let after = redecide(host, &record).await;
        let changed = match &after {
            Ok(now) => now.behavior != before.behavior,
            Err(_) => true,
        };
        if changed {
            report.changes.push(Change { line: number, call_id: record.call_id, tool: record.tool, before, after });
        }
    }
    Ok(report)
}

async fn redecide(host: &Toolhost, record: &Record) -> Result<DecisionRecord, String> {
    let ctx = host.permission_context(&record.tool, record.mode);
    let rules = host.rules();
    host.check(&record.tool, &record.input, &ctx, &rules)
        .await
        .map(|d| DecisionRecord::from(&d))
        .map_err(|e| format!("{e:#}"))
}
