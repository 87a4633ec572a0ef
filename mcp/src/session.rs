//! Which agent state each MCP session uses ([`SessionStates`], over the
//! library's [`StateStore`] seam), so that a shared store lets several
//! `serve` replicas share them.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolhost::state::{AgentState, StateKey, StateStore};

/// Where the agent states of MCP sessions live, and which state a session
/// uses. (Not rmcp's `SessionStore`, which keeps a session's `initialize`
/// parameters.)
#[derive(Debug, Clone)]
pub struct SessionStates {
    store: Arc<dyn StateStore>,
    /// The one state every session uses (`serve --session NAME`).
    shared: Option<StateKey>,
}

impl SessionStates {
    /// Each 2025-11-25 session gets a state of its own in `store`, dropped
    /// when the session ends; sessionless (2026-07-28) requests share one.
    pub fn per_session(store: Arc<dyn StateStore>) -> Self {
        Self { store, shared: None }
    }

    /// Every session, and every sessionless request, uses the state `key`
    /// of `store` (`serve --session NAME`); it outlives the sessions.
    pub fn shared(store: Arc<dyn StateStore>, key: StateKey) -> Self {
        Self { store, shared: Some(key) }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    /// The state key of a new 2025-11-25 session: named by a random id of
    /// its own (as a digest), so that keys never repeat across processes.
    fn new_session_key(&self) -> StateKey {
        if let Some(shared) = &self.shared {
            return shared.clone();
        }
        let mut id = [0u8; 16];
        // Without randomness the key is still unique in this process.
        if getrandom::fill(&mut id).is_err() {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            id[..8].copy_from_slice(&n.to_le_bytes());
            id[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        }
        StateKey::of_session(&hex::encode(id))
    }

    /// The key of the state sessionless requests share.
    pub(crate) fn sessionless_key(&self) -> StateKey {
        self.shared.clone().unwrap_or_else(StateKey::sessionless)
    }

    /// The state `key`.
    pub(crate) fn state(&self, key: StateKey) -> AgentState {
        AgentState::in_store(self.store.clone(), key)
    }

    /// The session of `key` ended: its own state goes (a shared one stays).
    fn end(&self, key: &StateKey) {
        if self.shared.is_some() {
            return;
        }
        let (store, key) = (self.store.clone(), key.clone());
        let end = async move {
            if let Err(e) = store.end(&key).await {
                tracing::warn!("dropping the state of an ended MCP session failed: {e}");
            }
        };
        // Without a runtime the process is ending: nothing outlives it in
        // memory, and a shared store drops the state when it idles.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            drop(runtime.spawn(end));
        }
    }
}

/// Ends its session's state when the last handler of the session is
/// dropped (the transport closed it), and tells the session's listeners.
pub(crate) struct SessionGuard {
    pub(crate) key: StateKey,
    states: SessionStates,
    /// Fired when the session ends.
    pub(crate) ended: CancellationToken,
}

impl SessionGuard {
    /// A new session's guard, its state key fresh.
    pub(crate) fn new(states: SessionStates) -> Self {
        Self { key: states.new_session_key(), states, ended: CancellationToken::new() }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.ended.cancel();
        self.states.end(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_have_states_of_their_own_dropped_when_they_end() {
        let memory = Arc::new(toolhost::state::MemoryStore::default());
        let states = SessionStates::per_session(memory.clone());
        let (a, b) = (SessionGuard::new(states.clone()), SessionGuard::new(states.clone()));
        assert_ne!(a.key, b.key);
        let bounds = toolhost::state::StateBounds::NONE;
        states.state(a.key.clone()).set("k", serde_json::json!(1), bounds).await.unwrap();
        assert_eq!(states.state(b.key.clone()).get("k").await.unwrap(), None);
        let key = a.key.clone();
        drop(a);
        tokio::task::yield_now().await;
        assert_eq!(states.state(key).get("k").await.unwrap(), None, "an ended session starts empty");

        let shared = SessionStates::shared(memory, StateKey::named("team").unwrap());
        let one = SessionGuard::new(shared.clone());
        shared.state(one.key.clone()).set("k", serde_json::json!(2), bounds).await.unwrap();
        drop(one);
        tokio::task::yield_now().await;
        let other = SessionGuard::new(shared.clone());
        assert_eq!(shared.state(other.key.clone()).get("k").await.unwrap(), Some(serde_json::json!(2)));
        assert_eq!(shared.sessionless_key(), other.key);
    }
}
