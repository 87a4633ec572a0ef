//! Embedding toolhost with the user's `toolhost.toml`: the library builds
//! everything the file describes — built-ins, plugins, middleware, tool
//! groups, skills and the tools of `[mcp_servers]` — so this program lists
//! the same tools as `toolhost list`. Prints one JSON object: `tools` (what
//! `toolhost list --json` prints), `groups` (each group's tools) and
//! `middleware` (the tools each layer is attached to).
//!
//! Run: `cargo run -p embed-toolhost --bin embed-list -- [--config FILE] [--allow RULE]…`

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use toolhost::prelude::*;

#[tokio::main]
async fn main() -> Result<()> {
    let (config, overlay) = arguments()?;
    // The file as `toolhost` finds it (--config, else ./toolhost.toml), the
    // arguments laid over it as the CLI lays its flags.
    let (mut settings, read) = Settings::discover(config.as_deref())?;
    overlay.apply(&mut settings, &std::env::current_dir()?)?;
    let remember = Settings::remember_path(read.as_deref())?;
    let host = Toolhost::builder().settings(settings, Some(remember)).build().await?;
    for problem in host.upstream_problems().iter().chain(host.skill_problems()) {
        // What an upstream server or a skill folder says is hostile text.
        eprintln!("warning: {}", toolhost::escape::line(problem));
    }
    // Plugins that compile in the background are listed once loaded.
    host.ready().await?;

    let tools = host.available(None).await?;
    let groups: BTreeMap<&str, &[String]> =
        host.groups().groups().iter().map(|g| (g.name.as_str(), g.tools.as_slice())).collect();
    let middleware: BTreeMap<String, Vec<&str>> = host
        .middleware()
        .into_iter()
        .map(|m| {
            let on = tools.iter().filter(|t| host.middleware_for(&t.name).contains(&m.name)).map(|t| t.name.as_str());
            (m.name.clone(), on.collect())
        })
        .collect();
    let listing = serde_json::json!({ "tools": tools, "groups": groups, "middleware": middleware });
    println!("{}", serde_json::to_string_pretty(&listing)?);
    Ok(())
}

/// `--config FILE` and the settings given as arguments (`--allow RULE`,
/// `--workdir DIR`, `--plugin FILE`).
fn arguments() -> Result<(Option<PathBuf>, Overlay)> {
    let mut config = None;
    let mut overlay = Overlay::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--config" => config = Some(PathBuf::from(value)),
            "--allow" => overlay.allow.push(value),
            "--workdir" => overlay.working_dirs.push(value.into()),
            "--plugin" => overlay.plugins.push(value.into()),
            other => {
                bail!("unknown argument {other}: expected --config FILE, --allow RULE, --workdir DIR or --plugin FILE")
            }
        }
    }
    Ok((config, overlay))
}
