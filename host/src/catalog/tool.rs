//! What a tool is: its metadata ([`ToolInfo`]), where it came from
//! ([`Origin`]), the checks its metadata must pass ([`validate_metadata`])
//! and why loading or finding one fails ([`LoadError`], [`LookupError`]).

use std::path::PathBuf;

use serde::Serialize;
pub use toolhost_core::input_schema::compile_input_schema;

use crate::capability::Declared;
use crate::types::ToolMetadata;

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum Origin {
    /// Embedded in the host binary.
    Builtin,
    /// A plugin file.
    File(PathBuf),
    /// Registered from Rust by the embedding program (a
    /// [`FunctionTool`](super::function::FunctionTool) or a native middleware).
    Native,
    /// A tool of the upstream MCP server of this name (`[mcp_servers.NAME]`,
    /// see [`Toolhost::offer_upstream_tools`](crate::Toolhost::offer_upstream_tools)).
    Mcp(String),
}

/// Everything known about a loaded tool, as `toolhost describe` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
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
    /// What it declared it needs.
    pub capabilities: Declared,
    /// Built-in or a file.
    pub origin: Origin,
    /// The WIT package version it was built against.
    pub wit_version: String,
    /// SHA-256 of the component bytes.
    pub sha256: String,
}

impl From<&ToolInfo> for ToolMetadata {
    /// The record a component reports, from what the host validated: what
    /// a middleware is told about the tool it wraps.
    fn from(info: &ToolInfo) -> Self {
        ToolMetadata {
            name: info.name.clone(),
            description: info.description.clone(),
            input_schema: info.input_schema.to_string(),
            concurrency_safe: info.concurrency_safe,
            read_only: info.read_only,
            external: info.external,
            state_injected: info.state_injected,
            mcp_origin: info.mcp_origin.clone(),
            result_metadata_schema: info.result_metadata_schema.as_ref().map(|s| s.to_string()),
            capabilities: crate::types::Capabilities {
                fs_read: info.capabilities.fs_read.clone(),
                fs_write: info.capabilities.fs_write.clone(),
                process_exec: info.capabilities.process_exec,
                network: info.capabilities.network,
            },
        }
    }
}

