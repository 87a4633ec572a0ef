//! `toolhost inspect FILE.wasm` and `toolhost inspect OLD.wasm NEW.wasm`.

use std::path::Path;

use anyhow::{Context as _, Result};
use toolhost::capability_diff::CapabilityDiff;
use toolhost::engine::{Runtime, RuntimeOptions};
use toolhost::settings::Settings;
use toolhost::tool::{LoadReport, Origin, load_component};

use super::args::{Global, InspectArgs};
use super::exit;
use super::shown::{block, line};
use crate::out::outln;

pub async fn inspect(global: &Global, args: InspectArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let runtime = standalone_runtime(&settings)?;
    let (bytes, report) = load(&runtime, &args.file).await?;
    if let Some(new) = &args.new {
        let (_, newer) = load(&runtime, new).await?;
        return diff(&report, &newer, args.json);
    }
    let info = &report.tool.info;
    if args.json {
        let mut value = serde_json::to_value(info)?;
        value["imports"] = serde_json::json!(report.imports);
        value["size_bytes"] = serde_json::json!(bytes.len());
        outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(exit::OK);
    }
    outln!("{}  ({} bytes)", args.file.display(), bytes.len());
    outln!("tool:          {}", line(&info.name));
    outln!("WIT:           toolhost:tool@{}", info.wit_version);
    outln!("sha256:        {}", info.sha256);
    outln!(
        "flags:         read-only {}, concurrency-safe {}, external {}, state-injected {}",
        info.read_only,
        info.concurrency_safe,
        info.external,
        info.state_injected
    );
    outln!("capabilities:  {}", super::list::declared(info));
    outln!("imports:");
    for import in &report.imports {
        outln!("  {}", line(import));
    }
    outln!("description:\n  {}", block(&info.description).replace('\n', "\n  "));
    Ok(exit::OK)
}

/// A runtime with the settings' cache and limits, for loading components
/// without a host (no grants, no backend: metadata only).
pub fn standalone_runtime(settings: &Settings) -> Result<Runtime> {
    Runtime::new(&RuntimeOptions {
        cache_dir: Some(settings.cache_dir()),
        cache_max_bytes: settings.cache_max_bytes,
        limits: settings.limits,
        ..Default::default()
    })
}

async fn load(runtime: &Runtime, file: &Path) -> Result<(Vec<u8>, LoadReport)> {
    let bound = runtime.limits().component_bound();
    let bytes = toolhost::own_file::read(file, bound).with_context(|| format!("reading {}", file.display()))?.bytes;
    let label = file.display().to_string();
    let report = load_component(runtime, &bytes, Origin::File(file.to_path_buf()), &label).await?;
    Ok((bytes, report))
}

/// What NEW declares beyond OLD (and no longer declares), as a reload of
/// OLD's file with NEW's bytes would judge it.
fn diff(old: &LoadReport, new: &LoadReport, json: bool) -> Result<u8> {
    let (old, new) = (&old.tool.info, &new.tool.info);
    let diff = CapabilityDiff::between(&old.capabilities, &new.capabilities);
    if json {
        let value = serde_json::json!({
            "old": {"name": old.name, "sha256": old.sha256},
            "new": {"name": new.name, "sha256": new.sha256},
            "added": diff.added,
            "removed": diff.removed,
            "asks_for_more": diff.asks_for_more(),
            "grant_flags": diff.grant_flags(&new.name),
        });
        outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(exit::OK);
    }
    outln!("old:  {}  sha256 {}", line(&old.name), old.sha256);
    outln!("new:  {}  sha256 {}", line(&new.name), new.sha256);
    if old.name != new.name {
        outln!("the name changes: a reload keeps the name, so the watcher refuses NEW in OLD's place");
    }
    outln!("capabilities (+ declared by NEW beyond OLD, - no longer declared):\n{diff}");
    if diff.asks_for_more() {
        let flags = diff.grant_flags(&new.name);
        outln!("a watching serve holds NEW back until approved; what it asks is granted with: {}", flags.join(" "));
    }
    Ok(exit::OK)
}
