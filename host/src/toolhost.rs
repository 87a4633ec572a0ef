//! [`Toolhost`]: the library API. Load tools, list and describe them, and
//! call them through the whole pipeline:
//!
//! lookup → parse → validate against the schema → permission engine (in a
//! decision instance with no capability) → ask the caller → (external tools
//! stop here) → a fresh call instance with the grants → `call` → chunks
//! streamed and accumulated into the final response.
//!
//! Nothing runs guest code before the input has been parsed and validated,
//! and no guest code holds a grant before the decision: the permission
//! exports run in an instance of their own with no capability
//! ([`Phase::Decide`]); `call` runs in a second, fresh instance with the
//! full grants, or read-only grants when the call was allowed because the
//! tool said it only reads ([`Phase::ReadOnlyCall`]).
//!
//! **Loading.** Every tool is registered by name at once; the built-ins are
//! registered *not yet loaded* and each is loaded (compiled through the
//! cache, asked for its metadata, its name checked) the first time anything
//! needs it: a call, a check, an instance. Start-up therefore pays for no
//! built-in it does not use. [`Toolhost::list`] and [`Toolhost::describe`]
//! answer from the metadata embedded beside each built-in (see
//! [`crate::builtin`]) and compile nothing, nor do [`Toolhost::names`],
//! [`Toolhost::is_registered`],
//! [`Toolhost::is_loaded`], [`Toolhost::unload`] and
//! [`Toolhost::rules_for_unknown_tools`] never load anything.
//!
//! A large plugin whose compiled code is not cached loads in the
//! background after [`ToolhostBuilder::build`] returns (`loading.rs`):
//! [`Toolhost::ready`] waits for it, and a call of a name not registered
//! yet waits for it too (at most the call's timeout).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};

use crate::backend::{Backend, BackendFactories, BackendSetup};
use crate::capability::Grants;
use crate::catalog::group::ToolGroups;
use crate::catalog::skill::Skills;
use crate::catalog::tool::{LoadError, LookupError, Origin, ToolInfo};
use crate::permission::{self, Mode, Rule, RuleSet};
use crate::response::ResultState;
use crate::runtime::{CompileObserver, Runtime, RuntimeOptions, Tier};
use crate::settings::Settings;
use crate::state::AgentState;

mod audit;
#[cfg(test)]
mod backend_tests;
pub mod batch;
mod call;
mod catalog;
mod errors;
mod function;
pub(crate) mod loading;
mod middleware;
mod permissions;
mod pinned;
mod pipeline;
pub(crate) mod presence;
pub(crate) mod reload;
mod replace;
mod shared_rules;
mod states;
mod telemetry;
mod toolkit;
mod upstream;
pub(crate) mod watch;

pub use call::tool_error_text;
pub use catalog::Catalog;
use catalog::CatalogParts;
pub use errors::{
    AttachError, BuildError, ExternalResultError, InstanceError, RememberError, ReplaceError, WatchError,
};
pub use permissions::Permissions;
use permissions::PermissionsParts;
pub use pipeline::Pipeline;
use pipeline::PipelineParts;
pub use replace::Replacement;
pub use states::States;
pub use toolkit::ListToolsError;
pub use upstream::{UPSTREAM_RELIST_INTERVAL, UpstreamRetry, UpstreamStart};

/// One call to make.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The call id (echoed in the response).
    pub id: String,
    /// The tool name.
    pub tool: String,
    /// The input as JSON text (as a model produces it).
    pub input: String,
    /// Overrides the configured mode for this call.
    pub mode: Option<Mode>,
    /// The agent state to use; `None` uses the host's own.
    pub session: Option<Arc<AgentState>>,
    /// Who asks, for the audit log (the front end that took the call).
    pub caller: Option<crate::audit::Caller>,
    /// The caller's W3C trace context: a traced call's span is its child.
    pub trace: Option<crate::telemetry::TraceParent>,
}

