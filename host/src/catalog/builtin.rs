//! The built-in tools, compiled from `guest-tools/` by the build script and
//! embedded in the binary, so a plain `cargo build` yields a working host.
//!
//! Each built-in is registered under its tool name without being loaded; it
//! is loaded (compiled through the cache, asked for its metadata) the first
//! time something needs it. The name comes from one place, [`TOOL_NAMES`]:
//! the build script pairs every component with it at compile time (a guest
//! crate missing from the table is a compile error), and the loader refuses a
//! component whose metadata reports another name
//! ([`LoadError::BuiltinNameMismatch`](super::tool::LoadError::BuiltinNameMismatch)).
//! Loading one is the execution layer's job
//! ([`crate::execution::component::load_builtin`]).

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
    panic!("a crate in guest-tools/tools has no tool name: add it to TOOL_NAMES in host/src/catalog/builtin.rs")
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

/// The built-in registered as `name`, if any (the registry holds the
/// built-ins by name; this lookup is for the tests).
#[cfg(test)]
pub(crate) fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}
