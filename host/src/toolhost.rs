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

use crate::sync::RwLockExt;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};

use anyhow::{Result, bail};

use crate::backend::{Backend, BackendFactories, BackendSetup};
use crate::capability::{Grants, Phase, PhaseGrants, Policy};
use crate::catalog::builtin::Builtin;
use crate::catalog::component::{ComponentKind, check_world_of};
use crate::catalog::group::ToolGroups;
use crate::catalog::registry::{Entry, Registry};
use crate::catalog::skill::Skills;
use crate::catalog::tool::{LoadError, LookupError, Origin, ToolInfo};
use crate::execution::component::{load_builtin_tiered, load_compiled, load_component};
use crate::execution::loaded::LoadedTool;
use crate::execution::middleware::registry::Registry as MiddlewareRegistry;
use crate::permission::{self, Mode, Rule, RuleSet};
use crate::response::ResultState;
use crate::runtime::{CacheOutcome, CompileObserver, Runtime, RuntimeOptions, Tier};
use crate::settings::Settings;
use crate::state::AgentState;

mod audit;
#[cfg(test)]
mod backend_tests;
pub mod batch;
mod call;
mod errors;
mod function;
pub(crate) mod loading;
mod middleware;
mod pinned;
pub(crate) mod presence;
pub(crate) mod reload;
mod replace;
mod shared_rules;
mod telemetry;
mod toolkit;
mod upstream;
pub(crate) mod watch;

