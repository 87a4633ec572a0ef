//! The catalog service ([`Catalog`]): what is loaded. Every registered tool
//! (loaded or not yet), the middleware and where it is attached, the
//! plugins loading in the background (`loading.rs`), the lock file and the
//! pins a component file needs (`pinned.rs`), the tool groups and skills.
//! It runs no call and decides nothing: the pipeline asks it for a tool,
//! the policy for the grants.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock, Weak};
use std::time::Instant;

use super::loading::Loads;
use crate::catalog::builtin::Builtin;
use crate::catalog::component::{ComponentKind, check_world_of};
use crate::catalog::group::ToolGroups;
use crate::catalog::registry::{Entry, Registry};
use crate::catalog::skill::Skills;
use crate::catalog::tool::{LoadError, LookupError, Origin, ToolInfo};
use crate::execution::component::{load_builtin_tiered, load_compiled, load_component};
use crate::execution::loaded::LoadedTool;
use crate::execution::middleware::MiddlewareInfo;
use crate::execution::middleware::registry::Registry as MiddlewareRegistry;
use crate::lockfile::LockFile;
use crate::runtime::{CacheOutcome, Runtime, Tier};
use crate::settings::Settings;

/// What a host has loaded, and loads: the tools by name, the middleware,
/// the background loads, the lock file, the groups and the skills. A
/// [`crate::Toolhost`] holds one ([`crate::Toolhost::catalog`]).
///
/// Registering never runs guest code with a grant: a component is asked
/// for its metadata in an instance with none, and a name already taken (by
/// a tool or a middleware, which share `[grants.NAME]`) is refused before
/// anything is loaded.
pub struct Catalog {
    /// Itself, for the background loads it starts (they end with it).
    me: Weak<Catalog>,
    pub(super) settings: Arc<Settings>,
    pub(super) runtime: Runtime,
    /// Every registered tool by name, loaded or not yet loaded.
    pub(super) tools: Registry<LoadedTool>,
    /// Loaded middleware and which tools it is attached to.
    pub(super) middleware: MiddlewareRegistry,
    /// Plugins loading in the background.
    pub(super) loads: Loads,
    /// The size from which a plugin not in the cache loads in the background.
    pub(super) background_from: u64,
    /// Whether a built-in first used on baseline code is optimised in the
    /// background ([`crate::ToolhostBuilder::optimise_builtins_in_background`]).
    pub(super) optimise_builtins: bool,
    /// `toolhost.lock` as last read (`None`: there is none), and where.
    pub(super) lock: RwLock<Option<Arc<LockFile>>>,
    pub(super) lock_path: PathBuf,
    /// Where tools may write (real paths): a component file reached there
    /// loads only when pinned (`pinned.rs`).
    pub(super) writable_roots: Vec<PathBuf>,
    /// The tool groups of `[groups.NAME]`.
    pub(super) groups: Arc<ToolGroups>,
    /// The skills of `[skills] dirs`.
    pub(super) skills: Arc<Skills>,
    /// The `oci://` entries of `plugins` as written (the settings hold
    /// their links in the content store): `serve --watch` polls their tags.
    pub(super) oci_entries: Vec<String>,
    /// What went wrong starting the upstream servers, once they were.
    pub(super) upstream_problems: OnceLock<Vec<String>>,
}

/// What a [`Catalog`] is made of, as [`crate::ToolhostBuilder::build`]
/// resolved it from the settings.
pub(super) struct CatalogParts {
    pub(super) settings: Arc<Settings>,
    pub(super) runtime: Runtime,
    pub(super) background_from: u64,
    pub(super) optimise_builtins: bool,
    pub(super) lock: Option<Arc<LockFile>>,
    pub(super) lock_path: PathBuf,
    pub(super) writable_roots: Vec<PathBuf>,
    pub(super) groups: Arc<ToolGroups>,
    pub(super) skills: Arc<Skills>,
    pub(super) oci_entries: Vec<String>,
}

