//! `toolhost status`: with `[state] store = "redis"`, every live replica of
//! the deployment as the shared store knows it (from any machine); and what
//! each `toolhost serve --watch` of this machine has loaded, read from the
//! status files it keeps in the state folder
//! ([`toolhost::settings::Settings::serve_status_dir`]).

use std::path::Path;

use anyhow::{Context as _, Result};
use toolhost::coordination::{ReplicaRecord, ReplicaRegistry};
use toolhost::reload::StatusReport;

use super::args::{Global, StatusArgs};
use super::exit;
use super::shown::{block, line};
use crate::out::outln;

pub async fn status(global: &Global, args: StatusArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let dir = settings.serve_status_dir();
    let reports = read_reports(&dir)?;
    let replicas = match crate::state_store::shared(&settings, false).await? {
        Some(store) => {
            Some(ReplicaRegistry::replicas(&*store).await.context("listing the replicas in the shared state store")?)
        }
        None => None,
    };
    if args.json {
        let json = match &replicas {
            Some(replicas) => serde_json::json!({"replicas": replicas, "watching": reports}),
            None => serde_json::to_value(&reports)?,
        };
        outln!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(exit::OK);
    }
    if let Some(replicas) = &replicas {
        show_replicas(replicas);
    }
    if reports.is_empty() {
        outln!(
            "no watching toolhost serve is running (start one with `toolhost serve --watch`; status files: {})",
            dir.display()
        );
        return Ok(exit::OK);
    }
    for report in &reports {
        outln!("toolhost serve (pid {}): {} watched file(s)", report.pid, report.files.len());
        for f in &report.files {
            let name = f.name.as_deref().map(|n| line(n).into_owned()).unwrap_or_else(|| "(nothing loaded)".into());
            outln!("  {name}  ({:?})", f.kind);
            outln!("    file:    {}", line(&f.file.display().to_string()));
            if !f.sha256.is_empty() {
                outln!("    sha256:  {}", line(&f.sha256));
            }
            outln!("    grants:  {}", line(&f.grants));
            if let Some(error) = &f.last_error {
                outln!("    last reload error:\n      {}", block(error).replace('\n', "\n      "));
            }
        }
        for p in &report.loading {
            let state = if p.compiling { "compiling" } else { "queued" };
            outln!("  loading in the background ({state}): {}", line(&p.file.display().to_string()));
        }
    }
    Ok(exit::OK)
}

/// Each live replica: who, since when, what it serves under which policy
/// (the digests, and the parts of the policy where it differs from the
/// first replica), its reload errors and a clash of ids.
fn show_replicas(replicas: &[ReplicaRecord]) {
    if replicas.is_empty() {
        outln!("no replica is registered in the shared state store (a `toolhost serve` registers while it runs)");
        return;
    }
    let first = &replicas[0];
    let short = |digest: &str| digest.chars().take(16).collect::<String>();
    for r in replicas {
        outln!("replica {}  ({}, toolhost {})", line(&r.id), line(&r.process()), line(&r.version));
        outln!("  started:   {}", line(&r.started));
        outln!("  heartbeat: {}", line(&r.heartbeat));
        let same_tools = if r.tools == first.tools { "" } else { "  (differs from the first replica's)" };
        outln!("  tools:     sha256 {}{same_tools}", short(&r.tools));
        let differences = r.policy_differences(first);
        if differences.is_empty() {
            outln!("  policy:    the same as every replica listed before");
        } else {
            outln!("  policy:    differs from replica {} in {}", line(&first.id), line(&differences.join(", ")));
        }
        for error in &r.reload_errors {
            outln!("  reload error: {}", line(error));
        }
        if let Some(other) = &r.clash {
            outln!(
                "  CLASH: another live process uses this replica id ({}); give each its own --replica-id",
                line(other)
            );
        }
    }
}

/// The reports of the serve processes still running, by pid. A file left by
/// a process that is gone (killed before it could remove it) is skipped.
fn read_reports(dir: &Path) -> Result<Vec<StatusReport>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading the status folder {}", dir.display())),
    };
    let mut reports = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = std::fs::read(&path) else { continue };
        let report: StatusReport = serde_json::from_slice(&text)
            .with_context(|| format!("the status file {} is not one toolhost wrote", path.display()))?;
        if Path::new("/proc").join(report.pid.to_string()).exists() {
            reports.push(report);
        }
    }
    reports.sort_by_key(|r| r.pid);
    Ok(reports)
}