pub use call::tool_error_text;
pub use errors::{AttachError, BuildError, ExternalResultError, ReplaceError};
pub use replace::Replacement;
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
        let context_dirs = context_dirs(&working_dirs);
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
        let tool_configs = settings.tools.keys().map(|name| (name.clone(), settings.tool_config(name))).collect();
        let middleware_configs = settings
            .middleware
            .settings
            .keys()
            .map(|name| (name.clone(), settings.middleware.config(name).to_string()))
            .collect();
        let host = Toolhost {
            inner: Arc::new(Inner {
                runtime,
                tools: Registry::default(),
                rules: RwLock::new(Arc::new(rules)),
                backend,
                context_dirs,
                tool_configs,
                middleware_configs,
                middleware_grants: Default::default(),
                working_dirs,
                state: Arc::new(AgentState::new()),
                settings_path: self.settings_path,
                protected,
                settings,
                middleware: Default::default(),
                lock: RwLock::new(lock),
                lock_path,
                writable_roots,
                groups,
                skills,
                upstream_problems: Default::default(),
                running: Arc::new(tokio::sync::Semaphore::new(RUNNING_CALLS)),
                audit,
                telemetry,
                shared_rules,
                loads: Default::default(),
                background_from: self.background_from.unwrap_or(BACKGROUND_LOAD_BYTES),
                optimise_builtins: self.optimise_builtins.unwrap_or(true),
                oci_entries,
                replica: self.replica,
            }),
        };
        // Before any plugin, so none can take a meta tool's name.
        host.register_meta_tools()?;
        if host.inner.settings.builtins {
            host.register_builtins()?;
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
        let _ = host.inner.upstream_problems.set(problems);
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

struct Inner {
    runtime: Runtime,
    /// Every registered tool by name, loaded or not yet loaded.
    tools: Registry<LoadedTool>,
    /// Replaced (not mutated) when a rule is remembered, so a call takes a
    /// cheap snapshot.
    rules: RwLock<Arc<RuleSet>>,
    backend: Arc<dyn Backend>,
    /// The working directories as the permission context shows them (given
    /// and symlink-resolved), computed once: they do not change.
    context_dirs: Vec<String>,
    /// Each configured tool's settings as JSON, converted once.
    tool_configs: BTreeMap<String, serde_json::Value>,
    /// Each configured middleware's settings as JSON text, converted once.
    middleware_configs: BTreeMap<String, String>,
    /// Each middleware's grants in every phase, computed on its first call
    /// (the settings and working directories never change; resolving the
    /// roots touches the filesystem).
    middleware_grants: Mutex<BTreeMap<String, Arc<PhaseGrants>>>,
    working_dirs: Vec<PathBuf>,
    state: Arc<AgentState>,
    settings_path: Option<PathBuf>,
    /// toolhost's own files, denied to every call that names them.
    protected: Arc<crate::protected::ProtectedPaths>,
    settings: Settings,
    /// Loaded middleware and which tools it is attached to.
    middleware: MiddlewareRegistry,
    /// `toolhost.lock` as last read (`None`: there is none), and where.
    lock: RwLock<Option<Arc<crate::lockfile::LockFile>>>,
    lock_path: PathBuf,
    /// Where tools may write (real paths): a component file reached there
    /// loads only when pinned (`pinned.rs`).
    writable_roots: Vec<PathBuf>,
    /// The tool groups of `[groups.NAME]`.
    groups: Arc<ToolGroups>,
    /// The skills of `[skills] dirs`.
    skills: Arc<Skills>,
    /// What went wrong starting the upstream servers, once they were.
    upstream_problems: std::sync::OnceLock<Vec<String>>,
    /// One permit per call holding instances ([`RUNNING_CALLS`]).
    running: Arc<tokio::sync::Semaphore>,
    /// The audit log of `[audit]`, when one is configured.
    audit: Option<Arc<crate::audit::AuditLog>>,
    /// Traces and metrics, when either is on.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// Plugins loading in the background.
    loads: loading::Loads,
    /// The size from which a plugin not in the cache loads in the background.
    background_from: u64,
    /// Whether a built-in first used on baseline code is optimised in the
    /// background ([`ToolhostBuilder::optimise_builtins_in_background`]).
    optimise_builtins: bool,
    /// The `oci://` entries of `plugins` as written (the settings hold
    /// their links in the content store): `serve --watch` polls their tags.
    oci_entries: Vec<String>,
    /// This process's replica id, when it was given one.
    replica: Option<String>,
    /// Remembered rules shared with the other processes of a deployment
    /// ([`ToolhostBuilder::rule_store`]).
    shared_rules: Option<shared_rules::SharedRules>,
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
        &self.inner.runtime
    }

    /// A permit to hold instances for one call, waiting at most `wait` for
    /// one of the [`RUNNING_CALLS`] to finish.
    pub(crate) async fn running_permit(&self, wait: std::time::Duration) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let acquire = self.inner.running.clone().acquire_owned();
        let acquired = match &self.inner.telemetry {
            None => tokio::time::timeout(wait, acquire).await,
            Some(telemetry) => {
                let started = std::time::Instant::now();
                let waiting = &telemetry.metrics().calls_waiting;
                waiting.inc();
                let acquired = tokio::time::timeout(wait, acquire).await;
                waiting.dec();
                let waited = started.elapsed();
                crate::telemetry::trace::note(|t| {
                    t.note(|n| n.queue_wait = Some(n.queue_wait.unwrap_or_default() + waited))
                });
                acquired
            }
        };
        match acquired {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => bail!("the host is shutting down"),
            Err(_) => bail!(
                "the host is running {RUNNING_CALLS} calls at once and none finished within {} ms (the call's \
                 timeout), so this one did not start; retry it, or send fewer long calls at once",
                wait.as_millis()
            ),
        }
    }

    /// The host's own agent state (used by calls without a session).
    pub fn state(&self) -> &Arc<AgentState> {
        &self.inner.state
    }

    /// Registers every built-in under its tool name, none of them loaded.
    fn register_builtins(&self) -> Result<(), LoadError> {
        for builtin in crate::catalog::builtin::BUILTINS {
            let label = format!("built-in tool {}", builtin.name);
            self.register(builtin.name, builtin_entry(builtin, Arc::downgrade(&self.inner)), &label)?;
        }
        Ok(())
    }

    /// Loads a plugin from a `.wasm` file, compiling it now if its compiled
    /// code is not cached (see [`Toolhost::start_loading_file`] for a load
    /// that does not wait for the compile).
    pub async fn load_file(&self, path: &Path) -> Result<ToolInfo, LoadError> {
        let own = self.read_component(path, "plugin")?;
        let label = path.display().to_string();
        self.check_component(path, &own, &label)?;
        let bytes = own.bytes;
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.insert(&bytes, Origin::File(abs), &label).await
    }

    /// Starts loading a plugin from a `.wasm` file: reads it and checks its
    /// pin (when locked), header, world and WIT version now; loads it now
    /// when its compiled code is in the cache or it is small (`Some`: its
    /// tool); otherwise queues it to compile and load in the background
    /// (`None`; see [`Toolhost::pending_loads`]). Outside a tokio runtime it
    /// loads now.
    pub async fn start_loading_file(&self, path: &Path) -> Result<Option<ToolInfo>, LoadError> {
        let own = self.read_component(path, "plugin")?;
        let label = path.display().to_string();
        self.check_component(path, &own, &label)?;
        let bytes = own.bytes;
        check_world_of(&bytes, &label, ComponentKind::Tool)?;
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let sha256 = crate::lockfile::sha256_hex(&bytes);
        let first_use = self.plugin_first_use();
        if let Some((component, tier)) = self.inner.runtime.cached(&bytes, first_use) {
            let compiled = (component, CacheOutcome::Hit, tier);
            let origin = Origin::File(abs.clone());
            let report = load_compiled(&self.inner.runtime, compiled, origin, &label, sha256.clone()).await?;
            let info = self.insert_loaded(report.tool, &label)?;
            // Baseline code an earlier first load left: optimise it now.
            if tier == Tier::Baseline {
                self.queue_optimise(&info.name, abs, sha256, bytes.into());
            }
            return Ok(Some(info));
        }
        let large = bytes.len() as u64 >= self.inner.background_from;
        if large && self.queue_load(abs.clone(), label.clone(), sha256, bytes.clone()) {
            return Ok(None);
        }
        Ok(Some(self.insert(&bytes, Origin::File(abs), &label).await?))
    }

    /// Which compiler a plugin loading in the background gets when its
    /// optimised code is not cached: the baseline one unless the runtime
    /// always optimises (its optimised code follows, see `loading.rs`).
    pub(crate) fn plugin_first_use(&self) -> Tier {
        if self.inner.runtime.always_optimise() { Tier::Optimised } else { Tier::Baseline }
    }

    /// Loads every `.wasm` file in a directory (sorted by name).
    pub async fn load_dir(&self, dir: &Path) -> Result<Vec<ToolInfo>, LoadError> {
        let files =
            crate::settings::wasm_files(dir).map_err(|error| LoadError::Dir { dir: dir.to_path_buf(), error })?;
        let mut loaded = Vec::new();
        for file in files {
            loaded.push(self.load_file(&file).await?);
        }
        Ok(loaded)
    }

    async fn insert(&self, bytes: &[u8], origin: Origin, label: &str) -> Result<ToolInfo, LoadError> {
        let report = load_component(&self.inner.runtime, bytes, origin, label).await?;
        self.insert_loaded(report.tool, label)
    }

    /// Adds a loaded tool (component or native function) under its name.
    pub(crate) fn insert_loaded(&self, tool: LoadedTool, label: &str) -> Result<ToolInfo, LoadError> {
        let info = tool.info.clone();
        self.register(&info.name, Entry::Loaded(Arc::new(tool)), label)?;
        Ok(info)
    }

    /// Registers `entry` as `name`, unless that name is taken (by a loaded
    /// tool or a not-yet-loaded one: a name conflict never loads anything).
    fn register(&self, name: &str, entry: Entry<LoadedTool>, label: &str) -> Result<(), LoadError> {
        // Lock order: tools, then middleware (as in `insert_middleware`).
        self.inner.tools.insert(name, entry, label, || {
            self.inner.middleware.has(name).then(|| LoadError::NameClash {
                source_name: label.to_string(),
                name: name.to_string(),
                loading: "tool",
                existing: "middleware",
            })
        })
    }

    /// Adds a middleware layer under its name unless a tool or another
    /// middleware has it (tools and middleware share `[grants.NAME]`).
    pub(crate) fn insert_middleware(
        &self,
        insert: impl FnOnce() -> Result<crate::execution::middleware::MiddlewareInfo, LoadError>,
        name: &str,
        label: &str,
    ) -> Result<crate::execution::middleware::MiddlewareInfo, LoadError> {
        // Held while inserting, so no tool of that name can appear meanwhile.
        let tools = self.inner.tools.read();
        if tools.contains_key(name) {
            return Err(LoadError::NameClash {
                source_name: label.to_string(),
                name: name.to_string(),
                loading: "middleware",
                existing: "tool",
            });
        }
        insert()
    }

    /// Removes a tool, loaded or not yet loaded (nothing is loaded to remove
    /// it); returns whether it was registered.
    pub fn unload(&self, name: &str) -> bool {
        self.inner.tools.remove(name)
    }

    /// Tells of every change to the set of tools: the receiver's value (a
    /// generation number) moves on each registration, replacement and
    /// unload after this call, including loads through [`Toolhost::load_file`],
    /// [`Toolhost::replace`] and [`Toolhost::register_function`]. Front ends
    /// use it to send MCP `notifications/tools/list_changed`. Only the newest
    /// generation is kept: a reader that falls behind sees one change, then
    /// lists again. Loads nothing.
    pub fn tool_list_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.tools.subscribe()
    }

    /// Every registered tool's name, sorted, without loading any of them.
    pub fn names(&self) -> Vec<String> {
        self.inner.tools.read().keys().cloned().collect()
    }

    /// Whether a tool named `name` is registered (loaded or not). Loads
    /// nothing.
    pub fn is_registered(&self, name: &str) -> bool {
        self.inner.tools.read().contains_key(name)
    }

    /// Where the tool named `name` comes from (`None` when it is not
    /// registered). Loads nothing.
    pub fn origin(&self, name: &str) -> Option<Origin> {
        self.inner.tools.read().get(name).map(|entry| entry.origin().clone())
    }

    /// Whether `name` is registered *and loaded*. A built-in is registered
    /// at start-up but loaded only when first needed (a call, a check, an
    /// instance; not [`Toolhost::describe`] or [`Toolhost::list`]); plugins and
    /// function tools are loaded when registered. Loads nothing: this is how
    /// to observe (and test) that start-up loaded no built-in.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.inner.tools.read().get(name).is_some_and(Entry::is_loaded)
    }

    /// Which compiler's code the tool named `name` runs now: `None` when it
    /// is not loaded (a built-in before its first use) or runs no compiled
    /// component (a function tool, an upstream server's tool). A tool on
    /// [`Tier::Baseline`] code moves to optimised code once its background
    /// compile is done (see [`crate::loading`]).
    pub fn code_tier(&self, name: &str) -> Option<Tier> {
        self.inner.tools.entry(name)?.loaded()?.kind.tier()
    }

    /// The built-ins loaded in this host whose optimised code is not in the
    /// compile cache (their first use ran baseline code): worth
    /// [`crate::builtin::optimise`], here in the background or by another
    /// process, so that later processes start on optimised code.
    pub fn builtins_to_optimise(&self) -> Vec<&'static str> {
        let tools = self.inner.tools.read();
        crate::builtin::BUILTINS
            .iter()
            .filter(|b| tools.get(b.name).is_some_and(|e| e.is_loaded() && *e.origin() == Origin::Builtin))
            .filter(|b| !self.inner.runtime.is_optimised_cached(b.bytes))
            .map(|b| b.name)
            .collect()
    }

    /// Every tool's metadata, sorted by name. Loads nothing: a built-in not
    /// loaded yet answers from the metadata embedded beside its component
    /// (see [`crate::builtin`]), so listing compiles nothing. When one
    /// tool's metadata is unusable, the error is that of the first such tool
    /// by name (it names the tool and the cause).
    pub async fn list(&self) -> Result<Vec<ToolInfo>, LoadError> {
        self.inner.tools.entries().iter().map(Entry::info).collect()
    }

    /// One tool's metadata. Loads nothing (a built-in answers from its
    /// embedded metadata, like [`Toolhost::list`]).
    pub async fn describe(&self, name: &str) -> Result<ToolInfo, LookupError> {
        self.inner.tools.info(name)
    }

    /// The loaded tool named `name`, loading it on first use. A name that
    /// is not registered while plugins load in the background may be one of
    /// theirs: it waits for them, at most the call timeout
    /// (`limits.timeout_ms`), before it is unknown.
    pub(crate) async fn tool(&self, name: &str) -> Result<Arc<LoadedTool>, LookupError> {
        match self.inner.tools.get(name, &self.inner.runtime).await {
            Err(LookupError::Unknown(_)) if !self.pending_loads().is_empty() => {}
            found => return found,
        }
        let deadline = std::time::Instant::now() + self.settings().limits.timeout();
        self.wait_for_name(name, deadline).await;
        match self.inner.tools.get(name, &self.inner.runtime).await {
            Err(LookupError::Unknown(_)) if !self.pending_loads().is_empty() => Err(LookupError::StillLoading {
                name: name.to_string(),
                waited_ms: self.settings().limits.timeout_ms,
                files: self.pending_loads().iter().map(|p| p.file.display().to_string()).collect(),
            }),
            found => found,
        }
    }

    /// Rules configured for tools that are not registered (worth a
    /// warning). Loads nothing.
    pub fn rules_for_unknown_tools(&self) -> Vec<String> {
        let rules = self.inner.rules.read_unpoisoned();
        let tools = self.inner.tools.read();
        rules.tools_named().filter(|t| !tools.contains_key(*t)).map(str::to_string).collect()
    }

    /// The grants a tool gets: built-ins their declared needs over the
    /// working directories and read roots; plugins only what
    /// `[grants.NAME]` allows.
    /// A built-in's `[grants.NAME]` table contributes only its `env`.
    pub fn grants_for(&self, info: &ToolInfo) -> Grants {
        let configured = self.inner.settings.grants.get(&info.name).cloned().unwrap_or_default();
        let policy = match info.origin {
            Origin::Builtin => Policy { env: configured.env, ..Policy::builtin() },
            Origin::File(_) | Origin::Native => configured,
            // Runs outside toolhost: nothing of a call's grants reaches it.
            Origin::Mcp(_) => Policy::default(),
        };
        let read_roots = match info.origin {
            Origin::Builtin => self.inner.settings.read_roots.clone(),
            Origin::File(_) | Origin::Native | Origin::Mcp(_) => Vec::new(),
        };
        let builtin = info.origin == Origin::Builtin;
        Grants::intersect(&info.name, &info.capabilities, &policy, &self.inner.working_dirs, &read_roots, builtin)
    }

    /// The grants `loaded` uses in `phase`, computed once per loaded tool.
    pub(crate) fn phase_grants(&self, loaded: &LoadedTool, phase: Phase) -> Arc<Grants> {
        loaded.grants.get_or_init(|| PhaseGrants::new(self.grants_for(&loaded.info))).get(phase)
    }

    /// The permission context for `tool` in `mode`: the working directories
    /// (given and symlink-resolved), the active backend's cwd and home (what
    /// relative paths and `~` mean where the call would run) and the tool's
    /// settings.
    pub fn permission_context(&self, tool: &str, mode: Mode) -> permission::Context {
        permission::Context {
            mode,
            working_dirs: self.inner.context_dirs.clone(),
            cwd: self.inner.backend.cwd(),
            home: self.inner.backend.home(),
            tool_config: self.tool_config(tool),
            protected: self.inner.protected.clone(),
        }
    }

    /// The file "allow and remember" saves rules to, if any (absolute when
    /// the host was built through the CLI).
    pub fn settings_path(&self) -> Option<&Path> {
        self.inner.settings_path.as_deref()
    }

    /// toolhost's own files: every call that names one is denied and the
    /// local backend refuses them to every tool.
    pub fn protected_paths(&self) -> &crate::protected::ProtectedPaths {
        &self.inner.protected
    }

    /// A middleware's own settings (`[middleware.NAME]`) as JSON text;
    /// `{}` when none.
    pub fn middleware_config(&self, name: &str) -> String {
        self.inner.middleware_configs.get(name).cloned().unwrap_or_else(|| "{}".to_string())
    }

    /// A tool's own settings (`[tools.NAME]`) as JSON; `{}` when none.
    pub fn tool_config(&self, tool: &str) -> serde_json::Value {
        self.inner.tool_configs.get(tool).cloned().unwrap_or_else(|| serde_json::json!({}))
    }

    /// The configured mode.
    pub fn mode(&self) -> Mode {
        self.inner.settings.permissions.mode
    }

    /// The rules in force (configured plus remembered).
    pub fn rules(&self) -> Arc<RuleSet> {
        self.inner.rules.read_unpoisoned().clone()
    }

    /// Adds a rule for the rest of this host's life and, with a settings
    /// path, saves it there (creating the file when missing). When saving
    /// fails the rule still holds in this host, and the error names the
    /// rule, the file, the cause and how to add the rule by hand.
    pub fn remember_rule(&self, rule: Rule) -> Result<()> {
        {
            let mut rules = self.inner.rules.write_unpoisoned();
            let mut updated = RuleSet::clone(&rules);
            updated.add(rule.clone());
            *rules = Arc::new(updated);
        }
        let Some(path) = &self.inner.settings_path else { return Ok(()) };
        permission::settings::remember_rule(path, &rule).map_err(|e| {
            anyhow::anyhow!(
                "could not save the rule `{rule}` to {}: {e:#}. It holds until this toolhost exits; to keep it, \
                 add it by hand under [permissions] in a settings file: {} = [\"{rule}\"] (or pass --{} '{rule}')",
                path.display(),
                rule.behavior,
                rule.behavior
            )
        })
    }

    /// The active backend.
    pub(crate) fn backend(&self) -> Arc<dyn Backend> {
        self.inner.backend.clone()
    }

    /// The working directories.
    pub(crate) fn working_dirs(&self) -> &[PathBuf] {
        &self.inner.working_dirs
    }

    /// The middleware registry.
    pub(crate) fn middleware_registry(&self) -> &MiddlewareRegistry {
        &self.inner.middleware
    }
}

/// The lazy registry entry of `builtin`: its first use loads it and, when
/// that gave baseline code, queues its optimisation on `host`.
fn builtin_entry(builtin: &'static Builtin, host: Weak<Inner>) -> Entry<LoadedTool> {
    Entry::lazy(
        Origin::Builtin,
        Box::new(move || builtin.info()),
        Box::new(move |runtime| {
            let host = host.clone();
            Box::pin(async move {
                let (tool, tier) = load_builtin_tiered(runtime, builtin).await?;
                if tier == Tier::Baseline
                    && let Some(inner) = host.upgrade()
                {
                    Toolhost { inner }.queue_optimise_builtin(builtin);
                }
                Ok(tool)
            })
        }),
    )
}

/// The working directories as a permission context lists them: each as
/// given, then its symlink-resolved form when that differs.
fn context_dirs(working_dirs: &[PathBuf]) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for dir in working_dirs {
        let given = dir.display().to_string();
        if !dirs.contains(&given) {
            dirs.push(given);
        }
        if let Ok(real) = dir.canonicalize() {
            let real = real.display().to_string();
            if !dirs.contains(&real) {
                dirs.push(real);
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests;
