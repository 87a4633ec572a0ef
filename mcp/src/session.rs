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
    /// Whether a session outlives this process's worker of it (the store is
    /// shared by the replicas of a deployment, any of which may take the
    /// session's next request).
    across_processes: bool,
}

impl SessionStates {
    /// Each 2025-11-25 session gets a state of its own in `store`, dropped
    /// when the session ends; sessionless (2026-07-28) requests share one.
    pub fn per_session(store: Arc<dyn StateStore>) -> Self {
        Self { store, shared: None, across_processes: false }
    }

    /// Every session, and every sessionless request, uses the state `key`
    /// of `store` (`serve --session NAME`); it outlives the sessions.
    pub fn shared(store: Arc<dyn StateStore>, key: StateKey) -> Self {
        Self { store, shared: Some(key), across_processes: false }
    }

    /// The sessions' states outlive this process's workers: another
    /// replica of the deployment may take a session's next request, so a
    /// state ends only when its session is deleted (`DELETE`, through any
    /// replica) or stays unused for the store's idle time, never because
    /// this process's worker of it went idle.
    pub fn across_processes(mut self) -> Self {
        self.across_processes = true;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    /// The state key of the 2025-11-25 session `session_id` (its
    /// `Mcp-Session-Id`, as a digest: every replica derives the same key),
    /// or of a session without an id (stdio: one client) a random one.
    fn session_key(&self, session_id: Option<&str>) -> StateKey {
        if let Some(shared) = &self.shared {
            return shared.clone();
        }
        if let Some(id) = session_id {
            return StateKey::of_session(id);
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

    /// The session `session_id` was deleted: its own state goes (a shared
    /// one stays), whichever process held it.
    pub(crate) fn end_session(&self, session_id: &str) {
        self.end(&self.session_key(Some(session_id)));
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

/// One session's worker in this process: its state key, fixed by its first
/// request, and its end. Dropped with the last handler of the session (the
/// transport closed it), it tells the session's listeners, and ends the
/// state unless the session outlives this process's worker
/// ([`SessionStates::across_processes`]).
pub(crate) struct SessionGuard {
    key: std::sync::OnceLock<StateKey>,
    states: SessionStates,
    /// Fired when the session ends.
    pub(crate) ended: CancellationToken,
}

impl SessionGuard {
    /// A new session's guard; its key is fixed by its first request.
    pub(crate) fn new(states: SessionStates) -> Self {
        Self { key: std::sync::OnceLock::new(), states, ended: CancellationToken::new() }
    }

    /// The session's state key: from `session_id`, the `Mcp-Session-Id` of
    /// the session's requests (the same on every replica), the first time
    /// it is asked for.
    pub(crate) fn key(&self, session_id: Option<&str>) -> StateKey {
        self.key.get_or_init(|| self.states.session_key(session_id)).clone()
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.ended.cancel();
        if let Some(key) = self.key.get()
            && !self.states.across_processes
        {
            self.states.end(key);
        }
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
        let (a_key, b_key) = (a.key(Some("id-a")), b.key(None));
        assert_ne!(a_key, b_key);
        assert_eq!(a.key(Some("another id")), a_key, "fixed by the first request");
        assert_eq!(a_key, StateKey::of_session("id-a"), "the same on every replica");
        let bounds = toolhost::state::StateBounds::NONE;
        states.state(a_key.clone()).set("k", serde_json::json!(1), bounds).await.unwrap();
        assert_eq!(states.state(b_key).get("k").await.unwrap(), None);
        drop(a);
        tokio::task::yield_now().await;
        assert_eq!(states.state(a_key).get("k").await.unwrap(), None, "an ended session starts empty");

        let shared = SessionStates::shared(memory.clone(), StateKey::named("team").unwrap());
        let one = SessionGuard::new(shared.clone());
        shared.state(one.key(Some("x"))).set("k", serde_json::json!(2), bounds).await.unwrap();
        drop(one);
        tokio::task::yield_now().await;
        let other = SessionGuard::new(shared.clone());
        assert_eq!(shared.state(other.key(None)).get("k").await.unwrap(), Some(serde_json::json!(2)));
        assert_eq!(shared.sessionless_key(), other.key(None));

        // Across processes a worker's end is not the session's; a delete is.
        let deployment = SessionStates::per_session(memory).across_processes();
        let worker = SessionGuard::new(deployment.clone());
        let key = worker.key(Some("id-d"));
        deployment.state(key.clone()).set("k", serde_json::json!(3), bounds).await.unwrap();
        drop(worker);
        tokio::task::yield_now().await;
        assert_eq!(deployment.state(key.clone()).get("k").await.unwrap(), Some(serde_json::json!(3)));
        deployment.end_session("id-d");
        tokio::task::yield_now().await;
        assert_eq!(deployment.state(key).get("k").await.unwrap(), None);
    }
}
