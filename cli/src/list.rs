//! `toolhost list` and `toolhost describe`.

use anyhow::{Result, bail};
use toolhost::tool::{LookupError, Origin, ToolInfo};

use super::args::{DescribeArgs, Global, ListArgs};
use super::exit;
use super::shown::{block, line};
use crate::out::outln;

pub async fn list(global: &Global, args: ListArgs) -> Result<u8> {
    let host = global.host().await?;
    crate::first_run::wait_for_plugins(&host).await?;
    let session = match &args.session {
        Some(name) => Some(super::call::peek_session(host.settings(), name).await?),
        None => None,
    };
    let tools = host.available(session.as_deref()).await?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(exit::OK);
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    outln!("{:width$}  {:5}  {:8}  {:8}  DESCRIPTION", "NAME", "FLAGS", "ORIGIN", "CAPS");
    for t in &tools {
        let summary = t.description.lines().next().unwrap_or("");
        let summary: String = summary.chars().take(60).collect();
        let summary = line(&summary);
        outln!("{:width$}  {:5}  {:8}  {:8}  {summary}", line(&t.name), flags(t), origin(t), caps(t));
    }
    outln!("\nflags: r read-only, c concurrency-safe, x external, s state-injected");
    let groups = host.groups().groups();
    if !groups.is_empty() {
        let active = session.as_deref().unwrap_or(host.state()).active_groups().await?;
        outln!("\nGROUPS (turned on and off with reset_tools; `basic`, every other tool, is always on)");
        for g in groups {
            let on = if active.contains(&g.name) { "on " } else { "off" };
            outln!("{}  {on}  {}  ({})", line(&g.name), line(&g.description), line(&g.tools.join(", ")));
        }
    }
    let middleware = host.middleware();
    if !middleware.is_empty() {
        outln!("\nMIDDLEWARE");
        for m in &middleware {
            let tools: Vec<String> = tools
                .iter()
                .filter(|t| host.middleware_for(&t.name).contains(&m.name))
                .map(|t| t.name.clone())
                .collect();
            let attached =
                if tools.is_empty() { "not attached".to_string() } else { format!("on {}", tools.join(", ")) };
            let summary = line(m.description.lines().next().unwrap_or(""));
            outln!("{:width$}  {summary}  ({attached})", line(&m.name));
        }
    }
    Ok(exit::OK)
}

pub async fn describe(global: &Global, args: DescribeArgs) -> Result<u8> {
    let host = global.host().await?;
    crate::first_run::wait_for_plugins(&host).await?;
    let t = match host.describe(&args.tool).await {
        Ok(t) => t,
        Err(LookupError::Unknown(_)) => {
            bail!("no tool named '{}' is loaded (loaded: {})", args.tool, host.names().join(", "))
        }
        Err(e) => return Err(e.into()),
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&t)?);
        return Ok(exit::OK);
    }
    let grants = host.grants_for(&t);
    outln!("{}\n", line(&t.name));
    outln!("{}\n", block(&t.description));
    outln!(
        "read-only: {}   concurrency-safe: {}   external: {}   state-injected: {}",
        t.read_only,
        t.concurrency_safe,
        t.external,
        t.state_injected
    );
    let from = match &t.origin {
        Origin::Builtin => "built-in".to_string(),
        Origin::File(p) => p.display().to_string(),
        Origin::Native => "native (registered from Rust)".to_string(),
        Origin::Mcp(server) => format!("MCP server {server}"),
    };
    outln!("origin: {from}   WIT: toolhost:tool@{}   sha256: {}", t.wit_version, t.sha256);
    outln!("declared capabilities: {}", declared(&t));
    let roots: Vec<String> = grants
        .fs
        .roots()
        .iter()
        .map(|r| format!("{} ({})", line(&r.path.display().to_string()), if r.write { "rw" } else { "ro" }))
        .collect();
    outln!(
        "granted: files [{}], exec {}, state {}",
        roots.join(", "),
        if grants.process_exec { "yes" } else { "no" },
        if grants.state { "yes" } else { "no" }
    );
    let layers = host.middleware_for(&t.name);
    if !layers.is_empty() {
        outln!("middleware (outermost first): {}", line(&layers.join(", ")));
    }
    outln!("\ninput schema:\n{}", serde_json::to_string_pretty(&t.input_schema)?);
    Ok(exit::OK)
}

fn flags(t: &ToolInfo) -> String {
    [(t.read_only, 'r'), (t.concurrency_safe, 'c'), (t.external, 'x'), (t.state_injected, 's')]
        .iter()
        .map(|(on, c)| if *on { *c } else { '-' })
        .collect()
}

fn origin(t: &ToolInfo) -> String {
    match &t.origin {
        Origin::Builtin => "built-in".into(),
        Origin::File(_) => "plugin".into(),
        Origin::Native => "native".into(),
        Origin::Mcp(_) => "mcp".into(),
    }
}

fn caps(t: &ToolInfo) -> String {
    let c = &t.capabilities;
    let mut out = String::new();
    if !c.fs_read.is_empty() {
        out.push('R');
    }
    if !c.fs_write.is_empty() {
        out.push('W');
    }
    if c.process_exec {
        out.push('X');
    }
    if c.state {
        out.push('S');
    }
    if out.is_empty() { "-".into() } else { out }
}

/// The declared capabilities in words.
pub fn declared(t: &ToolInfo) -> String {
    let c = &t.capabilities;
    let mut parts = Vec::new();
    if !c.fs_read.is_empty() {
        parts.push(format!("fs-read {}", line(&c.fs_read.join(", "))));
    }
    if !c.fs_write.is_empty() {
        parts.push(format!("fs-write {}", line(&c.fs_write.join(", "))));
    }
    if c.process_exec {
        parts.push("exec".into());
    }
    if c.network {
        parts.push("network".into());
    }
    if c.state {
        parts.push("state".into());
    }
    if parts.is_empty() { "none".into() } else { parts.join("; ") }
}