/// 12 hex digits, random for this process (its pid and start time if the
/// system has no randomness to give).
fn process_tag() -> String {
    let mut bytes = [0u8; 6];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let mixed = (u64::from(std::process::id()) << 32) ^ (nanos as u64);
        bytes.copy_from_slice(&mixed.to_le_bytes()[..6]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl CallRequest {
    /// A call of `tool` with `input` (JSON text), with a fresh id:
    /// `call_{process}_{n}`, the process part random (48 bits, drawn once)
    /// and `n` counting this process's calls, so that the ids of every
    /// process writing one audit log (each `toolhost call` is one) differ.
    pub fn new(tool: impl Into<String>, input: impl Into<String>) -> Self {
        static PROCESS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let process = PROCESS.get_or_init(process_tag);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            id: format!("call_{process}_{n}"),
            tool: tool.into(),
            input: input.into(),
            mode: None,
            session: None,
            caller: None,
            trace: None,
        }
    }

    /// Sets the mode for this call.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Uses `state` as the agent state.
    pub fn session(mut self, state: Arc<AgentState>) -> Self {
        self.session = Some(state);
        self
    }

    /// Names who asks, for the audit log's record of the call.
    pub fn caller(mut self, caller: crate::audit::Caller) -> Self {
        self.caller = Some(caller);
        self
    }

    /// Continues the caller's trace (W3C `traceparent`/`tracestate`).
    pub fn trace_parent(mut self, parent: crate::telemetry::TraceParent) -> Self {
        self.trace = Some(parent);
        self
    }

    /// Sets the call id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }
}

/// The result an external executor reports for an [`ExternalCall`].
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(default)]
pub struct ExternalResult {
    /// Text for the model.
    pub output: String,
    /// `success` (default), `error`, `denied` or `interrupted`.
    pub state: Option<ResultState>,
    /// Structured metadata (validated against the tool's result schema).
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// Builds a [`Toolhost`].
#[derive(Default)]
pub struct ToolhostBuilder {
    settings: Settings,
    settings_path: Option<PathBuf>,
    backend: Option<Arc<dyn Backend>>,
    factories: BackendFactories,
    observer: Option<CompileObserver>,
    always_optimise: bool,
    background_from: Option<u64>,
    optimise_builtins: Option<bool>,
    metrics: bool,
    replica: Option<String>,
    hold_audit_log: bool,
    upstream: UpstreamStart,
    rule_store: Option<Arc<dyn crate::coordination::RuleStore>>,
}

impl ToolhostBuilder {
    /// Names this process among a deployment's replicas (`serve
    /// --replica-id`; checked by [`toolhost_core::replica::validate`]): its
    /// audit records carry it and `{replica}` in `[audit] path` is written
    /// as it. Without one, `{replica}` is the machine's host name.
    pub fn replica(mut self, id: impl Into<String>) -> Self {
        self.replica = Some(id.into());
        self
    }

    /// The shared store "allow and remember" keeps its rules in (not the
    /// settings file), whose rules, remembered by any process of the
    /// deployment, every decision applies. Required when the settings say
    /// `[state] store = "redis"` (the `toolhost-redis` crate connects one);
    /// this process is named in its records by its [`Self::replica`] id,
    /// else the machine's host name.
    pub fn rule_store(mut self, store: Arc<dyn crate::coordination::RuleStore>) -> Self {
        self.rule_store = Some(store);
        self
    }

    /// Which upstream MCP servers (`[mcp_servers.NAME]`) [`Self::build`]
    /// starts, and whether one that does not start is tried again
    /// (default [`UpstreamStart::All`]: every one, once; what went wrong is
    /// in [`Toolhost::upstream_problems`]).
    pub fn upstream(mut self, start: UpstreamStart) -> Self {
        self.upstream = start;
        self
    }

    /// Whether this process holds its audit log alone for as long as it
    /// runs (default `false`): a second process that asks the same is
    /// refused at build, naming the holder. A host that keeps running
    /// (`serve`) asks it, so two replicas never interleave their writes or
    /// rotate each other's files; short calls that write the log of a
    /// running host are not refused.
    pub fn hold_audit_log(mut self, yes: bool) -> Self {
        self.hold_audit_log = yes;
        self
    }

