//! Tools of upstream MCP servers on the façade: offering a server's listed
//! tools as toolhost tools (and withdrawing them), through the same
//! registry as every other tool, so a name taken by a built-in, a plugin or
//! another server is reported and never shadowed.

mod client;

use std::sync::Arc;

use serde_json::Value;

use super::Toolhost;
use crate::catalog::registry::Entry;
use crate::catalog::tool::Origin;
use crate::catalog::upstream::{MAX_UPSTREAM_TOOLS, upstream_tool};
use crate::execution::upstream::{UpstreamServer, load_upstream};
use crate::settings::McpServerSettings;

pub(super) use client::connect;
pub use client::{UPSTREAM_RELIST_INTERVAL, UpstreamRetry, UpstreamStart};

impl Toolhost {
    /// The configured upstream MCP servers (`[mcp_servers.NAME]`).
    pub fn mcp_servers(&self) -> &std::collections::BTreeMap<String, McpServerSettings> {
        &self.settings().mcp_servers
    }

    /// What went wrong when [`crate::ToolhostBuilder::build`] started the
    /// upstream servers: a server that did not start (with the cause and
    /// what to check; with [`UpstreamStart::Retrying`] it is being tried
    /// again), a tool that was not offered. Empty when every server's
    /// tools are offered.
    pub fn upstream_problems(&self) -> &[String] {
        self.catalog().upstream_problems()
    }

    /// Makes the tools server `server` listed (`listing`: each entry the
    /// JSON of an MCP `Tool`, hostile) toolhost tools named
    /// `mcp__{server}__{tool}`, called through `connection`, in place of
    /// what the server offered before: tools it no longer lists are
    /// removed, changed ones replaced (running calls finish on the old
    /// one), unchanged ones left alone. Returns one line per entry that was
    /// not offered (malformed, too large, a schema that does not compile, a
    /// name that is taken), each naming the tool and the cause; the others
    /// are offered regardless. Every change moves
    /// [`Toolhost::tool_list_changes`].
    pub fn offer_upstream_tools(
        &self,
        server: &str,
        listing: &[Value],
        connection: Arc<dyn UpstreamServer>,
    ) -> Vec<String> {
        let Some(settings) = self.settings().mcp_servers.get(server) else {
            return vec![format!("MCP server '{server}' is not configured in [mcp_servers]")];
        };
        let trust = settings.trusts_read_only_hints();
        let mut problems = Vec::new();
        let mut offered = Vec::new();
        if listing.len() > MAX_UPSTREAM_TOOLS {
            problems.push(format!(
                "MCP server {server} lists {} tools, more than the limit of {MAX_UPSTREAM_TOOLS}; the rest are not offered",
                listing.len()
            ));
        }
        for entry in listing.iter().take(MAX_UPSTREAM_TOOLS) {
            let tool = match upstream_tool(server, entry, trust) {
                Ok(tool) => tool,
                Err(e) => {
                    let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
                    let name = crate::escape::escaped(&name[..name.len().min(80)], false).into_owned();
                    problems.push(format!("MCP server {server}: tool '{name}' is not offered: {e}"));
                    continue;
                }
            };
            let loaded = match load_upstream(tool, connection.clone()) {
                Ok(loaded) => loaded,
                Err(e) => {
                    problems.push(format!("MCP server {server}: {e}"));
                    continue;
                }
            };
            let name = loaded.info.name.clone();
            if offered.contains(&name) {
                problems.push(format!(
                    "MCP server {server}: two of its tools are both named '{name}' once sanitised; only the first is offered"
                ));
                continue;
            }
            let label = format!("MCP server {server}");
            let ours = self.origin(&name) == Some(Origin::Mcp(server.to_string()));
            let result =
                if ours {
                    let unchanged =
                        self.catalog().tools.info(&name).ok().is_some_and(|old| {
                            serde_json::to_value(&old).ok() == serde_json::to_value(&loaded.info).ok()
                        });
                    if unchanged {
                        Ok(())
                    } else {
                        self.catalog().tools.replace(&name, Arc::new(loaded)).map(drop).map_err(|e| e.to_string())
                    }
                } else {
                    self.catalog().register(&name, Entry::Loaded(Arc::new(loaded)), &label).map_err(|e| e.to_string())
                };
            match result {
                Ok(()) => offered.push(name),
                Err(e) => problems.push(format!("MCP server {server}: a tool is not offered: {e}")),
            }
        }
        for name in self.upstream_tool_names(server) {
            if !offered.contains(&name) {
                self.catalog().tools.remove(&name);
            }
        }
        problems
    }

    /// Removes every tool of server `server` (it cannot be reached);
    /// returns how many there were.
    pub fn withdraw_upstream_tools(&self, server: &str) -> usize {
        let names = self.upstream_tool_names(server);
        for name in &names {
            self.catalog().tools.remove(name);
        }
        names.len()
    }

    /// The names of the tools server `server` offers now.
    pub fn upstream_tool_names(&self, server: &str) -> Vec<String> {
        let origin = Origin::Mcp(server.to_string());
        self.catalog().tools.read().iter().filter(|(_, e)| *e.origin() == origin).map(|(n, _)| n.clone()).collect()
    }
}
