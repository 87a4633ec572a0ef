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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::{Context as _, Result, bail};
use tokio::sync::{mpsc, oneshot};

use crate::backend::Backend;
use crate::backend::local::LocalBackend;
use crate::capability::{Grants, Phase, PhaseGrants, Policy};
use crate::events::{CallEvent, CallStream, ExternalCall, PermissionAnswer, PermissionRequest};
use crate::function::CallableTool;
use crate::permission::{self, Behavior, Decision, Mode, PolicyTool as _, Rule, RuleSet};
use crate::registry::ToolEntry;
use crate::response::{Chunk, ResultState, ToolResponse};
use crate::runtime::bindings::wit_types::ToolError;
use crate::runtime::{CompileObserver, Runtime, RuntimeOptions};
use crate::settings::Settings;
use crate::state::AgentState;
use crate::tool::{LoadError, LoadedTool, LookupError, Origin, ToolInfo, load_component, validate_input};

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
}

impl CallRequest {
    /// A call of `tool` with `input` (JSON text).
    pub fn new(tool: impl Into<String>, input: impl Into<String>) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self { id: format!("call_{n}"), tool: tool.into(), input: input.into(), mode: None, session: None }
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
    observer: Option<CompileObserver>,
    always_optimise: bool,
}

impl ToolhostBuilder {
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

    /// Tells `observer` of every compile that does not come from the cache
    /// (a front end on a terminal says what a first run is waiting for).
    pub fn compile_observer(mut self, observer: CompileObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Compiles every built-in's first use with the optimising compiler
    /// ([`RuntimeOptions::always_optimise`]). A one-shot process (the CLI)
    /// wants the default, baseline code for a first use on an empty cache; a
    /// long-running host that keeps its tools loaded may prefer to pay the
    /// optimising compile once rather than run baseline code until restarted.
    pub fn always_optimise(mut self, yes: bool) -> Self {
        self.always_optimise = yes;
        self
    }

    /// Starts the runtime, registers the built-ins (each loads on first
    /// use) and loads the configured plugins and middleware.
    pub async fn build(self) -> Result<Toolhost> {
        let settings = self.settings;
        let working_dirs = settings.working_dirs()?;
        for dir in &working_dirs {
            if !dir.is_dir() {
                bail!("working directory {} does not exist or is not a directory", dir.display());
            }
        }
        let rules = settings.permissions.rule_set().context("reading [permissions] rules")?;
        for (name, policy) in &settings.grants {
            policy.validate(name).map_err(anyhow::Error::msg)?;
        }
        let runtime = Runtime::new(&RuntimeOptions {
            cache_dir: Some(settings.cache_dir()),
            limits: settings.limits,
            observer: self.observer,
            always_optimise: self.always_optimise,
            ..Default::default()
        })?;
        let home = std::env::var("HOME").unwrap_or_else(|_| "/".into());
        let cwd = working_dirs[0].clone();
        let protected = Arc::new(settings.protected_paths(self.settings_path.as_deref()));
        let backend = match self.backend {
            Some(b) => b,
            None => Arc::new(LocalBackend::new(cwd.clone(), PathBuf::from(&home)).with_protected(protected.clone())),
        };
        let context_dirs = context_dirs(&working_dirs);
        let tool_configs = settings.tools.keys().map(|name| (name.clone(), settings.tool_config(name))).collect();
        let host = Toolhost {
            inner: Arc::new(Inner {
                runtime,
                tools: RwLock::new(BTreeMap::new()),
                rules: RwLock::new(Arc::new(rules)),
                backend,
                context_dirs,
                tool_configs,
                working_dirs,
                home,
                state: Arc::new(AgentState::new()),
                settings_path: self.settings_path,
                protected,
                settings,
                middleware: Default::default(),
            }),
        };
        if host.inner.settings.builtins {
            host.register_builtins()?;
        }
        for plugin in host.inner.settings.plugins.clone() {
            host.load_file(&plugin).await?;
        }
        for dir in host.inner.settings.plugin_dirs.clone() {
            host.load_dir(&dir).await?;
        }
        host.load_configured_middleware().await?;
        Ok(host)
    }
}

struct Inner {
    runtime: Runtime,
    /// Every registered tool by name, loaded or not yet loaded. Readers
    /// clone an entry out and drop the lock before loading it.
    tools: RwLock<BTreeMap<String, ToolEntry>>,
    /// Replaced (not mutated) when a rule is remembered, so a call takes a
    /// cheap snapshot.
    rules: RwLock<Arc<RuleSet>>,
    backend: Arc<dyn Backend>,
    /// The working directories as the permission context shows them (given
    /// and symlink-resolved), computed once: they do not change.
    context_dirs: Vec<String>,
    /// Each configured tool's settings as JSON, converted once.
    tool_configs: BTreeMap<String, serde_json::Value>,
    working_dirs: Vec<PathBuf>,
    home: String,
    state: Arc<AgentState>,
    settings_path: Option<PathBuf>,
    /// toolhost's own files, denied to every call that names them.
    protected: Arc<crate::protected::ProtectedPaths>,
    settings: Settings,
    /// Loaded middleware and which tools it is attached to.
    middleware: crate::middleware::Registry,
}

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