/// Why a component was not loaded. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The component file could not be read: missing, not a regular file,
    /// or larger than `[limits] max_component_bytes` (checked before a
    /// byte is read).
    #[error("reading {what} {}: {error}", path.display())]
    Read {
        /// `plugin` or `middleware`.
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// Why it could not be read.
        error: std::io::Error,
    },
    /// A plugin directory could not be read.
    #[error("reading plugin directory {}: {error}", dir.display())]
    Dir {
        /// The directory.
        dir: std::path::PathBuf,
        /// Why it could not be read.
        error: std::io::Error,
    },
    /// The host is locked and the component's bytes are not pinned in the
    /// lock file.
    #[error(
        "{label} is refused: its SHA-256 {sha256} is not in the lock file {} and this host is locked (locked = true or --locked); if you trust it, pin it with `toolhost lock`",
        lock_file.display()
    )]
    NotPinned {
        /// The component.
        label: String,
        /// The SHA-256 of its bytes.
        sha256: String,
        /// The lock file looked in.
        lock_file: std::path::PathBuf,
    },
    /// The component file lies where tools write (or is reached through
    /// such a place, or has a hard link there), so a tool could replace
    /// it, and its bytes are not pinned in the lock file.
    #[error(
        "{label} is refused: {reason}, so a tool (or a command it runs) could put other code there, which would run with this component's grants; such a file loads only when its bytes are pinned in the lock file {} and these (SHA-256 {sha256}) are not. If they are the bytes you built and mean to run, pin them with `toolhost lock` (with the same settings; a watching host re-reads the lock and loads them), or keep the component outside the working directories",
        lock_file.display()
    )]
    UnpinnedWhereToolsWrite {
        /// The component.
        label: String,
        /// Where it lies, and why that lets a tool replace it.
        reason: String,
        /// The SHA-256 of its bytes.
        sha256: String,
        /// The lock file looked in.
        lock_file: std::path::PathBuf,
    },
    /// `[trust] require_signature` holds and the component's signature is
    /// missing, by no trusted key, or cannot be checked (the message says
    /// which and what to do).
    #[error("{0}")]
    Signature(String),
    /// Not a WebAssembly binary at all.
    #[error(
        "{0} is not a WebAssembly file (no `\\0asm` header); pass a .wasm component built with `cargo build --target wasm32-wasip2`"
    )]
    NotWasm(String),
    /// A core module rather than a component.
    #[error(
        "{0} is a core WebAssembly module, not a component; build it with `--target wasm32-wasip2` (which links a component) or wrap it with `wasm-tools component new`"
    )]
    CoreModule(String),
    /// wasmtime could not compile it.
    #[error("{0} could not be compiled: {1}")]
    Compile(String, String),
    /// A middleware where a tool was expected.
    #[error("{0} is a middleware component, not a tool; attach it with --middleware or [middleware] in toolhost.toml")]
    Middleware(String),
    /// Exports our interface at a version this host does not know.
    #[error(
        "{0} was built against toolhost:tool@{1}, which this toolhost does not support (it accepts: {2}); rebuild it against one of these (`toolhost wit --out DIR` writes the WIT this host speaks, and the toolhost-sdk of that version builds against it), or run a toolhost release that accepts {1}"
    )]
    UnsupportedVersion(String, String, String),
    /// A tool where a middleware was expected.
    #[error("{0} is a tool component, not a middleware; load it with --plugin or `plugins` in toolhost.toml")]
    NotMiddleware(String),
    /// Does not export the middleware interface.
    #[error(
        "{0} does not export `toolhost:tool/middleware@0.1.0` (it exports: {1}); build it against the `middleware-component` world, which the toolhost-sdk's `export_middleware!` does"
    )]
    MiddlewareWrongWorld(String, String),
    /// A middleware importing something the host does not provide.
    #[error(
        "{0} imports something toolhost does not provide: {1}; middleware may import only the interfaces of the `middleware-component` world and WASI 0.2"
    )]
    MiddlewareUnknownImport(String, String),
    /// Its `info` is unusable.
    #[error("{0}: invalid middleware info: {1}")]
    MiddlewareInfo(String, String),
    /// It trapped or timed out answering `info` (the cause names the
    /// middleware, as its path until its name is known).
    #[error("{0}: calling the middleware's `info` failed: {1}")]
    MiddlewareProbe(String, String),
    /// The name is taken by another loaded middleware.
    #[error(
        "cannot load {source_name}: a middleware named '{name}' is already loaded; remove one of them or rename it"
    )]
    MiddlewareNameTaken {
        /// The file being loaded.
        source_name: String,
        /// The middleware name.
        name: String,
    },
    /// A tool and a middleware would share a name (and so the
    /// `[grants.NAME]` table that grants both).
    #[error(
        "cannot load {source_name}: '{name}' is already the name of a loaded {existing}; tools and middleware are granted capabilities by name in the same [grants.NAME] table, so a {loading} may not take the name of a {existing} (it would receive its grants); rename one of them"
    )]
    NameClash {
        /// The component (or native item) being loaded.
        source_name: String,
        /// The name both would have.
        name: String,
        /// What is being loaded: `tool` or `middleware`.
        loading: &'static str,
        /// What already has the name: `tool` or `middleware`.
        existing: &'static str,
    },
    /// Does not export the tool interface.
    #[error(
        "{0} does not export `toolhost:tool/tool@0.1.0` (it exports: {1}); build it against the `tool-component` world, which the toolhost-sdk's `export_tool!` does"
    )]
    WrongWorld(String, String),
    /// Imports something the host does not provide.
    #[error(
        "{0} imports something toolhost does not provide: {1}; tools may import only the interfaces of the `tool-component` world and WASI 0.2"
    )]
    UnknownImport(String, String),
    /// Its metadata is unusable.
    #[error("{0}: invalid metadata: {1}")]
    Metadata(String, String),
    /// It trapped or timed out answering `metadata`.
    #[error("{0}: calling `metadata` failed: {1}")]
    Instantiate(String, String),
    /// The name is taken by another loaded tool.
    #[error(
        "cannot load {source_name}: a tool named '{name}' is already loaded from {existing}; remove one of them or rename the tool"
    )]
    NameTaken {
        /// The file being loaded.
        source_name: String,
        /// The tool name.
        name: String,
        /// Where the loaded one came from.
        existing: String,
    },
    /// A built-in's metadata reports a name other than the one it is
    /// registered under ([`super::builtin::TOOL_NAMES`]).
    #[error(
        "built-in tool {registered} (guest crate tool-{crate_name}) reports the name '{reported}' in its metadata, but it is registered as '{registered}' by TOOL_NAMES in host/src/catalog/builtin.rs; make the two agree and rebuild toolhost"
    )]
    BuiltinNameMismatch {
        /// The name it is registered under.
        registered: String,
        /// Its guest crate, without the `tool-` prefix.
        crate_name: String,
        /// The name its metadata reports.
        reported: String,
    },
    /// A built-in's component reports other metadata than the
    /// `metadata.json` embedded beside it.
    #[error(
        "built-in tool {name}: its component's metadata differs from guest-tools/tools/{crate_name}/metadata.json; regenerate the file with `TOOLHOST_BLESS_METADATA=1 cargo test -p toolhost --lib builtin_metadata_files` and rebuild toolhost"
    )]
    BuiltinMetadataDrift {
        /// The tool name.
        name: String,
        /// Its guest crate, without the `tool-` prefix.
        crate_name: String,
    },
}