impl Catalog {
    /// An empty catalog (nothing registered).
    pub(super) fn new(parts: CatalogParts) -> Arc<Self> {
        Arc::new_cyclic(|me| Catalog {
            me: me.clone(),
            settings: parts.settings,
            runtime: parts.runtime,
            tools: Registry::default(),
            middleware: MiddlewareRegistry::default(),
            loads: Loads::default(),
            background_from: parts.background_from,
            optimise_builtins: parts.optimise_builtins,
            lock: RwLock::new(parts.lock),
            lock_path: parts.lock_path,
            writable_roots: parts.writable_roots,
            groups: parts.groups,
            skills: parts.skills,
            oci_entries: parts.oci_entries,
            upstream_problems: OnceLock::new(),
        })
    }

    /// A weak handle on this catalog, for work that outlives a borrow of
    /// it (background loads end when the catalog does).
    pub(super) fn me(&self) -> Weak<Catalog> {
        self.me.clone()
    }

    /// The runtime (engine, pooling, cache) the tools are compiled with.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Registers every built-in under its tool name, none of them loaded.
    pub(super) fn register_builtins(&self) -> Result<(), LoadError> {
        for builtin in crate::catalog::builtin::BUILTINS {
            let label = format!("built-in tool {}", builtin.name);
            self.register(builtin.name, builtin_entry(builtin, self.me()), &label)?;
        }
        Ok(())
    }

