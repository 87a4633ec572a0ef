//! The tool registry: every tool is known by name from the moment it is
//! registered, and an entry is either a loaded tool or one that loads on
//! first use.
//!
//! The built-ins are registered not yet loaded ([`Entry::Lazy`]): start-up
//! costs nothing per built-in, and the first thing that needs one (a call, a
//! check, an instance, a description, a listing) loads it, once, however many
//! tasks ask at the same time. Plugins loaded from a file and native function
//! tools are registered loaded ([`Entry::Loaded`]).
//!
//! The registry holds whatever the layer above makes of a tool (`T`, a
//! loaded tool ready for calls): the catalog knows names, origins and
//! metadata, not how a tool runs. A call takes the entry's `Arc` under a
//! short read lock and keeps it for the whole call, so
//! [`Registry::replace`] swaps a tool atomically: calls already running
//! finish on the old version, calls that start later get the new one, and
//! the name is never missing in between.

use crate::sync::RwLockExt;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard};

use futures::future::BoxFuture;
use tokio::sync::{OnceCell, watch};

use super::tool::{LoadError, LookupError, Origin, ToolInfo};
use crate::runtime::Runtime;

/// What the registry needs to know of a loaded tool.
pub(crate) trait Registered: Send + Sync + 'static {
    /// Its metadata.
    fn info(&self) -> &ToolInfo;
}

/// What a lazy entry knows of its tool's metadata before loading it (a
/// built-in's embedded `metadata.json`).
pub(crate) type Describer = Box<dyn Fn() -> Result<ToolInfo, LoadError> + Send + Sync>;

/// How a lazy entry loads its tool the first time it is needed.
pub(crate) type Loader<T> = Box<dyn for<'a> Fn(&'a Runtime) -> BoxFuture<'a, Result<T, LoadError>> + Send + Sync>;

/// A registered tool: loaded, or loaded on first use.
pub(crate) enum Entry<T> {
    /// Ready for calls.
    Loaded(Arc<T>),
    /// Known by name and origin; [`Entry::get`] loads it the first time.
    Lazy(Arc<LazyTool<T>>),
}

impl<T> Clone for Entry<T> {
    fn clone(&self) -> Self {
        match self {
            Entry::Loaded(t) => Entry::Loaded(t.clone()),
            Entry::Lazy(l) => Entry::Lazy(l.clone()),
        }
    }
}

impl<T: Registered> Entry<T> {
    /// An entry that loads with `load` on first use and, until then,
    /// answers for its metadata with `describe`.
    pub(crate) fn lazy(origin: Origin, describe: Describer, load: Loader<T>) -> Self {
        Entry::Lazy(Arc::new(LazyTool { origin, describe, described: OnceLock::new(), load, loaded: OnceCell::new() }))
    }

    /// Its metadata, without loading it.
    pub(crate) fn info(&self) -> Result<ToolInfo, LoadError> {
        match self {
            Entry::Loaded(tool) => Ok(tool.info().clone()),
            Entry::Lazy(lazy) => match (lazy.loaded.get(), lazy.described.get()) {
                (Some(tool), _) => Ok(tool.info().clone()),
                (None, Some(info)) => Ok(info.clone()),
                // Validating the metadata compiles its schema: done once,
                // not on every listing of a long-running host.
                (None, None) => {
                    let info = (lazy.describe)()?;
                    Ok(lazy.described.get_or_init(|| info).clone())
                }
            },
        }
    }

    /// Where the tool comes from, known without loading it.
    pub(crate) fn origin(&self) -> &Origin {
        match self {
            Entry::Loaded(tool) => &tool.info().origin,
            Entry::Lazy(lazy) => &lazy.origin,
        }
    }

    /// Whether the tool is loaded (a lazy entry after its first use).
    pub(crate) fn is_loaded(&self) -> bool {
        match self {
            Entry::Loaded(_) => true,
            Entry::Lazy(lazy) => lazy.loaded.initialized(),
        }
    }

    /// The tool if it is loaded (a lazy entry after its first use), loading nothing.
    pub(crate) fn loaded(&self) -> Option<Arc<T>> {
        match self {
            Entry::Loaded(tool) => Some(tool.clone()),
            Entry::Lazy(lazy) => lazy.loaded.get().cloned(),
        }
    }

    /// The loaded tool, loading it first if need be. A failed load is not
    /// remembered: the next use tries again (a failure may be transient, such
    /// as a full instance pool during the `metadata` probe).
    pub(crate) async fn get(&self, runtime: &Runtime) -> Result<Arc<T>, LoadError> {
        match self {
            Entry::Loaded(tool) => Ok(tool.clone()),
            Entry::Lazy(lazy) => {
                let tool = lazy.loaded.get_or_try_init(|| async { (lazy.load)(runtime).await.map(Arc::new) }).await?;
                Ok(tool.clone())
            }
        }
    }
}

