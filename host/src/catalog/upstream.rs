//! Tools of upstream MCP servers (`[mcp_servers.NAME]`), as the catalog
//! sees them: what a server's `tools/list` entry becomes (a name
//! `mcp__{server}__{tool}`, its description and schema with AgentScope's
//! defaults, its read-only flag), checked like any tool's metadata. How
//! such a tool is called is [`crate::execution::upstream`].
//!
//! Everything a server says is hostile input. The entry is read field by
//! field from its JSON; the name is sanitised (every character outside
//! `[A-Za-z0-9_-]` becomes `x`, as AgentScope does) and must then pass the
//! one name rule ([`super::name`]), so it can never be `Bash` or anything
//! without the `mcp__{server}__` prefix; the description and schema are
//! bounded by the same limits as a plugin's ([`super::tool`]); and
//! `readOnlyHint` is believed only where the user's settings say so
//! ([`crate::settings::McpServerSettings::trust_read_only_hints`]).
//!
//! The listing itself is bounded while it is read ([`Listing`]): a server
//! whose every page has a `nextCursor` would otherwise be listed for ever,
//! holding every page in memory, before the tool bound applied.

use serde_json::Value;

use super::tool::{MAX_PATH_BYTES, check_text_size};
use crate::settings::McpServerSettings;
use crate::types::ToolMetadata;

/// The own check of an upstream tool that is not read-only (AgentScope
/// §9.2): a non-immune ask.
pub const MCP_TOOL_ASK: &str = "MCP tools must be explicitly allowed by the user.";

/// The own check of a read-only upstream tool (AgentScope §9.2).
pub const MCP_READ_ONLY_ALLOW: &str = "This is a read-only MCP tool. Allowing execution.";

/// The most tools one server may offer; the rest are reported, not offered.
pub const MAX_UPSTREAM_TOOLS: usize = 1024;

/// One server's `tools/list` as it is read, page by page, within its
/// bounds: at most `max_list_pages` pages and `max_list_bytes` bytes of
/// pages (`[mcp_servers.NAME]`), and [`MAX_UPSTREAM_TOOLS`] entries. At a
/// bound the reading stops: the entries read so far (up to the tool bound)
/// are kept, and [`Listing::finish`] says which bound stopped it. Keeping
/// them is what the tool bound has always done (the first 1024 tools are
/// offered): a server that pages on past a bound still offers the tools it
/// did list; refusing it would gain nothing, as listing it again reads the
/// same pages.
#[derive(Debug)]
pub struct Listing {
    server: String,
    max_pages: u64,
    max_bytes: u64,
    pages: u64,
    bytes: u64,
    entries: Vec<Value>,
    stopped: Option<String>,
}

impl Listing {
    /// An empty listing of server `server` with the bounds of `settings`.
    pub fn new(server: &str, settings: &McpServerSettings) -> Self {
        Self {
            server: server.to_string(),
            max_pages: settings.list_pages(),
            max_bytes: settings.list_bytes(),
            pages: 0,
            bytes: 0,
            entries: Vec::new(),
            stopped: None,
        }
    }

    /// Takes one page: its entries (`tools`, each the JSON of an MCP
    /// `Tool`), its size as JSON (`page_bytes`, everything it carries), and
    /// whether it had a `nextCursor` (`more`). Returns whether to ask for
    /// the next page: false at the end of the list or at a bound (a page
    /// past the byte bound is not kept).
    pub fn add_page(&mut self, tools: Vec<Value>, page_bytes: u64, more: bool) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        self.pages += 1;
        let table = format!("[mcp_servers.{}]", self.server);
        if self.bytes.saturating_add(page_bytes) > self.max_bytes {
            let (max, listed) = (self.max_bytes, self.entries.len());
            return self.stop(format!(
                "its tool list is larger than max_list_bytes ({max} bytes); the {listed} tools listed before that \
                 are offered, the rest are not (raise max_list_bytes in {table} if it really has more)"
            ));
        }
        self.bytes += page_bytes;
        for tool in tools {
            if self.entries.len() >= MAX_UPSTREAM_TOOLS {
                return self.stop(format!(
                    "it lists more than {MAX_UPSTREAM_TOOLS} tools, the most toolhost takes from one server; the \
                     first {MAX_UPSTREAM_TOOLS} are offered, the rest are not"
                ));
            }
            self.entries.push(tool);
        }
        if more && self.pages >= self.max_pages {
            let (max, listed) = (self.max_pages, self.entries.len());
            return self.stop(format!(
                "its tool list goes on past max_list_pages ({max} pages, each with a nextCursor); the {listed} tools \
                 of those pages are offered, the rest are not (raise max_list_pages in {table} if it really has more)"
            ));
        }
        more
    }

    fn stop(&mut self, why: String) -> bool {
        self.stopped = Some(format!("MCP server {}: {why}", self.server));
        false
    }

    /// The entries read, and why the reading stopped at a bound (the line
    /// to report), if it did.
    pub fn finish(self) -> (Vec<Value>, Option<String>) {
        (self.entries, self.stopped)
    }
}

/// The toolhost name of tool `tool` of server `server`:
/// `mcp__{server}__{sanitised}`, where every character of `tool` outside
/// `[A-Za-z0-9_-]` is replaced by `x` (not `_`, which would make `__`).
pub fn tool_name(server: &str, tool: &str) -> String {
    let sanitised: String =
        tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { 'x' }).collect();
    format!("mcp__{server}__{sanitised}")
}

