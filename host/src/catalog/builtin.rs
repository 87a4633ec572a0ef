//! The built-in tools, compiled from `guest-tools/` by the build script and
//! embedded in the binary, so a plain `cargo build` yields a working host.
//!
//! Each built-in is registered under its tool name without being loaded; it
//! is loaded (compiled through the cache, asked for its metadata) the first
//! time something needs it. The name comes from one place, [`TOOL_NAMES`]:
//! the build script pairs every component with it at compile time (a guest
//! crate missing from the table is a compile error), and loading refuses a
//! component whose metadata reports another name
//! ([`LoadError::BuiltinNameMismatch`]).
//!
//! A built-in's metadata is known without compiling it: each guest crate
//! carries it in `guest-tools/tools/<crate>/metadata.json`, which the build
//! script embeds beside the component ([`Builtin::metadata`]). Listing and
//! describing a built-in read that; compiling waits for the first call or
//! check. The file cannot drift from the component: loading it
//! (`load_builtin_tiered`, `execution/component.rs`) compares the
//! component's own `metadata` answer with it and refuses the tool when they
//! differ ([`LoadError::BuiltinMetadataDrift`]), and a test compares every
//! built-in. Believing it widens nothing: built-ins are the host's own, and
//! their grants come from the host's policy, not from this file.

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
    /// Its metadata as JSON (the WIT `tool-metadata` record serialised), from
    /// `guest-tools/tools/<crate>/metadata.json`.
    pub metadata: &'static str,
}

/// The WIT package version of the embedded built-ins.
pub const BUILTIN_WIT_VERSION: &str = "0.1.0";

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
            metadata,
            Origin::Builtin,
            BUILTIN_WIT_VERSION.to_string(),
            self.sha256.to_string(),
            &label,
        )?;
        Ok(info)
    }

    /// The embedded `metadata.json`, parsed (not validated).
    pub(crate) fn embedded_metadata(&self) -> Result<types::ToolMetadata, LoadError> {
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

    /// Whether `info` (what the component reported, validated) is what the
    /// embedded `metadata.json` says, compared as parsed JSON: validating
    /// the file again (a schema compile) would add a millisecond to every
    /// process's first load.
    pub(crate) fn metadata_matches(&self, info: &ToolInfo) -> Result<bool, LoadError> {
        let as_json = |m: &types::ToolMetadata| serde_json::to_value(m).ok();
        let embedded = self.embedded_metadata()?;
        Ok(as_json(&types::ToolMetadata::from(info)).is_some_and(|loaded| Some(loaded) == as_json(&embedded)))
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
