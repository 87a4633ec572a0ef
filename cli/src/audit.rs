//! `toolhost audit replay FILE`: the calls of an audit log whose decision
//! would change under the current settings ([`toolhost::audit_replay`]).

use anyhow::{Context as _, Result};
use toolhost::settings::Settings;
use toolhost::{Toolhost, UpstreamStart};

use super::args::{Global, ReplayArgs};
use super::exit;
use super::shown::line;
use crate::out::outln;

pub async fn replay(global: &Global, args: ReplayArgs) -> Result<u8> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading the audit log {}", args.file.display()))?;
    let (mut settings, read) = global.settings()?;
    // Replaying decides and runs nothing: it writes no audit record.
    settings.audit.path = None;
    let remember = Settings::remember_path(read.as_deref())?;
    // Replaying decides and runs nothing: no upstream server is started.
    let builder = crate::state_store::with_rule_store(Toolhost::builder(), &settings, false).await?;
    let host = builder.settings(settings, Some(remember)).upstream(UpstreamStart::None).build().await?;
    let report = toolhost::audit_replay::replay(&host, &text).await?;
    if args.json {
        let changes: Vec<_> = report
            .changes
            .iter()
            .map(|c| {
                serde_json::json!({
                    "line": c.line,
                    "call_id": c.call_id,
                    "tool": c.tool,
                    "before": c.before,
                    "after": match &c.after { Ok(d) => serde_json::to_value(d).unwrap_or_default(), Err(e) => serde_json::json!({"error": e}) },
                })
            })
            .collect();
        let out = serde_json::json!({
            "replayed": report.replayed,
            "undecided": report.undecided,
            "dropped": report.dropped,
            "tampered_at_lines": report.tampered,
            "changed": changes,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for c in &report.changes {
            let after = match &c.after {
                Ok(d) => d.to_string(),
                Err(e) => format!("cannot be decided: {e}"),
            };
            // Every field the log gave is someone's text (a forged line's
            // rule can hold escapes): each goes through the escaper.
            let before = c.before.to_string();
            outln!("line {}: {} {}: {} -> {}", c.line, line(&c.tool), line(&c.call_id), line(&before), line(&after));
        }
        let mut summary = format!("{} call(s) replayed, {} changed", report.replayed, report.changes.len());
        if report.undecided > 0 {
            summary.push_str(&format!(", {} refused before any decision (not replayed)", report.undecided));
        }
        if report.dropped > 0 {
            summary.push_str(&format!(", {} record(s) the log dropped", report.dropped));
        }
        if !report.tampered.is_empty() {
            let lines: Vec<String> = report.tampered.iter().map(usize::to_string).collect();
            summary.push_str(&format!(
                "; the log was removed, replaced or cut short behind toolhost's back before line(s) {}",
                lines.join(", ")
            ));
        }
        outln!("{summary}");
    }
    Ok(if report.changes.is_empty() { exit::OK } else { exit::ERROR })
}
