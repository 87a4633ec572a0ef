//! Per-session agent state (tasks, read cache) and the nonces of pending
//! questions, each behind one seam, so that a later store (Redis) can let
//! several `serve` replicas share them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost::sync::MutexExt;

use anyhow::Result;
use tokio_util::sync::CancellationToken;
use toolhost::state::AgentState;

/// Where the agent state of MCP sessions lives. A key names one session
/// (an MCP session of a 2025-11-25 client, the one stdio client, or the
/// shared key of sessionless 2026-07-28 requests).
pub trait SessionStore: Send + Sync + 'static {
    /// The state of session `key`, created empty on first use; the same
    /// `Arc` for every call of a live session.
    fn open(&self, key: &str) -> Result<Arc<AgentState>>;
    /// Persists the session's state after a call (in memory: nothing to do).
    fn save(&self, key: &str, state: &AgentState) -> Result<()>;
    /// The session ended: its state may be dropped.
    fn end(&self, key: &str);
}

/// Sessions kept in this process's memory, dropped when they end.
#[derive(Default)]
pub struct MemorySessions {
    states: Mutex<HashMap<String, Arc<AgentState>>>,
}

impl MemorySessions {
    /// How many sessions hold state now.
    pub fn len(&self) -> usize {
        self.states.lock_unpoisoned().len()
    }

    /// Whether no session holds state.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionStore for MemorySessions {
    fn open(&self, key: &str) -> Result<Arc<AgentState>> {
        let mut states = self.states.lock_unpoisoned();
        Ok(states.entry(key.to_string()).or_insert_with(|| Arc::new(AgentState::new())).clone())
    }

    fn save(&self, _key: &str, _state: &AgentState) -> Result<()> {
        Ok(())
    }

    fn end(&self, key: &str) {
        self.states.lock_unpoisoned().remove(key);
    }
}

/// One named state file shared by every session (`--session NAME`, as the
/// other commands take it), saved after each call.
pub struct NamedSession {
    state: Arc<AgentState>,
}

impl NamedSession {
    /// Uses `state` (opened from its file) for every session.
    pub fn new(state: Arc<AgentState>) -> Self {
        Self { state }
    }
}

impl SessionStore for NamedSession {
    fn open(&self, _key: &str) -> Result<Arc<AgentState>> {
        Ok(self.state.clone())
    }

    fn save(&self, _key: &str, state: &AgentState) -> Result<()> {
        state.save()
    }

    fn end(&self, _key: &str) {}
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

/// Ends its session in the store when the last handler of the session is
/// dropped (the transport closed it), and tells the session's listeners.
pub(crate) struct SessionGuard {
    pub(crate) key: String,
    pub(crate) store: Arc<dyn SessionStore>,
    /// Fired when the session ends.
    pub(crate) ended: CancellationToken,
}

impl SessionGuard {
    pub(crate) fn new(key: String, store: Arc<dyn SessionStore>) -> Self {
        Self { key, store, ended: CancellationToken::new() }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.ended.cancel();
        self.store.end(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sessions_are_separate_and_dropped_when_they_end() {
        let store: Arc<MemorySessions> = Arc::new(MemorySessions::default());
        let a = store.open("a").unwrap();
        a.set("k", serde_json::json!(1), toolhost::state::StateBounds::NONE).unwrap();
        assert_eq!(store.open("a").unwrap().get("k"), Some(serde_json::json!(1)));
        assert_eq!(store.open("b").unwrap().get("k"), None);
        drop(SessionGuard::new("a".into(), store.clone()));
        assert_eq!(store.open("a").unwrap().get("k"), None, "an ended session starts empty");
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