    /// The runtime (engine, pooling, cache).
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// The host's own agent state (used by calls without a session).
    pub fn state(&self) -> &Arc<AgentState> {
        &self.inner.state
    }

    /// Registers every built-in under its tool name, none of them loaded.
    fn register_builtins(&self) -> Result<(), LoadError> {
        for builtin in crate::builtin::BUILTINS {
            let label = format!("built-in tool {}", builtin.name);
            self.register(builtin.name, ToolEntry::builtin(builtin), &label)?;
        }
        Ok(())
    }

    /// Loads a plugin from a `.wasm` file.
    pub async fn load_file(&self, path: &Path) -> Result<ToolInfo> {
        let bytes = std::fs::read(path).with_context(|| format!("reading plugin {}", path.display()))?;
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(self.insert(&bytes, Origin::File(abs), &path.display().to_string()).await?)
    }

    /// Loads every `.wasm` file in a directory (sorted by name).
    pub async fn load_dir(&self, dir: &Path) -> Result<Vec<ToolInfo>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("reading plugin directory {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
            .collect();
        files.sort();
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
        self.register(&info.name, ToolEntry::Loaded(Arc::new(tool)), label)?;
        Ok(info)
    }

    /// Registers `entry` as `name`, unless that name is taken (by a loaded
    /// tool or a not-yet-loaded one: a name conflict never loads anything).
    fn register(&self, name: &str, entry: ToolEntry, label: &str) -> Result<(), LoadError> {
        let mut tools = self.inner.tools.write().unwrap_or_else(|p| p.into_inner());
        // Lock order: tools, then middleware (as in `insert_middleware`).
        if self.inner.middleware.has(name) {
            return Err(LoadError::NameClash {
                source_name: label.to_string(),
                name: name.to_string(),
                loading: "tool",
                existing: "middleware",
            });
        }
        if let Some(existing) = tools.get(name) {
            return Err(LoadError::NameTaken {
                source_name: label.to_string(),
                name: name.to_string(),
                existing: match existing.origin() {
                    Origin::Builtin => "the built-in tools".to_string(),
                    Origin::File(p) => p.display().to_string(),
                    Origin::Native => "a function registered from Rust".to_string(),
                },
            });
        }
        tools.insert(name.to_string(), entry);
        Ok(())
    }

    /// Adds a middleware layer under its name unless a tool or another
    /// middleware has it (tools and middleware share `[grants.NAME]`).
    pub(crate) fn insert_middleware(
        &self,
        insert: impl FnOnce() -> Result<crate::middleware::MiddlewareInfo, LoadError>,
        name: &str,
        label: &str,
    ) -> Result<crate::middleware::MiddlewareInfo, LoadError> {
        // Held while inserting, so no tool of that name can appear meanwhile.
        let tools = self.inner.tools.read().unwrap_or_else(|p| p.into_inner());
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
        self.inner.tools.write().unwrap_or_else(|p| p.into_inner()).remove(name).is_some()
    }

