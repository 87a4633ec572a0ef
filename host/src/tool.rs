//! Loading a tool component: checking that a file is a component of our
//! world and version, compiling it (through the cache), asking it for its
//! metadata, and validating that metadata.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use crate::capability::Declared;
use crate::instance::ToolInstance;
use crate::runtime::bindings::tool::ToolComponentPre;
use crate::runtime::bindings::wit_types as wit;
use crate::runtime::{CacheOutcome, Runtime, Tier};

/// The WIT package versions this host loads.
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &["0.1.0"];

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum Origin {
    /// Embedded in the host binary.
    Builtin,
    /// A plugin file.
    File(PathBuf),
    /// Registered from Rust by the embedding program (a
    /// [`FunctionTool`](crate::function::FunctionTool) or a native middleware).
    Native,
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

/// Why a component was not loaded. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
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
        "{0} was built against toolhost:tool@{1}, which this toolhost does not support (supported: {2}); rebuild it with a matching toolhost-sdk"
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
    /// registered under ([`crate::builtin::TOOL_NAMES`]).
    #[error(
        "built-in tool {registered} (guest crate tool-{crate_name}) reports the name '{reported}' in its metadata, but it is registered as '{registered}' by TOOL_NAMES in host/src/builtin.rs; make the two agree and rebuild toolhost"
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
    /// It is registered, but loading it failed; the error names the tool
    /// and the cause. Other tools are not affected, and the next use tries
    /// to load it again.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// A tool ready to be instantiated for calls.
pub struct LoadedTool {
    /// Its metadata.
    pub info: ToolInfo,
    pub(crate) kind: ToolKind,
    pub(crate) validator: Arc<jsonschema::Validator>,
    /// Its grants in each phase, computed on first use by the host that
    /// holds it.
    pub(crate) grants: std::sync::OnceLock<crate::capability::PhaseGrants>,
}

/// What runs a loaded tool's calls.
pub(crate) enum ToolKind {
    /// A component, instantiated afresh for every call.
    Component(ToolComponentPre<crate::runtime::CallState>),
    /// A native function registered by the embedder.
    Function(Arc<crate::function::FunctionTool>),
}

/// What [`load_component`] reports besides the tool.
pub struct LoadReport {
    /// The tool.
    pub tool: LoadedTool,
    /// What the compile cache did.
    pub cache: CacheOutcome,
    /// Which compiler's code it runs.
    pub tier: Tier,
    /// The interfaces the component imports.
    pub imports: Vec<String>,
}

/// Validates, compiles and introspects a component. `label` names it in
/// errors (a path, or `built-in bash`).
pub async fn load_component(
    runtime: &Runtime,
    bytes: &[u8],
    origin: Origin,
    label: &str,
) -> Result<LoadReport, LoadError> {
    load_component_with_hash(runtime, bytes, origin, label, None, Tier::Optimised).await
}

/// [`load_component`] with the SHA-256 of `bytes` already known (the
/// built-ins' hashes are computed at build time). With `first_use` at
/// [`Tier::Baseline`], a component whose optimised code is not cached is
/// compiled with the baseline compiler ([`Runtime::compile_first_use`]).
pub async fn load_component_with_hash(
    runtime: &Runtime,
    bytes: &[u8],
    origin: Origin,
    label: &str,
    sha256: Option<&str>,
    first_use: Tier,
) -> Result<LoadReport, LoadError> {
    check_header(bytes, label)?;
    let sha256 = sha256.map(str::to_string).unwrap_or_else(|| hex::encode(Sha256::digest(bytes)));
    let compiled = match first_use {
        Tier::Baseline => runtime.compile_first_use(bytes, label),
        Tier::Optimised => runtime.compile(bytes, label).map(|(c, cache)| (c, cache, Tier::Optimised)),
    };
    let (component, cache, tier) = compiled.map_err(|e| LoadError::Compile(label.into(), format!("{e:#}")))?;
    let wit_version = check_exports(&component, label, ComponentKind::Tool)?;
    let imports: Vec<String> =
        component.component_type().imports(component.engine()).map(|(name, _)| name.to_string()).collect();
    let pre = runtime
        .tool_linker_for(&component)
        .instantiate_pre(&component)
        .map_err(|e| LoadError::UnknownImport(label.into(), format!("{e:#}")))?;
    let pre = ToolComponentPre::new(pre).map_err(|e| LoadError::WrongWorld(label.into(), format!("{e:#}")))?;
    let metadata = ToolInstance::probe(runtime, &pre, label)
        .await
        .map_err(|e| LoadError::Instantiate(label.into(), format!("{e:#}")))?;
    let (info, validator) = validate_metadata(metadata, origin, wit_version, sha256, label)?;
    Ok(LoadReport {
        tool: LoadedTool {
            info,
            kind: ToolKind::Component(pre),
            validator: Arc::new(validator),
            grants: Default::default(),
        },
        cache,
        tier,
        imports,
    })
}

/// Checks the `\0asm` header and that the file is a component, not a core
/// module (shared by the tool and middleware loaders).
pub(crate) fn check_header(bytes: &[u8], label: &str) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(LoadError::NotWasm(label.into()));
    }
    // Core modules are version 1; components use the layer field (bytes 6-7).
    if bytes[4..8] == [1, 0, 0, 0] {
        return Err(LoadError::CoreModule(label.into()));
    }
    Ok(())
}