    /// Loads a plugin from a `.wasm` file, compiling it now if its compiled
    /// code is not cached (see [`Catalog::start_loading_file`] for a load
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
    /// (`None`; see [`Catalog::pending_loads`]). Outside a tokio runtime it
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
        if let Some((component, tier)) = self.runtime.cached(&bytes, first_use) {
            let compiled = (component, CacheOutcome::Hit, tier);
            let origin = Origin::File(abs.clone());
            let report = load_compiled(&self.runtime, compiled, origin, &label, sha256.clone()).await?;
            let info = self.insert_loaded(report.tool, &label)?;
            // Baseline code an earlier first load left: optimise it now.
            if tier == Tier::Baseline {
                self.queue_optimise(&info.name, abs, sha256, bytes.into());
            }
            return Ok(Some(info));
        }
        let large = bytes.len() as u64 >= self.background_from;
        if large && self.queue_load(abs.clone(), label.clone(), sha256, bytes.clone()) {
            return Ok(None);
        }
        Ok(Some(self.insert(&bytes, Origin::File(abs), &label).await?))
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
        let report = load_component(&self.runtime, bytes, origin, label).await?;
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
    pub(super) fn register(&self, name: &str, entry: Entry<LoadedTool>, label: &str) -> Result<(), LoadError> {
        // Lock order: tools, then middleware (as in `insert_middleware`).
        self.tools.insert(name, entry, label, || {
            self.middleware.has(name).then(|| LoadError::NameClash {
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
        insert: impl FnOnce() -> Result<MiddlewareInfo, LoadError>,
        name: &str,
        label: &str,
    ) -> Result<MiddlewareInfo, LoadError> {
        // Held while inserting, so no tool of that name can appear meanwhile.
        let tools = self.tools.read();
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
        self.tools.remove(name)
    }

    /// Tells of every change to the set of tools: the receiver's value (a
    /// generation number) moves on each registration, replacement and
    /// unload after this call. Only the newest generation is kept: a reader
    /// that falls behind sees one change, then lists again. Loads nothing.
    pub fn tool_list_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tools.subscribe()
    }

    /// Every registered tool's name, sorted, without loading any of them.
    pub fn names(&self) -> Vec<String> {
        self.tools.read().keys().cloned().collect()
    }

    /// Whether a tool named `name` is registered (loaded or not). Loads
    /// nothing.
    pub fn is_registered(&self, name: &str) -> bool {
        self.tools.read().contains_key(name)
    }

    /// Where the tool named `name` comes from (`None` when it is not
    /// registered). Loads nothing.
    pub fn origin(&self, name: &str) -> Option<Origin> {
        self.tools.read().get(name).map(|entry| entry.origin().clone())
    }

    /// Whether `name` is registered *and loaded*. A built-in is registered
    /// at start-up but loaded only when first needed. Loads nothing.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.tools.read().get(name).is_some_and(Entry::is_loaded)
    }

    /// Which compiler's code the tool named `name` runs now: `None` when it
    /// is not loaded or runs no compiled component.
    pub fn code_tier(&self, name: &str) -> Option<Tier> {
        self.tools.entry(name)?.loaded()?.kind.tier()
    }

    /// The built-ins loaded here whose optimised code is not in the compile
    /// cache (their first use ran baseline code).
    pub fn builtins_to_optimise(&self) -> Vec<&'static str> {
        let tools = self.tools.read();
        crate::catalog::builtin::BUILTINS
            .iter()
            .filter(|b| tools.get(b.name).is_some_and(|e| e.is_loaded() && *e.origin() == Origin::Builtin))
            .filter(|b| !self.runtime.is_optimised_cached(b.bytes))
            .map(|b| b.name)
            .collect()
    }

    /// Every tool's metadata, sorted by name. Loads nothing (a built-in not
    /// loaded yet answers from the metadata embedded beside it). When one
    /// tool's metadata is unusable, the error is that of the first such
    /// tool by name.
    pub fn list(&self) -> Result<Vec<ToolInfo>, LoadError> {
        self.tools.entries().iter().map(Entry::info).collect()
    }

    /// One tool's metadata. Loads nothing.
    pub fn describe(&self, name: &str) -> Result<ToolInfo, LookupError> {
        self.tools.info(name)
    }

    /// The loaded tool named `name`, loading it on first use. A name that
    /// is not registered while plugins load in the background may be one of
    /// theirs: it waits for them, at most the call timeout
    /// (`limits.timeout_ms`), before it is unknown.
    pub(crate) async fn tool(&self, name: &str) -> Result<Arc<LoadedTool>, LookupError> {
        match self.tools.get(name, &self.runtime).await {
            Err(LookupError::Unknown(_)) if !self.pending_loads().is_empty() => {}
            found => return found,
        }
        let deadline = Instant::now() + self.settings.limits.timeout();
        self.wait_for_name(name, deadline).await;
        match self.tools.get(name, &self.runtime).await {
            Err(LookupError::Unknown(_)) if !self.pending_loads().is_empty() => Err(LookupError::StillLoading {
                name: name.to_string(),
                waited_ms: self.settings.limits.timeout_ms,
                files: self.pending_loads().iter().map(|p| p.file.display().to_string()).collect(),
            }),
            found => found,
        }
    }

    /// Which compiler a plugin loading in the background gets when its
    /// optimised code is not cached: the baseline one unless the runtime
    /// always optimises (its optimised code follows, see `loading.rs`).
    pub(crate) fn plugin_first_use(&self) -> Tier {
        if self.runtime.always_optimise() { Tier::Optimised } else { Tier::Baseline }
    }

    /// The middleware registry.
    pub(crate) fn middleware_registry(&self) -> &MiddlewareRegistry {
        &self.middleware
    }

    /// The skills of `[skills] dirs`.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// The tool groups of `[groups.NAME]`.
    pub fn groups(&self) -> &ToolGroups {
        &self.groups
    }

    /// What went wrong starting the upstream MCP servers (empty before
    /// they were started, and when all started).
    pub fn upstream_problems(&self) -> &[String] {
        self.upstream_problems.get().map_or(&[], Vec::as_slice)
    }
}

/// The lazy registry entry of `builtin`: its first use loads it and, when
/// that gave baseline code, queues its optimisation on `catalog`.
pub(super) fn builtin_entry(builtin: &'static Builtin, catalog: Weak<Catalog>) -> Entry<LoadedTool> {
    Entry::lazy(
        Origin::Builtin,
        Box::new(move || builtin.info()),
        Box::new(move |runtime| {
            let catalog = catalog.clone();
            Box::pin(async move {
                let (tool, tier) = load_builtin_tiered(runtime, builtin).await?;
                if tier == Tier::Baseline
                    && let Some(catalog) = catalog.upgrade()
                {
                    catalog.queue_optimise_builtin(builtin);
                }
                Ok(tool)
            })
        }),
    )
}