    /// Every registered tool's name, sorted, without loading any of them.
    pub fn names(&self) -> Vec<String> {
        self.inner.tools.read().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect()
    }

    /// Whether a tool named `name` is registered (loaded or not). Loads
    /// nothing.
    pub fn is_registered(&self, name: &str) -> bool {
        self.inner.tools.read().unwrap_or_else(|p| p.into_inner()).contains_key(name)
    }

    /// Where the tool named `name` comes from (`None` when it is not
    /// registered). Loads nothing.
    pub fn origin(&self, name: &str) -> Option<Origin> {
        self.inner.tools.read().unwrap_or_else(|p| p.into_inner()).get(name).map(|entry| entry.origin().clone())
    }

    /// Whether `name` is registered *and loaded*. A built-in is registered
    /// at start-up but loaded only when first needed (a call, a check, an
    /// instance; not [`Toolhost::describe`] or [`Toolhost::list`]); plugins and
    /// function tools are loaded when registered. Loads nothing: this is how
    /// to observe (and test) that start-up loaded no built-in.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.inner.tools.read().unwrap_or_else(|p| p.into_inner()).get(name).is_some_and(ToolEntry::is_loaded)
    }

    /// The built-ins loaded in this host whose optimised code is not in the
    /// compile cache (their first use ran baseline code): worth
    /// [`crate::builtin::optimise`], here in the background or by another
    /// process, so that later processes start on optimised code.
    pub fn builtins_to_optimise(&self) -> Vec<&'static str> {
        let tools = self.inner.tools.read().unwrap_or_else(|p| p.into_inner());
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
        let entries: Vec<ToolEntry> =
            self.inner.tools.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        entries.iter().map(ToolEntry::info).collect()
    }

    /// One tool's metadata. Loads nothing (a built-in answers from its
    /// embedded metadata, like [`Toolhost::list`]).
    pub async fn describe(&self, name: &str) -> Result<ToolInfo, LookupError> {
        Ok(self.entry(name)?.info()?)
    }

    /// The loaded tool named `name`, loading it on first use.
    pub(crate) async fn tool(&self, name: &str) -> Result<Arc<LoadedTool>, LookupError> {
        Ok(self.entry(name)?.get(&self.inner.runtime).await?)
    }

    /// The registry entry named `name`.
    fn entry(&self, name: &str) -> Result<ToolEntry, LookupError> {
        self.inner
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| LookupError::Unknown(name.to_string()))
    }

    /// Rules configured for tools that are not registered (worth a
    /// warning). Loads nothing.
    pub fn rules_for_unknown_tools(&self) -> Vec<String> {
        let rules = self.inner.rules.read().unwrap_or_else(|p| p.into_inner());
        let tools = self.inner.tools.read().unwrap_or_else(|p| p.into_inner());
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
        };
        let read_roots = match info.origin {
            Origin::Builtin => self.inner.settings.read_roots.clone(),
            Origin::File(_) | Origin::Native => Vec::new(),
        };
        let builtin = info.origin == Origin::Builtin;
        Grants::intersect(&info.name, &info.capabilities, &policy, &self.inner.working_dirs, &read_roots, builtin)
    }

    /// The grants `loaded` uses in `phase`, computed once per loaded tool.
    pub(crate) fn phase_grants(&self, loaded: &LoadedTool, phase: Phase) -> Arc<Grants> {
        loaded.grants.get_or_init(|| PhaseGrants::new(self.grants_for(&loaded.info))).get(phase)
    }

    /// The permission context for `tool` in `mode`: the working directories
    /// (given and symlink-resolved), the backend cwd, home and the tool's
    /// settings.
    pub fn permission_context(&self, tool: &str, mode: Mode) -> permission::Context {
        permission::Context {
            mode,
            working_dirs: self.inner.context_dirs.clone(),
            cwd: self.inner.backend.cwd(),
            home: self.inner.home.clone(),
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
        self.inner.rules.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Adds a rule for the rest of this host's life and, with a settings
    /// path, saves it there (creating the file when missing). When saving
    /// fails the rule still holds in this host, and the error names the
    /// rule, the file, the cause and how to add the rule by hand.
    pub fn remember_rule(&self, rule: Rule) -> Result<()> {
        {
            let mut rules = self.inner.rules.write().unwrap_or_else(|p| p.into_inner());
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

    /// A fresh instance of `tool` (loading the tool on first use) with its
    /// full grants, for running `call` once a decision allowed it. For
    /// permission checks use [`Toolhost::decision_instance`].
    pub async fn instantiate(
        &self,
        tool: &str,
        session: Option<Arc<AgentState>>,
        output: mpsc::Sender<Chunk>,
    ) -> Result<CallableTool> {
        let loaded = self.tool(tool).await?;
        self.instantiate_loaded(&loaded, session, output, Phase::Call).await
    }

    /// A fresh instance of `tool` with no capability at all (no files, no
    /// processes, no agent state, output discarded), for the permission
    /// exports. It may be reused for many checks.
    pub async fn decision_instance(&self, tool: &str) -> Result<CallableTool> {
        let loaded = self.tool(tool).await?;
        let (tx, _rx) = mpsc::channel(1);
        self.instantiate_loaded(&loaded, None, tx, Phase::Decide).await
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
    pub(crate) fn middleware_registry(&self) -> &crate::middleware::Registry {
        &self.inner.middleware
    }

    /// Evaluates the permission engine for one call without running it.
    pub async fn check(
        &self,
        tool: &str,
        input: &serde_json::Value,
        ctx: &permission::Context,
        rules: &RuleSet,
    ) -> Result<Decision> {
        let loaded = self.tool(tool).await?;
        validate_input(&loaded, input).map_err(anyhow::Error::msg)?;
        let (tx, _rx) = mpsc::channel(1);
        let mut instance = self.instantiate_loaded(&loaded, None, tx, Phase::Decide).await?;
        Ok(permission::evaluate(&mut instance, &input.to_string(), ctx, rules).await)
    }

    /// Starts a call and returns its event stream.
    ///
    /// The call starts when the stream is first polled ([`CallStream::next`]
    /// runs it as a task; [`CallStream::finish`] runs it in the caller's
    /// task, which saves a thread hop per event).
    pub fn call(&self, request: CallRequest) -> CallStream {
        let (tx, rx) = mpsc::channel(64);
        let host = self.clone();
        let run = async move {
            let id = request.id.clone();
            let response = host.run_call(request, &tx).await;
            if let Some(mut response) = response {
                response.id = id;
                let _ = tx.send(CallEvent::Finished(response)).await;
            }
        };
        CallStream { rx, pending: Some(Box::pin(run)) }
    }

    /// Runs one call end to end; `None` when it stopped for external execution.
    async fn run_call(&self, request: CallRequest, events: &mpsc::Sender<CallEvent>) -> Option<ToolResponse> {
        // Refusals before any guest code runs still stream as a chunk, so a
        // caller that only prints chunks shows them.
        let fail = async |text: String| {
            let chunk = Chunk::text(text, ResultState::Error);
            let _ = events.send(CallEvent::Chunk(chunk.clone())).await;
            Some(ToolResponse::from_chunk(&request.id, chunk))
        };
        let loaded = match self.tool(&request.tool).await {
            Ok(loaded) => loaded,
            Err(LookupError::Unknown(_)) => {
                return fail(format!("ToolNotFoundError: {}", unknown_tool(&request.tool))).await;
            }
            Err(LookupError::Load(e)) => return fail(format!("could not load tool '{}': {e}", request.tool)).await,
        };
        let input: serde_json::Value = match serde_json::from_str(&request.input) {
            Ok(v) => v,
            Err(e) => return fail(format!("Input for tool '{}' is not valid JSON: {e}", request.tool)).await,
        };
        if let Err(message) = validate_input(&loaded, &input) {
            return fail(message).await;
        }
        let input_text = input.to_string();
        // The decision runs in an instance with no capability; what it
        // emits goes nowhere.
        let (discard, _) = mpsc::channel::<Chunk>(1);
        let mut decider = match self.instantiate_loaded(&loaded, None, discard, Phase::Decide).await {
            Ok(i) => i,
            Err(e) => return fail(format!("could not start tool '{}': {e:#}", request.tool)).await,
        };

        let mode = request.mode.unwrap_or(self.mode());
        let permit = Permit { call_id: request.id.clone(), mode, events: events.clone() };
        let phase = match self.decide(&mut decider, &permit, &input, &input_text).await {
            Verdict::Allow(phase) => phase,
            Verdict::Deny(decision) => return Some(denied(&request.id, decision.message)),
            Verdict::UserDenied(_) => {
                let text = format!(
                    "<system-reminder>The execution of tool \"{}\" is denied by user!</system-reminder>",
                    request.tool
                );
                return Some(denied(&request.id, text));
            }
            Verdict::Gone => return None,
        };

        if loaded.info.external {
            let call = ExternalCall {
                kind: "REQUIRE_EXTERNAL_EXECUTION".into(),
                call_id: request.id.clone(),
                tool: request.tool.clone(),
                input,
                result_metadata_schema: loaded.info.result_metadata_schema.clone(),
            };
            let _ = events.send(CallEvent::ExternalExecution(call)).await;
            return None;
        }

        drop(decider);
        // `call` gets the grants, in a fresh instance: read-only ones when
        // the tool's own read-only claim is what allowed the call.
        let (out_tx, mut out_rx) = mpsc::channel::<Chunk>(32);
        let instance = match self.instantiate_loaded(&loaded, request.session.clone(), out_tx.clone(), phase).await {
            Ok(i) => i,
            Err(e) => return fail(format!("could not start tool '{}': {e:#}", request.tool)).await,
        };
        // The middleware chain attached to the tool (if any) wraps `call`.
        let chain = crate::middleware::run_chain(
            self.clone(),
            loaded.clone(),
            instance,
            input,
            input_text,
            request.session.clone(),
            permit,
            out_tx,
            phase,
        );
        let mut response = ToolResponse::new(&request.id);
        let forward = async {
            while let Some(chunk) = out_rx.recv().await {
                response.append(chunk.clone());
                let _ = events.send(CallEvent::Chunk(chunk)).await;
            }
        };
        // Guest and forwarding share this task: a chunk reaches the caller
        // without a hop through another worker thread. The channel closes
        // when the chain drops its instances.
        let (outcome, ()) = tokio::join!(chain, forward);
        let closing = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(tool_error)) => Some(tool_error_text(&tool_error)),
            Err(failure) => Some(format!("Error: {failure}")),
        };
        if let Some(text) = closing {
            let chunk = Chunk::text(text, ResultState::Error);
            response.append(chunk.clone());
            let _ = events.send(CallEvent::Chunk(chunk)).await;
        }
        Some(response)
    }

    /// The permission step of a call: runs the whole engine
    /// ([`permission::evaluate`]) for `input` on `instance` with the call's
    /// mode, the rules in force and the tool's context, and sends an ask to
    /// the caller as a [`CallEvent::PermissionRequest`] (an unanswered or
    /// dropped request is a denial). The first decision of a call and the
    /// re-check of an input a middleware rewrote both go through here.
    pub(crate) async fn decide(
        &self,
        instance: &mut CallableTool,
        permit: &Permit,
        input: &serde_json::Value,
        input_text: &str,
    ) -> Verdict {
        let tool = instance.name().to_owned();
        let ctx = self.permission_context(&tool, permit.mode);
        let rules = self.rules();
        let decision = permission::evaluate(instance, input_text, &ctx, &rules).await;
        // A call allowed because the tool said it only reads runs with
        // read-only grants: the claim is not believed any further.
        let phase = if decision.read_only { Phase::ReadOnlyCall } else { Phase::Call };
        match decision.behavior {
            Behavior::Allow => Verdict::Allow(phase),
            Behavior::Deny => Verdict::Deny(Box::new(decision)),
            Behavior::Ask | Behavior::Passthrough => {
                let (reply, answer) = oneshot::channel();
                let asked = decision.message.clone();
                let prompt = PermissionRequest {
                    call_id: permit.call_id.clone(),
                    tool: tool.clone(),
                    input: input.clone(),
                    decision,
                    reply,
                };
                if permit.events.send(CallEvent::PermissionRequest(prompt)).await.is_err() {
                    return Verdict::Gone;
                }
                match answer.await.unwrap_or(PermissionAnswer::Deny) {
                    PermissionAnswer::AllowOnce => Verdict::Allow(phase),
                    PermissionAnswer::AllowAndRemember(rules) => {
                        for rule in rules {
                            if let Err(e) = self.remember_rule(rule.clone()) {
                                let failed = CallEvent::RememberFailed { rule, message: format!("{e:#}") };
                                let _ = permit.events.send(failed).await;
                            }
                        }
                        Verdict::Allow(phase)
                    }
                    PermissionAnswer::Deny => Verdict::UserDenied(asked),
                }
            }
        }
    }

    /// Turns the result an external executor reports into the call's
    /// response, validating its metadata against the tool's schema.
    pub fn complete_external(&self, call: &ExternalCall, result: ExternalResult) -> Result<ToolResponse> {
        if let Some(schema) = &call.result_metadata_schema {
            let validator = jsonschema::validator_for(schema)
                .map_err(|e| anyhow::anyhow!("the tool's result schema is invalid: {e}"))?;
            let metadata = serde_json::Value::Object(result.metadata.clone());
            if let Some(e) = validator.iter_errors(&metadata).next() {
                bail!(
                    "the result metadata for {} does not match its schema at `{}`: {e}",
                    call.tool,
                    e.instance_path()
                );
            }
        }
        let mut chunk = Chunk::text(result.output, result.state.unwrap_or(ResultState::Success));
        chunk.metadata = result.metadata;
        Ok(ToolResponse::from_chunk(call.call_id.clone(), chunk))
    }
}

/// What a call's permission step needs to decide (and ask) again later in
/// the call: a middleware's rewritten input is decided like the original.
#[derive(Clone)]
pub(crate) struct Permit {
    /// The call id, for the ask.
    pub(crate) call_id: String,
    /// The call's mode.
    pub(crate) mode: Mode,
    /// Where an ask goes (the call's event stream).
    pub(crate) events: mpsc::Sender<CallEvent>,
}

/// The outcome of [`Toolhost::decide`].
pub(crate) enum Verdict {
    /// Run it, with the grants of this phase.
    Allow(Phase),
    /// Refused by the engine (the decision says why).
    Deny(Box<Decision>),
    /// The caller answered an ask with a denial (or could not be asked);
    /// the engine's message of the ask.
    UserDenied(String),
    /// The caller went away before answering an ask.
    Gone,
}

fn unknown_tool(name: &str) -> String {
    LookupError::Unknown(name.to_string()).to_string()
}

fn denied(id: &str, message: String) -> ToolResponse {
    ToolResponse::from_chunk(id, Chunk::text(message, ResultState::Denied))
}

/// The text of a typed tool error, for the model.
pub fn tool_error_text(e: &ToolError) -> String {
    match e {
        ToolError::InvalidInput(m) => format!("Error: invalid input: {m}"),
        ToolError::Denied(m) => format!("Error: {m}"),
        ToolError::NotFound(m) => format!("Error: not found: {m}"),
        ToolError::Timeout(m) => format!("Error: timed out: {m}"),
        ToolError::Io(m) => format!("Error: {m}"),
        ToolError::Unsupported(m) => format!("Error: unsupported: {m}"),
        ToolError::Internal(m) => format!("Error: internal error in the tool: {m}"),
    }
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
