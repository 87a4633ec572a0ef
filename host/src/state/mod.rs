//! The agent state injected into tools that declare `state-injected`: named
//! JSON values (the task list), the read cache behind read-before-write, and
//! the active tool groups.
//!
//! An [`AgentState`] is a cheap handle: a [`StateStore`] and the
//! [`StateKey`] of one state in it. Every operation goes to the store, which
//! makes each one atomic on its own (a compare-and-set with its bounds is
//! one step), so several processes sharing a store never overwrite each
//! other's updates. The stores here keep state in this process's memory
//! ([`MemoryStore`]) or, for named sessions, in files one process at a time
//! holds ([`FileStore`]); a shared store (Redis) implements the same trait
//! in a crate of its own.
//!
//! The read cache records what a file held when a tool read it (its mtime,
//! size and SHA-256), never its content: a cached read is re-read through
//! the tool's own scope and handed out only while the file is unchanged
//! (`runtime/imports/state.rs`), so no store ever holds file contents.

mod data;
mod file;
mod memory;
mod sessions;
mod store;

use std::sync::Arc;

pub use data::{CachedFile, ReadForm, StateData};
pub use file::FileStore;
pub use memory::MemoryStore;
pub use sessions::SessionStates;
pub use store::{StateError, StateKey, StateStore, file_digest};

use crate::response::json_len;

/// At most this many files are cached (AgentScope's `max_cache_files`).
pub const MAX_CACHE_FILES: usize = 100;
/// At most this many bytes of files are cached (AgentScope's
/// `max_cache_bytes`, 25 000 KiB), counted by their sizes.
pub const MAX_CACHE_BYTES: u64 = 25_000 * 1024;

/// A `set` refused because the state would pass its [`StateBounds`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateFull {
    /// Too many keys.
    #[error(
        "the agent state already holds {limit} keys, the most it may; '{key}' was not stored (reuse a key, or raise limits.max_state_keys, --max-state-keys)"
    )]
    Keys {
        /// The key refused.
        key: String,
        /// The limit.
        limit: u64,
    },
    /// Too many bytes.
    #[error(
        "storing '{key}' would make the agent state {after} bytes, more than the {limit} bytes it may hold; store less, or raise limits.max_state_bytes (--max-state-bytes)"
    )]
    Bytes {
        /// The key refused.
        key: String,
        /// The state's size had it been stored.
        after: u64,
        /// The limit.
        limit: u64,
    },
}

/// How large the named values may grow ([`AgentState::set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBounds {
    /// The most bytes of keys plus values as compact JSON.
    pub max_bytes: u64,
    /// The most keys.
    pub max_keys: u64,
}

impl StateBounds {
    /// No bound (for the host's own use and tests).
    pub const NONE: StateBounds = StateBounds { max_bytes: u64::MAX, max_keys: u64::MAX };
}

/// What one named value counts for against [`StateBounds::max_bytes`]: its
/// key and its compact JSON text.
pub fn value_size(key: &str, value: &serde_json::Value) -> u64 {
    key.len() as u64 + json_len(value)
}

/// `value` as compact JSON with every object's keys in sorted order: two
/// values that are equal as JSON (whatever the order of their keys) have
/// the same canonical text, so a store that compares texts compares values.
/// Its length is the compact length [`value_size`] counts.
pub fn canonical_json(value: &serde_json::Value) -> String {
    fn sorted(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
            }
            serde_json::Value::Array(items) => serde_json::Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// One agent state: the store it lives in and its key there. Cloning is
/// cheap; clones are the same state.
#[derive(Debug, Clone)]
pub struct AgentState {
    store: Arc<dyn StateStore>,
    key: StateKey,
}

impl Default for AgentState {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentState {
    /// A fresh state of its own in this process's memory.
    pub fn new() -> Self {
        Self::in_store(Arc::new(MemoryStore::default()), StateKey::sessionless())
    }

    /// The state `key` of `store`, used as it is (see [`AgentState::open`]).
    pub fn in_store(store: Arc<dyn StateStore>, key: StateKey) -> Self {
        Self { store, key }
    }

    /// The state `key` of `store`, made ready first ([`StateStore::open`]):
    /// a file store takes the session's file for this process, a shared
    /// store checks that it answers.
    pub async fn open(store: Arc<dyn StateStore>, key: StateKey) -> Result<Self, StateError> {
        store.open(&key).await?;
        Ok(Self::in_store(store, key))
    }

    /// Its key in its store.
    pub fn key(&self) -> &StateKey {
        &self.key
    }

    /// The store it lives in.
    pub fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    /// Where it lives, as the audit log names it (`None`: this process's
    /// memory).
    pub fn location(&self) -> Option<String> {
        self.store.location(&self.key)
    }

    /// The value under `name`.
    pub async fn get(&self, name: &str) -> Result<Option<serde_json::Value>, StateError> {
        self.store.get(&self.key, name).await
    }

    /// Stores `value` under `name`, unless the named values would then
    /// pass `bounds` (a change that does not grow them is always taken).
    pub async fn set(&self, name: &str, value: serde_json::Value, bounds: StateBounds) -> Result<(), StateError> {
        self.store.set(&self.key, name, value, bounds).await
    }

    /// Stores `value` under `name` if the stored value equals `expected`
    /// as JSON (`None`: nothing stored; the order of object keys does not
    /// matter) and the values stay within `bounds`; `Ok(false)` if it
    /// changed in between.
    pub async fn compare_and_set(
        &self,
        name: &str,
        expected: Option<serde_json::Value>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateError> {
        self.store.compare_and_set(&self.key, name, expected, value, bounds).await
    }

    /// Records what a tool read of a file, evicting the least recently used
    /// entries beyond [`MAX_CACHE_FILES`] and [`MAX_CACHE_BYTES`].
    pub async fn cache_file(&self, entry: CachedFile) -> Result<(), StateError> {
        self.store.cache_file(&self.key, entry).await
    }

    /// The record of `path`, now the most recently used.
    pub async fn cached_file(&self, path: &str) -> Result<Option<CachedFile>, StateError> {
        self.store.cached_file(&self.key, path).await
    }

    /// Forgets `path`.
    pub async fn forget_file(&self, path: &str) -> Result<(), StateError> {
        self.store.forget_file(&self.key, path).await
    }

    /// The active tool groups besides `basic`, in the order they were
    /// activated.
    pub async fn active_groups(&self) -> Result<Vec<String>, StateError> {
        self.store.active_groups(&self.key).await
    }

    /// Makes `groups` the active tool groups (the final state, as
    /// `reset_tools` takes it); returns whether that changed the set, in
    /// which case every [`AgentState::group_changes`] receiver sees a new
    /// generation.
    pub async fn set_active_groups(&self, groups: Vec<String>) -> Result<bool, StateError> {
        self.store.set_active_groups(&self.key, groups).await
    }

    /// Tells of every change to this state's active tool groups from now on
    /// (its tool listing changes with them), from any process sharing the
    /// store: front ends send the session's MCP client
    /// `notifications/tools/list_changed`.
    pub fn group_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.store.group_changes(&self.key)
    }

    /// A copy of everything (for inspection and tests).
    pub async fn snapshot(&self) -> Result<StateData, StateError> {
        self.store.snapshot(&self.key).await
    }
}
