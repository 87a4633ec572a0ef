//! `toolhost inspect FILE.wasm`.

use anyhow::{Context as _, Result};
use toolhost::runtime::{Runtime, RuntimeOptions};
use toolhost::tool::{Origin, load_component};

use super::args::{Global, InspectArgs};
use super::exit;
use super::shown::{block, line};
use crate::out::outln;

pub async fn inspect(global: &Global, args: InspectArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let runtime = Runtime::new(&RuntimeOptions {
        cache_dir: Some(settings.cache_dir()),
        limits: settings.limits,
        ..Default::default()
    })?;
    let bytes = std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let label = args.file.display().to_string();
    let report = load_component(&runtime, &bytes, Origin::File(args.file.clone()), &label).await?;
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