/// Which world a component is expected to implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ComponentKind {
    /// `tool-component`: exports `toolhost:tool/tool`.
    Tool,
    /// `middleware-component`: exports `toolhost:tool/middleware`.
    Middleware,
}

/// Checks that a component exports the interface of `expected` at a
/// supported version, and returns that version. A tool where a middleware
/// is expected (or the reverse) gets an error saying how to load it.
pub(crate) fn check_exports(component: &Component, label: &str, expected: ComponentKind) -> Result<String, LoadError> {
    let ty = component.component_type();
    let names: Vec<String> = ty.exports(component.engine()).map(|(name, _)| name.to_string()).collect();
    for name in &names {
        let (kind, version) = if let Some(v) = name.strip_prefix("toolhost:tool/tool@") {
            (ComponentKind::Tool, v)
        } else if let Some(v) = name.strip_prefix("toolhost:tool/middleware@") {
            (ComponentKind::Middleware, v)
        } else {
            continue;
        };
        match (kind, expected) {
            (ComponentKind::Middleware, ComponentKind::Tool) => return Err(LoadError::Middleware(label.into())),
            (ComponentKind::Tool, ComponentKind::Middleware) => return Err(LoadError::NotMiddleware(label.into())),
            _ => {}
        }
        if SUPPORTED_WIT_VERSIONS.contains(&version) {
            return Ok(version.to_string());
        }
        return Err(LoadError::UnsupportedVersion(label.into(), version.into(), SUPPORTED_WIT_VERSIONS.join(", ")));
    }
    let listed = if names.is_empty() { "nothing".to_string() } else { names.join(", ") };
    Err(match expected {
        ComponentKind::Tool => LoadError::WrongWorld(label.into(), listed),
        ComponentKind::Middleware => LoadError::MiddlewareWrongWorld(label.into(), listed),
    })
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
pub(crate) fn check_text_size(field: &str, text: &str, limit: usize) -> Result<(), String> {
    if text.len() > limit {
        return Err(format!("its {field} is {} bytes, more than the limit of {limit} bytes; shorten it", text.len()));
    }
    Ok(())
}

/// Refuses metadata whose fields (or whole) exceed the size limits, before
/// anything parses it.
fn check_metadata_size(m: &wit::ToolMetadata) -> Result<(), String> {
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
    m: wit::ToolMetadata,
    origin: Origin,
    wit_version: String,
    sha256: String,
    label: &str,
) -> Result<(ToolInfo, jsonschema::Validator), LoadError> {
    let bad = |msg: String| LoadError::Metadata(label.into(), msg);
    check_metadata_size(&m).map_err(bad)?;
    if m.name.is_empty()
        || !m.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        || m.name.len() > 64
    {
        return Err(bad(format!("tool name '{}' must be 1-64 characters of A-Z, a-z, 0-9, _ or -", m.name)));
    }
    let schema: serde_json::Value = serde_json::from_str(&m.input_schema)
        .map_err(|e| bad(format!("the input schema of '{}' is not JSON: {e}", m.name)))?;
    if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(bad(format!("the input schema of '{}' must have \"type\": \"object\"", m.name)));
    }
    if schema.get("properties").is_some_and(|p| !p.is_object()) {
        return Err(bad(format!("the input schema of '{}' has \"properties\" that is not an object", m.name)));
    }
    jsonschema::meta::validate(&schema).map_err(|e| {
        bad(format!("the input schema of '{}' is not valid JSON Schema: {e} (at {})", m.name, e.instance_path()))
    })?;
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| bad(format!("the input schema of '{}' is not valid JSON Schema: {e}", m.name)))?;
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

/// Validates `input` against the tool's schema; the error names the field
/// (as a JSON pointer) and the rule it breaks.
pub fn validate_input(tool: &LoadedTool, input: &serde_json::Value) -> Result<(), String> {
    let errors: Vec<String> = tool
        .validator
        .iter_errors(input)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "the input".to_string() } else { format!("`{at}`") };
            format!("{at}: {e}")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("Input validation failed for tool '{}': {}", tool.info.name, errors.join("; ")))
    }
}
