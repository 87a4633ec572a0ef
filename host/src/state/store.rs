//! The seam between agent state and where it is kept: [`StateStore`], the
//! [`StateKey`] that names one state in a store, and the [`StateError`] a
//! store operation ends with.

use std::fmt;

use sha2::Digest as _;

use super::{CachedFile, StateBounds, StateData, StateFull};

/// Names one agent state in a store. Its text ([`StateKey::as_str`]) holds
/// letters, digits and `-_.:` only, and no secret: an MCP session is named
/// by a digest of its id, never the id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateKey(String);

impl StateKey {
    /// A named session (`--session NAME`): letters, digits, `-`, `_` and
    /// `.`, not leading `.`, at most 128 characters.
    pub fn named(name: &str) -> Result<Self, StateError> {
        let valid = !name.is_empty()
            && name.len() <= 128
            && !name.starts_with('.')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(StateError::Refused(format!(
                "session name '{name}' may only contain letters, digits, '-', '_' and '.' (not leading), at most 128 of them"
            )));
        }
        Ok(Self(format!("named:{name}")))
    }

    /// The state of one MCP session, named by the SHA-256 of its session id
    /// (whoever reads a key must not be able to act in the session).
    pub fn of_session(session_id: &str) -> Self {
        Self(format!("mcp:{}", hex::encode(sha2::Sha256::digest(session_id.as_bytes()))))
    }

    /// The state shared by everything that names no session: sessionless
    /// (2026-07-28) MCP requests, a `toolhost call` without `--session`.
    pub fn sessionless() -> Self {
        Self("sessionless".to_string())
    }

    /// The session name of a key made by [`StateKey::named`].
    pub fn session_name(&self) -> Option<&str> {
        self.0.strip_prefix("named:")
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a state operation did not happen. In every case nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The change would pass the state's bounds.
    #[error(transparent)]
    Full(#[from] StateFull),
    /// The store did not answer, or could not keep the change (a shared
    /// store unreachable or past its timeout, a full disk). The text names
    /// the store (never a credential) and the cause.
    #[error("the agent state store is unavailable: {0}; nothing was changed")]
    Unavailable(String),
    /// The store refuses this state: held by another process, corrupt, or
    /// a key it does not keep. The text names the cause and the fix.
    #[error("{0}")]
    Refused(String),
}

/// Where agent states are kept. Each operation is atomic on its own: a
/// store shared by several processes makes a compare-and-set and its bounds
/// one step, so no process overwrites another's update.
///
/// Implementations: [`super::MemoryStore`] (this process's memory),
/// [`super::FileStore`] (named sessions in files, one process at a time),
/// and a shared store in a crate of its own (Redis).
#[async_trait::async_trait]
pub trait StateStore: Send + Sync + fmt::Debug + 'static {
    /// Makes the state `key` ready for this process: a file store takes
    /// the session's file (refused while another process holds it), a
    /// shared store checks that it answers. Every other operation opens
    /// the state when needed.
    async fn open(&self, key: &StateKey) -> Result<(), StateError>;

    /// The value under `name`.
    async fn get(&self, key: &StateKey, name: &str) -> Result<Option<serde_json::Value>, StateError>;

    /// Stores `value` under `name` unless the values would then pass
    /// `bounds` (a change that does not grow them is always taken).
    async fn set(
        &self,
        key: &StateKey,
        name: &str,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<(), StateError>;

    /// Stores `value` under `name` if the stored value equals `expected` as
    /// JSON (`None`: nothing stored), within `bounds`; `Ok(false)` if not.
    async fn compare_and_set(
        &self,
        key: &StateKey,
        name: &str,
        expected: Option<serde_json::Value>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateError>;

    /// Records `entry` in the read cache (replacing the path's last one),
    /// evicting the least recently used beyond [`super::MAX_CACHE_FILES`]
    /// and [`super::MAX_CACHE_BYTES`].
    async fn cache_file(&self, key: &StateKey, entry: CachedFile) -> Result<(), StateError>;

    /// The read cache's record of `path`, which becomes the most recently
    /// used.
    async fn cached_file(&self, key: &StateKey, path: &str) -> Result<Option<CachedFile>, StateError>;

    /// Drops `path` from the read cache.
    async fn forget_file(&self, key: &StateKey, path: &str) -> Result<(), StateError>;

    /// The active tool groups, in activation order.
    async fn active_groups(&self, key: &StateKey) -> Result<Vec<String>, StateError>;

    /// Makes `groups` the active tool groups; `true` when that changed the
    /// set, which every [`StateStore::group_changes`] receiver of the state
    /// then sees (in every process sharing the store).
    async fn set_active_groups(&self, key: &StateKey, groups: Vec<String>) -> Result<bool, StateError>;

    /// A receiver that sees a new generation at each change of the state's
    /// active groups (a slow reader sees the newest, never a backlog).
    fn group_changes(&self, key: &StateKey) -> tokio::sync::watch::Receiver<u64>;

    /// A copy of the whole state.
    async fn snapshot(&self, key: &StateKey) -> Result<StateData, StateError>;

    /// The session of `key` ended: a store of states that end with their
    /// session drops it; a file store releases the file and keeps it.
    async fn end(&self, key: &StateKey) -> Result<(), StateError>;

    /// Where the state of `key` lives, as the audit log names it (`None`:
    /// this process's memory).
    fn location(&self, key: &StateKey) -> Option<String>;

    /// Whether the store answers now (a readiness probe); a store in this
    /// process always does.
    async fn check(&self) -> Result<(), StateError> {
        Ok(())
    }
}

/// The SHA-256 of `bytes` in hex, as [`CachedFile::sha256`] holds it.
pub fn file_digest(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}