    /// Keeps Prometheus metrics of the calls ([`Toolhost::telemetry`]),
    /// for a front end that serves them (`serve --metrics`). Traces need
    /// no switch: `[telemetry] otlp_endpoint` or the OTLP environment
    /// turns them on.
    pub fn metrics(mut self, yes: bool) -> Self {
        self.metrics = yes;
        self
    }

    /// Uses these settings; `path` is where "allow and remember" saves rules
    /// (created when missing; see [`Settings::remember_path`]). Without a
    /// path, remembered rules last as long as the host. `path` is off limits
    /// to every tool, as are the state and cache folders the settings name
    /// (see [`crate::protected`]).
    pub fn settings(mut self, settings: Settings, path: Option<PathBuf>) -> Self {
        self.settings = settings;
        self.settings_path = path;
        self
    }

    /// Uses a custom backend instead of the one the settings name.
    pub fn backend(mut self, backend: Arc<dyn Backend>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// The backend kinds `[backend] kind` may name (default: the kinds
    /// toolhost ships, [`BackendFactories::default`]).
    pub fn backend_factories(mut self, factories: BackendFactories) -> Self {
        self.factories = factories;
        self
    }

    /// Tells `observer` of every compile that does not come from the cache
    /// (a front end on a terminal says what a first run is waiting for).
    pub fn compile_observer(mut self, observer: CompileObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Compiles every built-in's first use with the optimising compiler
    /// ([`RuntimeOptions::always_optimise`]). A one-shot process (the CLI)
    /// wants the default, baseline code for a first use on an empty cache,
    /// and so does a host that keeps running: its built-ins are optimised in
    /// the background after their first use
    /// ([`ToolhostBuilder::optimise_builtins_in_background`]).
    pub fn always_optimise(mut self, yes: bool) -> Self {
        self.always_optimise = yes;
        self
    }

    /// Whether a built-in whose first use ran on baseline code gets its
    /// optimised code compiled in the background (low priority, one compile
    /// at a time, behind any plugin loads) and swapped in, so that a host
    /// that keeps running converges on optimised code (default `true`). A
    /// one-shot process turns it off and leaves the compile to another
    /// process ([`Toolhost::builtins_to_optimise`]), as the CLI does.
    pub fn optimise_builtins_in_background(mut self, yes: bool) -> Self {
        self.optimise_builtins = Some(yes);
        self
    }

    /// Plugin files of at least `bytes` whose compiled code is not cached
    /// load in the background (default [`BACKGROUND_LOAD_BYTES`]); smaller
    /// ones compile in `build()`. `0` sends every such file to the
    /// background, `u64::MAX` none (every plugin loaded when `build()`
    /// returns, as [`Toolhost::ready`] after it also gives).
    pub fn background_loads_from(mut self, bytes: u64) -> Self {
        self.background_from = Some(bytes);
        self
    }

    /// Starts the runtime, registers the built-ins (each loads on first
    /// use), loads the configured middleware and starts loading the
    /// configured plugins: each plugin file is read and checked now (its
    /// header, the world and WIT version it exports, its pin when locked)
    /// and loaded now when its compiled code is in the compile cache or it
    /// is small (below [`ToolhostBuilder::background_loads_from`], a
    /// compile of well under a second); a large one that needs a compile
    /// loads in the background after this returns
    /// ([`Toolhost::pending_loads`], [`Toolhost::ready`]), so a Python or
    /// JavaScript plugin on an empty cache holds up nothing else.
    /// A check that fails is an error here; a background load that fails
    /// is reported by [`Toolhost::ready`] and [`Toolhost::failed_loads`].
    pub async fn build(self) -> Result<Toolhost, BuildError> {
        let mut settings = self.settings;
        let working_dirs = settings.working_dirs().map_err(BuildError::from_chain(BuildError::Settings))?;
        for dir in &working_dirs {
            if !dir.is_dir() {
                return Err(BuildError::Settings(format!(
                    "working directory {} does not exist or is not a directory",
                    dir.display()
                )));
            }
        }
        let rules = settings
            .permissions
            .rule_set()
            .map_err(|e| BuildError::Settings(format!("reading [permissions] rules: {e:#}")))?;
        for (name, policy) in &settings.grants {
            policy.validate(name).map_err(BuildError::Settings)?;
        }
        for (name, server) in &settings.mcp_servers {
            server.validate(name).map_err(BuildError::Settings)?;
        }
        let runtime = Runtime::new(&RuntimeOptions {
            cache_dir: Some(settings.cache_dir()),
            cache_max_bytes: settings.cache_max_bytes,
            limits: settings.limits,
            observer: self.observer,
            always_optimise: self.always_optimise,
            ..Default::default()
        })
        .map_err(BuildError::from_chain(BuildError::Runtime))?;
        let protected = Arc::new(settings.protected_paths(self.settings_path.as_deref()));
        let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into()));
        // A backend given by the embedder has no options of the settings.
        let (backend, backend_paths) = match self.backend {
            Some(b) => (b, Vec::new()),
            None => {
                let backend_error = BuildError::from_chain(BuildError::Backend);
                let options =
                    self.factories.options(&settings.backend.kind, &settings.backend.options).map_err(backend_error)?;
                let setup =
                    BackendSetup { cwd: &working_dirs[0], working_dirs: &working_dirs, protected: protected.clone() };
                let backend = options.make(&setup).map_err(BuildError::from_chain(BuildError::Backend))?;
                (backend, options.writable_paths(&home))
            }
        };
        let writable_roots = settings.tool_writable_roots(&backend_paths);
        let lock_path = settings.lock_path(self.settings_path.as_deref());
        let lock = pinned::read_lock(&lock_path, settings.locked).map_err(BuildError::from_chain(BuildError::Lock))?;
        // `oci://` plugins: pulled (or found in the content store) and
        // verified before anything of them is compiled; each entry becomes
        // its stored component file.
        let oci_entries = crate::oci::resolve::references(&settings);
        crate::oci::resolve_plugins(&mut settings, lock.as_deref())
            .await
            .map_err(BuildError::from_chain(BuildError::Registry))?;
        let groups = Arc::new(ToolGroups::from_settings(&settings.groups).map_err(BuildError::Settings)?);
        // Malformed skill folders are skipped, not fatal: front ends show
        // `skill_problems`.
        let skills = Arc::new(Skills::scan(&settings.skills.dirs));
        if let Some(id) = &self.replica {
            toolhost_core::replica::validate(id).map_err(BuildError::Settings)?;
        }
        let audit = match settings.audit.path {
            Some(_) => {
                let audit = audit_settings(&settings, &working_dirs, self.replica.as_deref())
                    .map_err(BuildError::from_chain(BuildError::Settings))?;
                let log = crate::audit::AuditLog::open(&audit, self.hold_audit_log)
                    .map_err(|e| BuildError::Audit(format!("opening the audit log: {e:#}")))?;
                Some(Arc::new(log))
            }
            None => None,
        };
        let shared_rules = match self.rule_store {
            Some(store) => {
                let replica = self.replica.clone().unwrap_or_else(crate::replica::machine);
                Some(shared_rules::SharedRules::new(store, replica))
            }
            None if settings.state.store == crate::settings::StoreKind::Local => None,
            None => return Err(BuildError::Settings(
                "[state] store = \"redis\" keeps remembered rules in a shared store, and this host was given none: \
                 connect one (toolhost_redis::RedisStore::connect) and pass it to ToolhostBuilder::rule_store, or \
                 set [state] store = \"local\""
                    .into(),
            )),
        };
        let telemetry = crate::telemetry::Telemetry::start(&settings.telemetry, self.metrics)
            .map_err(BuildError::from_chain(BuildError::Telemetry))?;
        let settings = Arc::new(settings);
        let catalog = Catalog::new(CatalogParts {
            settings: settings.clone(),
            runtime,
            background_from: self.background_from.unwrap_or(BACKGROUND_LOAD_BYTES),
            optimise_builtins: self.optimise_builtins.unwrap_or(true),
            lock,
            lock_path,
            writable_roots,
            groups,
            skills,
            oci_entries,
        });
        let permissions = Arc::new(Permissions::new(PermissionsParts {
            settings: settings.clone(),
            rules,
            shared_rules,
            settings_path: self.settings_path,
            working_dirs,
            backend: backend.clone(),
            protected,
        }));
        let states = Arc::new(States::new(Arc::new(AgentState::new())));
        let pipeline = Arc::new(Pipeline::new(PipelineParts {
            catalog: catalog.clone(),
            permissions: permissions.clone(),
            states: states.clone(),
            settings: settings.clone(),
            backend,
            audit,
            telemetry,
            replica: self.replica.clone(),
        }));
        let host = Toolhost {
            inner: Arc::new(Inner { settings, catalog, permissions, pipeline, states, replica: self.replica }),
        };
        // Before any plugin, so none can take a meta tool's name.
        host.inner.catalog.register_meta_tools()?;
        if host.inner.settings.builtins {
            host.inner.catalog.register_builtins()?;
        }
        // A plugin whose compiled code is not cached compiles after this
        // returns (`loading.rs`); its quick checks fail the build now.
        for plugin in host.inner.settings.plugins.clone() {
            host.start_loading_file(&plugin).await?;
        }
        for dir in host.inner.settings.plugin_dirs.clone() {
            let files =
                crate::settings::wasm_files(&dir).map_err(|error| LoadError::Dir { dir: dir.clone(), error })?;
            for file in files {
                host.start_loading_file(&file).await?;
            }
        }
        // Middleware loads before the host serves anything: a call must
        // never run without a layer attached to its tool (a redaction
        // layer loaded late would let calls through unredacted).
        host.load_configured_middleware().await?;
        let problems = upstream::connect(&host, &self.upstream).await;
        let _ = host.inner.catalog.upstream_problems.set(problems);
        Ok(host)
    }
}

/// `[audit]` for this process: `{replica}` written as `replica` (else the
/// host name). The folder of a log per replica is toolhost's own as a
/// whole, so it may not hold a working directory.
fn audit_settings(
    settings: &Settings,
    working_dirs: &[PathBuf],
    replica: Option<&str>,
) -> Result<crate::audit::AuditSettings> {
    if let Some(folder) = settings.audit.own_folder() {
        let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        if let Some(dir) = working_dirs.iter().find(|dir| dir.starts_with(&folder)) {
            bail!(
                "[audit] path = {:?} has {{replica}} in its name, which makes its folder toolhost's own (no tool may \
                 touch the logs of other replicas there), but the working directory {} is in that folder; give the \
                 logs a folder of their own",
                settings.audit.path.as_deref().unwrap_or(Path::new("")).display().to_string(),
                dir.display()
            );
        }
    }
    let replica = replica.map_or_else(toolhost_core::replica::machine, str::to_string);
    Ok(settings.audit.for_replica(&replica))
}

/// The services a [`Toolhost`] composes.
struct Inner {
    settings: Arc<Settings>,
    catalog: Arc<Catalog>,
    permissions: Arc<Permissions>,
    pipeline: Arc<Pipeline>,
    states: Arc<States>,
    /// This process's replica id, when it was given one.
    replica: Option<String>,
}

/// The size from which a plugin file whose compiled code is not cached
/// loads in the background by default: 1 MiB. Rust components are mostly
/// below it (the built-ins are 0.1–2.1 MB) and compile in a fraction of a
/// second in release; Python and JavaScript components carry their language
/// runtime (12–19 MB) and take tens of seconds.
pub const BACKGROUND_LOAD_BYTES: u64 = 1 << 20;

/// The most calls that hold instances at once; the next waits for one to
/// finish. Each holds a decision or call instance and one per middleware
/// layer, each of several core instances, and the pool has 256 component and
/// 512 core instances (`runtime/mod.rs`): more calls at once would exhaust it
/// and fail calls because of load. Two cores run no more than this in
/// parallel anyway.
pub const RUNNING_CALLS: usize = 32;

/// A host for tool components. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Toolhost {
    inner: Arc<Inner>,
}

