//! Which agent state each session of a front end uses
//! ([`SessionStates`], over the [`StateStore`] seam), so that a shared
//! store lets several `serve` replicas share them.

use std::sync::Arc;

use super::{AgentState, StateKey, StateStore};

/// Where the agent states of a front end's sessions live, and which state
/// a session uses: each its own (dropped when it ends), or one shared by
/// all (`serve --session NAME`). A session is known by the id its protocol
/// gives it (MCP's `Mcp-Session-Id`); its key is a digest of the id, so
/// every replica of a deployment derives the same one.
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
    /// Each session gets a state of its own in `store`, dropped when the
    /// session ends; sessionless requests (MCP 2026-07-28) share one.
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

    /// The state key of the session `session_id` (as a digest: every
    /// replica derives the same key), or of a session without an id
    /// (stdio: one client) a random one.
    pub fn session_key(&self, session_id: Option<&str>) -> StateKey {
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
    pub fn sessionless_key(&self) -> StateKey {
        self.shared.clone().unwrap_or_else(StateKey::sessionless)
    }

    /// The state `key`.
    pub fn state(&self, key: StateKey) -> AgentState {
        AgentState::in_store(self.store.clone(), key)
    }

    /// The session `session_id` was deleted: its own state goes (a shared
    /// one stays), whichever process held it.
    pub fn end_session(&self, session_id: &str) {
        self.end(&self.session_key(Some(session_id)));
    }

    /// This process's worker of the session of `key` ended (its transport
    /// closed): the session's own state goes with it, unless the session
    /// outlives this process's workers ([`Self::across_processes`]) or
    /// the state is shared.
    pub fn worker_ended(&self, key: &StateKey) {
        if !self.across_processes {
            self.end(key);
        }
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
