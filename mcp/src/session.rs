//! Per-session agent state (tasks, read cache) behind one seam, so that a
//! later store (Redis) can let several `serve` replicas share it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolhost::sync::MutexExt;

use anyhow::Result;
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

/// Ends its session in the store when the last handler of the session is
/// dropped (the transport closed it).
pub(crate) struct SessionGuard {
    pub(crate) key: String,
    pub(crate) store: Arc<dyn SessionStore>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
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
        drop(SessionGuard { key: "a".into(), store: store.clone() });
        assert_eq!(store.open("a").unwrap().get("k"), None, "an ended session starts empty");
    }
}