impl Toolhost {
    /// A builder with default settings.
    pub fn builder() -> ToolhostBuilder {
        ToolhostBuilder::default()
    }

    /// What is loaded: tools, middleware, background loads, pins, groups
    /// and skills.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.inner.catalog
    }

    /// What calls may do: rules, decisions, grants.
    pub fn permissions(&self) -> &Arc<Permissions> {
        &self.inner.permissions
    }

    /// Where calls run, from request to response.
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.inner.pipeline
    }

    /// The agent states calls use.
    pub fn states(&self) -> &Arc<States> {
        &self.inner.states
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// This process's replica id ([`ToolhostBuilder::replica`]), when it
    /// was given one.
    pub fn replica_id(&self) -> Option<&str> {
        self.inner.replica.as_deref()
    }

    /// The runtime (engine, pooling, cache).
    pub fn runtime(&self) -> &Runtime {
        self.inner.catalog.runtime()
    }

    /// The host's own agent state (used by calls without a session).
    pub fn state(&self) -> &Arc<AgentState> {
        self.inner.states.host()
    }

    /// Loads a plugin from a `.wasm` file ([`Catalog::load_file`]).
    pub async fn load_file(&self, path: &Path) -> Result<ToolInfo, LoadError> {
        self.inner.catalog.load_file(path).await
    }

    /// Starts loading a plugin from a `.wasm` file
    /// ([`Catalog::start_loading_file`]).
    pub async fn start_loading_file(&self, path: &Path) -> Result<Option<ToolInfo>, LoadError> {
        self.inner.catalog.start_loading_file(path).await
    }

    /// Loads every `.wasm` file in a directory ([`Catalog::load_dir`]).
    pub async fn load_dir(&self, dir: &Path) -> Result<Vec<ToolInfo>, LoadError> {
        self.inner.catalog.load_dir(dir).await
    }

    /// Removes a tool ([`Catalog::unload`]).
    pub fn unload(&self, name: &str) -> bool {
        self.inner.catalog.unload(name)
    }

    /// Tells of every change to the set of tools
    /// ([`Catalog::tool_list_changes`]), including loads through
    /// [`Toolhost::load_file`], [`Toolhost::replace`] and
    /// [`Toolhost::register_function`]. Front ends use it to send MCP
    /// `notifications/tools/list_changed`.
    pub fn tool_list_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.catalog.tool_list_changes()
    }

    /// Every registered tool's name, sorted ([`Catalog::names`]).
    pub fn names(&self) -> Vec<String> {
        self.inner.catalog.names()
    }

    /// Whether a tool named `name` is registered ([`Catalog::is_registered`]).
    pub fn is_registered(&self, name: &str) -> bool {
        self.inner.catalog.is_registered(name)
    }

    /// Where the tool named `name` comes from ([`Catalog::origin`]).
    pub fn origin(&self, name: &str) -> Option<Origin> {
        self.inner.catalog.origin(name)
    }

    /// Whether `name` is registered *and loaded* ([`Catalog::is_loaded`]):
    /// how to observe (and test) that start-up loaded no built-in.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.inner.catalog.is_loaded(name)
    }

    /// Which compiler's code the tool named `name` runs now
    /// ([`Catalog::code_tier`]). A tool on [`Tier::Baseline`] code moves to
    /// optimised code once its background compile is done (see
    /// [`crate::loading`]).
    pub fn code_tier(&self, name: &str) -> Option<Tier> {
        self.inner.catalog.code_tier(name)
    }

    /// The built-ins loaded in this host whose optimised code is not in the
    /// compile cache ([`Catalog::builtins_to_optimise`]): worth
    /// [`crate::builtin::optimise`], here in the background or by another
    /// process, so that later processes start on optimised code.
    pub fn builtins_to_optimise(&self) -> Vec<&'static str> {
        self.inner.catalog.builtins_to_optimise()
    }

    /// Every tool's metadata, sorted by name ([`Catalog::list`]). Loads
    /// nothing.
    pub async fn list(&self) -> Result<Vec<ToolInfo>, LoadError> {
        self.inner.catalog.list()
    }

    /// One tool's metadata ([`Catalog::describe`]). Loads nothing.
    pub async fn describe(&self, name: &str) -> Result<ToolInfo, LookupError> {
        self.inner.catalog.describe(name)
    }

    /// Rules configured for tools that are not registered (worth a
    /// warning). Loads nothing.
    pub fn rules_for_unknown_tools(&self) -> Vec<String> {
        self.inner.permissions.rules_for_unknown_tools(|name| self.inner.catalog.is_registered(name))
    }

    /// The grants a tool gets ([`Permissions::grants_for`]).
    pub fn grants_for(&self, info: &ToolInfo) -> Grants {
        self.inner.permissions.grants_for(info)
    }

    /// The permission context for `tool` in `mode`
    /// ([`Permissions::permission_context`]).
    pub fn permission_context(&self, tool: &str, mode: Mode) -> permission::Context {
        self.inner.permissions.permission_context(tool, mode)
    }

    /// The file "allow and remember" saves rules to, if any (absolute when
    /// the host was built through the CLI).
    pub fn settings_path(&self) -> Option<&Path> {
        self.inner.permissions.settings_path()
    }

    /// toolhost's own files: every call that names one is denied and the
    /// local backend refuses them to every tool.
    pub fn protected_paths(&self) -> &crate::protected::ProtectedPaths {
        self.inner.permissions.protected_paths()
    }

    /// A middleware's own settings (`[middleware.NAME]`) as JSON text;
    /// `{}` when none.
    pub fn middleware_config(&self, name: &str) -> String {
        self.inner.pipeline.middleware_config(name)
    }

    /// A tool's own settings (`[tools.NAME]`) as JSON; `{}` when none.
    pub fn tool_config(&self, tool: &str) -> serde_json::Value {
        self.inner.permissions.tool_config(tool)
    }

    /// The configured mode.
    pub fn mode(&self) -> Mode {
        self.inner.permissions.mode()
    }

    /// The rules in force (configured plus remembered).
    pub fn rules(&self) -> Arc<RuleSet> {
        self.inner.permissions.rules()
    }

    /// Adds a rule for the rest of this host's life and saves it
    /// ([`Permissions::remember_rule`]).
    pub fn remember_rule(&self, rule: Rule) -> Result<(), RememberError> {
        self.inner.permissions.remember_rule(rule)
    }
}