/// A tool registered by name whose component is loaded on first use.
pub(crate) struct LazyTool<T> {
    origin: Origin,
    describe: Describer,
    /// What `describe` answered, kept once it succeeded.
    described: OnceLock<ToolInfo>,
    load: Loader<T>,
    /// Set once, by the first successful load; concurrent first uses wait
    /// for that one load.
    loaded: OnceCell<Arc<T>>,
}

/// Every registered tool by name, loaded or not yet loaded. Readers clone
/// an entry out and drop the lock before loading it.
pub(crate) struct Registry<T> {
    tools: RwLock<BTreeMap<String, Entry<T>>>,
    /// The generation of the name → tool map: bumped by every insert,
    /// replace and removal, so front ends can tell their clients that the
    /// list changed (a `watch` channel: a slow reader sees the newest
    /// generation, never a backlog).
    changes: watch::Sender<u64>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self { tools: RwLock::new(BTreeMap::new()), changes: watch::Sender::new(0) }
    }
}

impl<T: Registered> Registry<T> {
    /// The map, read-locked (for checks that must hold it, such as a
    /// middleware taking a name no tool may take meanwhile).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Entry<T>>> {
        self.tools.read_unpoisoned()
    }

    /// Registers `entry` as `name`, unless that name is taken (by a loaded
    /// tool or a not-yet-loaded one: a name conflict never loads anything)
    /// or `clash` says another kind of item has it (checked under the
    /// write lock).
    pub(crate) fn insert(
        &self,
        name: &str,
        entry: Entry<T>,
        label: &str,
        clash: impl FnOnce() -> Option<LoadError>,
    ) -> Result<(), LoadError> {
        let mut tools = self.tools.write_unpoisoned();
        if let Some(error) = clash() {
            return Err(error);
        }
        if let Some(existing) = tools.get(name) {
            return Err(LoadError::NameTaken {
                source_name: label.to_string(),
                name: name.to_string(),
                existing: match existing.origin() {
                    Origin::Builtin => "the built-in tools".to_string(),
                    Origin::File(p) => p.display().to_string(),
                    Origin::Native => "a function registered from Rust".to_string(),
                    Origin::Mcp(server) => format!("MCP server {server}"),
                },
            });
        }
        tools.insert(name.to_string(), entry);
        self.changed();
        Ok(())
    }

    /// Puts `tool` in place of the tool registered as `name`, in one step:
    /// a call that looks the name up gets either the old tool or the new
    /// one, never nothing. Fails (changing nothing) when `name` is not
    /// registered. Returns the replaced entry.
    pub(crate) fn replace(&self, name: &str, tool: Arc<T>) -> Result<Entry<T>, LookupError> {
        let mut tools = self.tools.write_unpoisoned();
        let slot = tools.get_mut(name).ok_or_else(|| LookupError::Unknown(name.to_string()))?;
        let old = std::mem::replace(slot, Entry::Loaded(tool));
        self.changed();
        Ok(old)
    }

    /// Puts `tool` in place of the loaded tool registered as `name` when
    /// `same` says that one is the same tool (the same bytes, compiled
    /// again by another compiler), in one step and without moving the
    /// generation on: nothing a client sees changed. A lazy entry that has
    /// loaded counts as loaded. Returns whether it was put in (not when the
    /// name is gone, not loaded yet, or now another tool).
    pub(crate) fn upgrade(&self, name: &str, tool: Arc<T>, same: impl FnOnce(&T) -> bool) -> bool {
        let mut tools = self.tools.write_unpoisoned();
        let Some(slot) = tools.get_mut(name) else { return false };
        let Some(old) = slot.loaded() else { return false };
        if !same(&old) {
            return false;
        }
        *slot = Entry::Loaded(tool);
        true
    }

    /// Removes `name`; returns whether it was registered.
    pub(crate) fn remove(&self, name: &str) -> bool {
        let removed = self.tools.write_unpoisoned().remove(name).is_some();
        if removed {
            self.changed();
        }
        removed
    }

    /// A receiver that sees the map's generation change on every insert,
    /// replace and removal from now on.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }

    /// The entry registered as `name`.
    pub(crate) fn entry(&self, name: &str) -> Option<Entry<T>> {
        self.read().get(name).cloned()
    }

    /// Every entry, sorted by name.
    pub(crate) fn entries(&self) -> Vec<Entry<T>> {
        self.read().values().cloned().collect()
    }

    /// The metadata of the tool named `name`, without loading it.
    pub(crate) fn info(&self, name: &str) -> Result<ToolInfo, LookupError> {
        let entry = self.entry(name).ok_or_else(|| LookupError::Unknown(name.to_string()))?;
        Ok(entry.info()?)
    }

    /// The loaded tool named `name`, loading it on first use.
    pub(crate) async fn get(&self, name: &str, runtime: &Runtime) -> Result<Arc<T>, LookupError> {
        let entry = self.entry(name).ok_or_else(|| LookupError::Unknown(name.to_string()))?;
        Ok(entry.get(runtime).await?)
    }
}