/// One tool a server listed, made into toolhost metadata (still to be
/// validated by [`super::tool::validate_metadata`], which bounds the sizes
/// and compiles the schema).
#[derive(Debug, Clone)]
pub struct UpstreamTool {
    /// Its name on the server, used when calling it.
    pub upstream_name: String,
    /// Its toolhost metadata (`mcp_origin` is the server's name).
    pub metadata: ToolMetadata,
}

/// Reads one entry of a server's `tools/list` answer (`tool`, the JSON of
/// an MCP `Tool`). `trust_read_only` says whether `readOnlyHint` may make
/// it read-only. The error says what is wrong with the entry.
pub fn upstream_tool(server: &str, tool: &Value, trust_read_only: bool) -> Result<UpstreamTool, String> {
    let upstream_name = tool.get("name").and_then(Value::as_str).ok_or("it has no string `name`")?.to_string();
    // Before anything builds on the name (it is kept to call the tool).
    check_text_size("name", &upstream_name, MAX_PATH_BYTES)?;
    let name = tool_name(server, &upstream_name);
    super::name::check_name("tool", &name)?;
    let description = match tool.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(_) => return Err(format!("its `description` is not a string (tool '{name}')")),
    };
    let mut schema = match tool.get("inputSchema") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(schema)) => schema.clone(),
        Some(_) => return Err(format!("its `inputSchema` is not an object (tool '{name}')")),
    };
    // AgentScope's defaults: an object with no properties and nothing required.
    schema.entry("type").or_insert_with(|| Value::String("object".into()));
    schema.entry("properties").or_insert_with(|| Value::Object(Default::default()));
    schema.entry("required").or_insert_with(|| Value::Array(Vec::new()));
    let hinted = tool.pointer("/annotations/readOnlyHint").and_then(Value::as_bool).unwrap_or(false);
    Ok(UpstreamTool {
        upstream_name,
        metadata: ToolMetadata {
            name,
            description,
            input_schema: Value::Object(schema).to_string(),
            read_only: trust_read_only && hinted,
            mcp_origin: Some(server.to_string()),
            ..ToolMetadata::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_prefixed_and_sanitised() {
        assert_eq!(tool_name("docs", "search"), "mcp__docs__search");
        assert_eq!(tool_name("docs", "a.b/c d"), "mcp__docs__axbxcxd");
        assert_eq!(tool_name("s", "Bash"), "mcp__s__Bash");
    }

    #[test]
    fn an_entry_gets_the_defaults_and_the_hint_only_when_trusted() {
        let entry = json!({"name": "look", "annotations": {"readOnlyHint": true}});
        let trusted = upstream_tool("s", &entry, true).unwrap();
        assert!(trusted.metadata.read_only);
        assert_eq!(trusted.upstream_name, "look");
        let schema: Value = serde_json::from_str(&trusted.metadata.input_schema).unwrap();
        assert_eq!(schema, json!({"type": "object", "properties": {}, "required": []}));
        assert!(!upstream_tool("s", &entry, false).unwrap().metadata.read_only);
    }

    fn pages(listing: &mut Listing, pages: usize, tools: usize) -> usize {
        let page = || (0..tools).map(|i| json!({"name": format!("t{i}")})).collect();
        (0..pages).take_while(|_| listing.add_page(page(), 100, true)).count() + 1
    }

    #[test]
    fn a_listing_stops_at_each_bound_and_keeps_what_it_read() {
        let settings = McpServerSettings { max_list_pages: Some(10), ..Default::default() };
        // Pages without end: stopped at the page bound.
        let mut listing = Listing::new("s", &settings);
        assert_eq!(pages(&mut listing, 1000, 0), 10);
        let (entries, why) = listing.finish();
        assert!(entries.is_empty() && why.unwrap().contains("max_list_pages (10 pages"));
        // Pages of 500 tools: stopped at the tool bound, the first 1024 kept.
        let mut listing = Listing::new("s", &settings);
        assert_eq!(pages(&mut listing, 1000, 500), 3);
        let (entries, why) = listing.finish();
        assert_eq!(entries.len(), MAX_UPSTREAM_TOOLS);
        assert!(why.unwrap().contains("more than 1024 tools"));
        // Bytes: the page past the bound is not kept.
        let settings = McpServerSettings { max_list_bytes: Some(250), ..Default::default() };
        let mut listing = Listing::new("s", &settings);
        assert_eq!(pages(&mut listing, 1000, 2), 3);
        let (entries, why) = listing.finish();
        assert_eq!(entries.len(), 4);
        assert!(why.unwrap().contains("max_list_bytes (250 bytes)"));
        // A list that ends is read whole, with nothing to report.
        let mut listing = Listing::new("s", &McpServerSettings::default());
        assert!(listing.add_page(vec![json!({"name": "a"})], 10, true));
        assert!(!listing.add_page(vec![json!({"name": "b"})], 10, false));
        assert_eq!(listing.finish(), (vec![json!({"name": "a"}), json!({"name": "b"})], None));
    }

    #[test]
    fn hostile_entries_are_refused_with_the_cause() {
        let long = "a".repeat(100);
        for (entry, cause) in [
            (json!({}), "no string `name`"),
            (json!({"name": long}), "must be 1-64"),
            (json!({"name": "x", "description": 7}), "not a string"),
            (json!({"name": "x", "inputSchema": []}), "not an object"),
            (json!({"name": "a".repeat(5000)}), "limit"),
        ] {
            let e = upstream_tool("s", &entry, true).unwrap_err();
            assert!(e.contains(cause), "{entry}: {e}");
        }
    }
}
