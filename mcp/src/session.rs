//! Which agent state each MCP session uses ([`SessionStates`], over the
//! library's [`StateStore`] seam), and the nonces of pending questions
//! ([`NonceStore`]), so that a shared store can let several `serve`
//! replicas share them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost::sync::MutexExt;

use anyhow::Result;
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

/// Where the nonces of pending questions live: what makes a sealed
/// 2026-07-28 request state single-use (the seal alone proves only that
/// this server made it). A store shared by several replicas lets any of
/// them take the answer, still exactly once.
pub trait NonceStore: Send + Sync + 'static {
    /// Records a fresh `nonce`, valid for `ttl`. Fails when the store holds
    /// too many pending questions (the error says so).
    fn issue(&self, nonce: &str, ttl: Duration) -> Result<()>;
    /// Consumes `nonce`: `true` for exactly one caller, and only before its
    /// time is up. Atomic: of two concurrent consumes at most one wins.
    fn consume(&self, nonce: &str) -> bool;
}

/// Nonces kept in this process's memory (one `serve` process).
pub struct MemoryNonces {
    /// Nonce → when it expires.
    pending: Mutex<HashMap<String, Instant>>,
    max: usize,
}

impl MemoryNonces {
    /// A store holding at most `max` pending questions at once.
    pub fn with_capacity(max: usize) -> Self {
        Self { pending: Mutex::new(HashMap::new()), max }
    }
}

impl Default for MemoryNonces {
    /// At most 10 000 pending questions.
    fn default() -> Self {
        Self::with_capacity(10_000)
    }
}

impl NonceStore for MemoryNonces {
    fn issue(&self, nonce: &str, ttl: Duration) -> Result<()> {
        let mut pending = self.pending.lock_unpoisoned();
        let now = Instant::now();
        pending.retain(|_, expires| *expires > now);
        if pending.len() >= self.max {
            anyhow::bail!("too many questions are waiting for answers; answer or abandon some first");
        }
        pending.insert(nonce.to_string(), now + ttl);
        Ok(())
    }

    fn consume(&self, nonce: &str) -> bool {
        // Removed under the lock: only one caller gets the entry.
        self.pending.lock_unpoisoned().remove(nonce).is_some_and(|expires| expires > Instant::now())
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

    #[test]
    fn a_nonce_is_consumed_once_even_by_racing_threads() {
        let nonces = Arc::new(MemoryNonces::default());
        for round in 0..50 {
            let nonce = format!("n{round}");
            nonces.issue(&nonce, Duration::from_secs(60)).unwrap();
            let barrier = Arc::new(std::sync::Barrier::new(8));
            let winners: usize = (0..8)
                .map(|_| {
                    let (nonces, barrier, nonce) = (nonces.clone(), barrier.clone(), nonce.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        nonces.consume(&nonce)
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| usize::from(t.join().unwrap()))
                .sum();
            assert_eq!(winners, 1, "round {round}: {winners} consumers won one nonce");
        }
        assert!(!nonces.consume("never-issued"));
    }

    #[test]
    fn an_expired_nonce_is_refused_and_the_store_is_bounded() {
        let nonces = MemoryNonces::with_capacity(2);
        nonces.issue("old", Duration::ZERO).unwrap();
        assert!(!nonces.consume("old"), "expired");
        nonces.issue("a", Duration::from_secs(60)).unwrap();
        nonces.issue("b", Duration::from_secs(60)).unwrap();
        let full = nonces.issue("c", Duration::from_secs(60)).unwrap_err().to_string();
        assert!(full.contains("too many questions"), "{full}");
        assert!(nonces.consume("a"));
        nonces.issue("c", Duration::from_secs(60)).unwrap();
    }
}