/// What the services answer, as the façade's methods.
impl Toolhost {
    /// The plugin files this host is loading, or serves on baseline code,
    /// whose optimised code is not cached yet ([`Catalog::plugins_to_optimise`]).
    pub fn plugins_to_optimise(&self) -> Vec<(PathBuf, String)> {
        self.inner.catalog.plugins_to_optimise()
    }

    /// The plugin files loading in the background now
    /// ([`Catalog::pending_loads`]).
    pub fn pending_loads(&self) -> Vec<loading::PendingLoad> {
        self.inner.catalog.pending_loads()
    }

    /// The plugin files whose background load failed
    /// ([`Catalog::failed_loads`]).
    pub fn failed_loads(&self) -> Vec<loading::FailedLoad> {
        self.inner.catalog.failed_loads()
    }

    /// Moves on at every change of [`Toolhost::pending_loads`] and
    /// [`Toolhost::failed_loads`] ([`Catalog::load_changes`]).
    pub fn load_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.catalog.load_changes()
    }

    /// Waits until no plugin is loading in the background
    /// ([`Catalog::ready`]).
    pub async fn ready(&self) -> Result<(), loading::LoadFailures> {
        self.inner.catalog.ready().await
    }

    /// The lock file as last read (`None`: there is none).
    pub fn lock_file(&self) -> Option<Arc<crate::lockfile::LockFile>> {
        self.inner.catalog.lock_file()
    }

    /// Where this host reads its lock file.
    pub fn lock_path(&self) -> &Path {
        self.inner.catalog.lock_path()
    }

    /// The skills found in `[skills] dirs`.
    pub fn skills(&self) -> &crate::catalog::skill::Skills {
        self.inner.catalog.skills()
    }

    /// What was wrong with each folder of `[skills] dirs` that is not a
    /// skill (each names the folder and the fix); those folders are
    /// skipped.
    pub fn skill_problems(&self) -> &[String] {
        self.inner.catalog.skills().problems()
    }

    /// The configured tool groups (empty when none is).
    pub fn groups(&self) -> &crate::catalog::group::ToolGroups {
        self.inner.catalog.groups()
    }

    /// The tools offered to a session whose agent state is `session` (the
    /// host's own state when `None`; [`Catalog::available`]). Loads
    /// nothing, like [`Toolhost::list`].
    pub async fn available(&self, session: Option<&AgentState>) -> Result<Vec<ToolInfo>, ListToolsError> {
        self.inner.catalog.available(self.inner.states.of(session)).await
    }

    /// The refusal of a call to `tool` when its group is inactive in
    /// `session` (the host's own state when `None`); `None` when the tool
    /// may be called.
    pub async fn inactive_refusal(
        &self,
        tool: &str,
        session: Option<&AgentState>,
    ) -> Result<Option<String>, crate::state::StateError> {
        self.inner.catalog.inactive_refusal(tool, self.inner.states.of(session)).await
    }

    /// The audit log of `[audit]`, when one is configured.
    pub fn audit_log(&self) -> Option<Arc<crate::audit::AuditLog>> {
        self.inner.pipeline.audit_log()
    }

    /// Traces and metrics, when the settings or the builder turned either
    /// on ([`ToolhostBuilder::metrics`]).
    pub fn telemetry(&self) -> Option<&Arc<crate::telemetry::Telemetry>> {
        self.inner.pipeline.telemetry()
    }

    /// The Prometheus text of the host's metrics ([`Pipeline::metrics_text`]);
    /// `None` when the host keeps no metrics.
    pub fn metrics_text(&self) -> Option<String> {
        self.inner.pipeline.metrics_text()
    }

    /// A fresh instance of `tool` (loading the tool on first use) with its
    /// full grants ([`Pipeline::instantiate`]).
    pub async fn instantiate(
        &self,
        tool: &str,
        session: Option<Arc<AgentState>>,
        output: tokio::sync::mpsc::Sender<crate::response::Chunk>,
    ) -> Result<crate::execution::callable::CallableTool, InstanceError> {
        self.inner.pipeline.instantiate(tool, session, output).await
    }

    /// A fresh instance of `tool` with no capability at all, for the
    /// permission exports ([`Pipeline::decision_instance`]).
    pub async fn decision_instance(
        &self,
        tool: &str,
    ) -> Result<crate::execution::callable::CallableTool, InstanceError> {
        self.inner.pipeline.decision_instance(tool).await
    }

    /// Evaluates the permission engine for one call without running it
    /// ([`Pipeline::check`]).
    pub async fn check(
        &self,
        tool: &str,
        input: &serde_json::Value,
        ctx: &permission::Context,
        rules: &RuleSet,
    ) -> Result<permission::Decision, InstanceError> {
        self.inner.pipeline.check(tool, input, ctx, rules).await
    }

    /// Starts a call and returns its event stream ([`Pipeline::call`]).
    ///
    /// The call starts when the stream is first polled
    /// ([`crate::events::CallStream::next`] runs it as a task;
    /// [`crate::events::CallStream::finish`] runs it in the caller's task,
    /// which saves a thread hop per event).
    pub fn call(&self, request: CallRequest) -> crate::events::CallStream {
        self.inner.pipeline.call(request)
    }

    /// Turns the result an external executor reports into the call's
    /// response, validating its metadata against the tool's schema.
    pub fn complete_external(
        &self,
        call: &crate::events::ExternalCall,
        result: ExternalResult,
    ) -> Result<crate::response::ToolResponse, ExternalResultError> {
        self.inner.pipeline.complete_external(call, result)
    }
}

#[cfg(test)]
mod tests;