/// Why a tool could not be had by name: it is not registered, or it is but
/// loading it failed (a built-in loads the first time it is needed).
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// No tool of that name is registered.
    #[error("The tool named '{0}' doesn't exist. Run `toolhost list` to see the loaded tools.")]
    Unknown(String),
    /// No tool of that name is registered, and plugin files were still
    /// loading in the background after the call's timeout (one of them may
    /// hold it).
    #[error(
        "The tool named '{name}' doesn't exist yet: after {waited_ms} ms (the call's timeout) these plugin files were still loading: {}; retry when `toolhost list` shows it (a first compile of a large plugin takes tens of seconds; later starts use the compile cache)",
        files.join(", ")
    )]
    StillLoading {
        /// The name asked for.
        name: String,
        /// How long the lookup waited.
        waited_ms: u64,
        /// The plugin files still loading.
        files: Vec<String>,
    },
    /// It is registered, but loading it failed; the error names the tool
    /// and the cause. Other tools are not affected, and the next use tries
    /// to load it again.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// The longest description a tool or middleware may declare, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 64 << 10;
/// The longest input (or result-metadata) schema a tool may declare, in
/// bytes of JSON text.
pub const MAX_SCHEMA_BYTES: usize = 1 << 20;
/// The most a tool's whole metadata may hold, in bytes of text (name,
/// description, schemas, MCP origin and declared roots together).
pub const MAX_METADATA_BYTES: usize = 2 << 20;
/// The longest declared root path or MCP origin, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// Refuses a metadata field longer than `limit` bytes, naming the field
/// and the limit.
pub fn check_text_size(field: &str, text: &str, limit: usize) -> Result<(), String> {
    if text.len() > limit {
        return Err(format!("its {field} is {} bytes, more than the limit of {limit} bytes; shorten it", text.len()));
    }
    Ok(())
}

/// Refuses metadata whose fields (or whole) exceed the size limits, before
/// anything parses it.
fn check_metadata_size(m: &ToolMetadata) -> Result<(), String> {
    check_text_size("description", &m.description, MAX_DESCRIPTION_BYTES)?;
    check_text_size("input schema", &m.input_schema, MAX_SCHEMA_BYTES)?;
    check_text_size("result metadata schema", m.result_metadata_schema.as_deref().unwrap_or(""), MAX_SCHEMA_BYTES)?;
    check_text_size("MCP origin", m.mcp_origin.as_deref().unwrap_or(""), MAX_PATH_BYTES)?;
    let roots = m.capabilities.fs_read.iter().chain(&m.capabilities.fs_write);
    for root in roots.clone() {
        check_text_size("declared root", root, MAX_PATH_BYTES)?;
    }
    let total = m.name.len()
        + m.description.len()
        + m.input_schema.len()
        + m.result_metadata_schema.as_ref().map_or(0, String::len)
        + m.mcp_origin.as_ref().map_or(0, String::len)
        + roots.map(String::len).sum::<usize>();
    if total > MAX_METADATA_BYTES {
        return Err(format!(
            "its metadata is {total} bytes in all, more than the limit of {MAX_METADATA_BYTES} bytes; shorten it"
        ));
    }
    Ok(())
}

/// Checks a tool's metadata (size, name, schema) and builds its
/// [`ToolInfo`] and input validator. Shared by components and native
/// function tools.
pub(crate) fn validate_metadata(
    m: ToolMetadata,
    origin: Origin,
    wit_version: String,
    sha256: String,
    label: &str,
) -> Result<(ToolInfo, jsonschema::Validator), LoadError> {
    let bad = |msg: String| LoadError::Metadata(label.into(), msg);
    check_metadata_size(&m).map_err(bad)?;
    super::name::check_name("tool", &m.name).map_err(bad)?;
    let (schema, validator) = compile_input_schema(&m.name, &m.input_schema).map_err(bad)?;
    for root in m.capabilities.fs_read.iter().chain(&m.capabilities.fs_write) {
        crate::capability::check_root(root)
            .map_err(|e| bad(format!("tool '{}' declares a filesystem root it may not: {e}", m.name)))?;
    }
    let result_metadata_schema = match m.result_metadata_schema {
        Some(text) => {
            Some(serde_json::from_str(&text).map_err(|e| bad(format!("result-metadata-schema is not JSON: {e}")))?)
        }
        None => None,
    };
    let info = ToolInfo {
        name: m.name,
        description: m.description,
        input_schema: schema,
        concurrency_safe: m.concurrency_safe,
        read_only: m.read_only,
        external: m.external,
        state_injected: m.state_injected,
        mcp_origin: m.mcp_origin,
        result_metadata_schema,
        capabilities: Declared {
            fs_read: m.capabilities.fs_read,
            fs_write: m.capabilities.fs_write,
            process_exec: m.capabilities.process_exec,
            network: m.capabilities.network,
            state: m.state_injected,
        },
        origin,
        wit_version,
        sha256,
    };
    Ok((info, validator))
}
