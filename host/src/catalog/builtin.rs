//! The built-in tools, compiled from `guest-tools/` by the build script and
//! embedded in the binary, so a plain `cargo build` yields a working host.
//!
//! Each built-in is registered under its tool name without being loaded; it
//! is loaded (compiled through the cache, asked for its metadata) the first
//! time something needs it. The name comes from one place, [`TOOL_NAMES`]:
//! the build script pairs every component with it at compile time (a guest
//! crate missing from the table is a compile error), and [`load`] refuses a
//! component whose metadata reports another name
//! ([`LoadError::BuiltinNameMismatch`]).
//!
//! A built-in's metadata is known without compiling it: each guest crate
//! carries it in `guest-tools/tools/<crate>/metadata.json`, which the build
//! script embeds beside the component ([`Builtin::metadata`]). Listing and
//! describing a built-in read that; compiling waits for the first call or
//! check. The file cannot drift from the component: loading it
//! ([`crate::execution::component::load_builtin`]) compares the
//! component's own `metadata` answer with it and refuses the tool when they
//! differ ([`LoadError::BuiltinMetadataDrift`]), and a test compares every
//! built-in. Believing it widens nothing: built-ins are the host's own, and
//! their grants come from the host's policy, not from this file.

use serde::{Deserialize, Serialize};

use super::tool::{LoadError, Origin, ToolInfo, validate_metadata};
use crate::runtime::Runtime;
use crate::types;

/// One embedded built-in tool component.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The tool name it is registered under, from [`TOOL_NAMES`]; its
    /// metadata must report the same name.
    pub name: &'static str,
    /// The guest crate it is built from, without the `tool-` prefix
    /// (`bash`, `ask-user`).
    pub crate_name: &'static str,
    /// The component.
    pub bytes: &'static [u8],
    /// The SHA-256 of [`Builtin::bytes`] (hex), computed at build time.
    pub sha256: &'static str,
    /// Its metadata as JSON ([`BuiltinMetadata`]), from
    /// `guest-tools/tools/<crate>/metadata.json`.
    pub metadata: &'static str,
}

/// The WIT package version of the embedded built-ins.
pub const BUILTIN_WIT_VERSION: &str = "0.1.0";

/// A built-in's `metadata.json`: the `tool-metadata` record of the WIT, with
/// the schemas as JSON values rather than text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuiltinMetadata {
    /// Name shown to the model.
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: serde_json::Value,
    /// May run in parallel with other concurrency-safe calls.
    pub concurrency_safe: bool,
    /// Every call only reads.
    pub read_only: bool,
    /// Carried out outside the host.
    pub external: bool,
    /// Uses the agent state.
    pub state_injected: bool,
    /// The MCP server it proxies.
    pub mcp_origin: Option<String>,
    /// For external tools: the schema of the result metadata.
    pub result_metadata_schema: Option<serde_json::Value>,
    /// Roots it reads under.
    pub fs_read: Vec<String>,
    /// Roots it writes under.
    pub fs_write: Vec<String>,
    /// Runs processes.
    pub process_exec: bool,
    /// Needs the network.
    pub network: bool,
}

impl BuiltinMetadata {
    /// The metadata a loaded tool reported (to compare with, or to write, a
    /// `metadata.json`).
    pub fn of(info: &ToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            description: info.description.clone(),
            input_schema: info.input_schema.clone(),
            concurrency_safe: info.concurrency_safe,
            read_only: info.read_only,
            external: info.external,
            state_injected: info.state_injected,
            mcp_origin: info.mcp_origin.clone(),
            result_metadata_schema: info.result_metadata_schema.clone(),
            fs_read: info.capabilities.fs_read.clone(),
            fs_write: info.capabilities.fs_write.clone(),
            process_exec: info.capabilities.process_exec,
            network: info.capabilities.network,
        }
    }

    fn into_record(self) -> types::ToolMetadata {
        types::ToolMetadata {
            name: self.name,
            description: self.description,
            input_schema: self.input_schema.to_string(),
            concurrency_safe: self.concurrency_safe,
            read_only: self.read_only,
            external: self.external,
            state_injected: self.state_injected,
            mcp_origin: self.mcp_origin,
            result_metadata_schema: self.result_metadata_schema.map(|s| s.to_string()),
            capabilities: types::Capabilities {
                fs_read: self.fs_read,
                fs_write: self.fs_write,
                process_exec: self.process_exec,
                network: self.network,
            },
        }
    }
}

impl Builtin {
    /// Its metadata from the embedded `metadata.json`, validated like a
    /// component's (size, name, schema), without compiling the component.
    pub fn info(&self) -> Result<ToolInfo, LoadError> {
        let label = format!("built-in tool {}", self.name);
        let metadata = self.embedded_metadata()?;
        if metadata.name != self.name {
            return Err(self.name_mismatch(metadata.name));
        }
        let (info, _) = validate_metadata(
            metadata.into_record(),
            Origin::Builtin,
            BUILTIN_WIT_VERSION.to_string(),
            self.sha256.to_string(),
            &label,
        )?;
        Ok(info)
    }

    /// The embedded `metadata.json`, parsed (not validated).
    pub(crate) fn embedded_metadata(&self) -> Result<BuiltinMetadata, LoadError> {
        serde_json::from_str(self.metadata).map_err(|e| {
            LoadError::Metadata(
                format!("built-in tool {}", self.name),
                format!(
                    "guest-tools/tools/{}/metadata.json is missing or not valid ({e}); regenerate it with \
                     `TOOLHOST_BLESS_METADATA=1 cargo test -p toolhost --lib builtin_metadata_files`",
                    self.crate_name
                ),
            )
        })
    }

    pub(crate) fn name_mismatch(&self, reported: String) -> LoadError {
        LoadError::BuiltinNameMismatch {
            registered: self.name.to_string(),
            crate_name: self.crate_name.to_string(),
            reported,
        }
    }
}

/// The single source of truth for the built-ins' tool names: guest crate
/// (`guest-tools/tools/<crate>`, without the `tool-` prefix) → tool name.
/// A new built-in needs a line here, or the host does not compile.
pub const TOOL_NAMES: &[(&str, &str)] = &[
    ("ask-user", "AskUser"),
    ("bash", "Bash"),
    ("edit", "Edit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("powershell", "PowerShell"),
    ("read", "Read"),
    ("task-create", "TaskCreate"),
    ("task-get", "TaskGet"),
    ("task-list", "TaskList"),
    ("task-update", "TaskUpdate"),
    ("write", "Write"),
];

/// The tool name of the guest crate `crate_name` in [`TOOL_NAMES`].
/// Evaluated at compile time for [`BUILTINS`], where a crate with no entry
/// stops the build with this panic's message.
const fn tool_name(crate_name: &str) -> &'static str {
    let mut i = 0;
    while i < TOOL_NAMES.len() {
        if str_eq(TOOL_NAMES[i].0, crate_name) {
            return TOOL_NAMES[i].1;
        }
        i += 1;
    }
    panic!("a crate in guest-tools/tools has no tool name: add it to TOOL_NAMES in host/src/builtin.rs")
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

// `pub static BUILTINS: &[Builtin]`, sorted by crate name, written by build.rs.
include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The built-in registered as `name`.
pub fn named(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Compiles a built-in's optimised code into the cache unless it is there
/// (after a first use ran baseline code; blocking, seconds for the larger
/// built-ins).
pub fn optimise(runtime: &Runtime, builtin: &Builtin) -> anyhow::Result<()> {
    runtime.optimise(builtin.bytes, &format!("built-in tool {}", builtin.name))
}
