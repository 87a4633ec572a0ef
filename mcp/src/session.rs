//! One MCP session's worker in this process ([`SessionGuard`]): the
//! library's [`SessionStates`] says which state it uses.

use tokio_util::sync::CancellationToken;
use toolhost::state::{SessionStates, StateKey};

/// One session's worker in this process: its state key, fixed by its first
/// request, and its end. Dropped with the last handler of the session (the
/// transport closed it), it tells the session's listeners, and ends the
/// state unless the session outlives this process's worker
/// ([`SessionStates::worker_ended`]).
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
        if let Some(key) = self.key.get() {
            self.states.worker_ended(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
