//! 2025-11-25 sessions that any replica of a deployment can take: rmcp's
//! `SessionStore` over the shared [`RecordStore`]. The replica that
//! initialises a session records its `initialize` parameters; a replica that
//! gets a request of a session it never saw loads them and replays the
//! handshake (rmcp's restore), and the session's agent state is the same on
//! every replica (its key derives from the `Mcp-Session-Id`). A `DELETE`
//! through any replica removes the record and the state and tells the other
//! replicas to close their workers of it; a session unused for the idle time
//! ends by itself (the record's lifetime, renewed while it is used).
//!
//! The session id is a bearer secret (whoever has it acts in the session),
//! so it never appears in a key or a message: records are named by its
//! SHA-256, and so is a deleted session on the bus.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use sha2::{Digest as _, Sha256};
use toolhost::coordination::RecordStore;
use toolhost::sync::MutexExt as _;

use crate::handler::Shared;

/// The most sessions whose last renewal this process remembers; past it
/// the oldest are forgotten (their next request renews again).
const REMEMBERED_RENEWALS: usize = 4096;

/// The shared records of a front's sessions.
pub(crate) struct SharedSessions {
    records: Arc<dyn RecordStore>,
    /// Their streams' events, sealed.
    pub(crate) events: Arc<crate::http::event_log::SharedEvents>,
    /// A session's lifetime without use.
    idle: Duration,
    /// When each session's record was last renewed here, by digest.
    renewed: Mutex<HashMap<String, Instant>>,
}

impl SharedSessions {
    pub(crate) fn new(
        records: Arc<dyn RecordStore>,
        events: Arc<crate::http::event_log::SharedEvents>,
        idle: Duration,
    ) -> Self {
        Self { records, events, idle, renewed: Mutex::new(HashMap::new()) }
    }

    /// Renews the record of the session `id` when a quarter of its lifetime
    /// passed since this process last did (off the request's path): a
    /// session in use never expires, and a call costs no store command of
    /// its own most of the time.
    pub(crate) fn keep(&self, id: &str) {
        let digest = digest(id);
        let now = Instant::now();
        {
            let mut renewed = self.renewed.lock_unpoisoned();
            if renewed.get(&digest).is_some_and(|at| now.duration_since(*at) < self.idle / 4) {
                return;
            }
            if renewed.len() >= REMEMBERED_RENEWALS {
                renewed.retain(|_, at| now.duration_since(*at) < self.idle / 4);
                if renewed.len() >= REMEMBERED_RENEWALS {
                    renewed.clear();
                }
            }
            renewed.insert(digest.clone(), now);
        }
        let (records, idle) = (self.records.clone(), self.idle);
        tokio::spawn(async move {
            if let Err(e) = records.record(&record_key(&digest), idle).await {
                tracing::warn!("renewing an MCP session's record failed (it may expire while in use): {e}");
            }
        });
    }
}

/// The SHA-256 of a session id, hex: how keys and messages name it.
pub(crate) fn digest(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

fn record_key(digest: &str) -> String {
    format!("mcp-session:{digest}")
}

/// rmcp's `SessionStore` over a front's [`SharedSessions`].
pub(crate) struct RestorableSessions(pub(crate) Arc<Shared>);

impl RestorableSessions {
    fn sessions(&self) -> Result<&SharedSessions, SessionStoreError> {
        self.0.sessions.get().ok_or_else(|| "this front does not share its sessions".into())
    }
}

#[toolhost::async_trait]
impl SessionStore for RestorableSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let sessions = self.sessions()?;
        let Some(text) = sessions.records.record(&record_key(&digest(session_id)), sessions.idle).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(&text)?))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let sessions = self.sessions()?;
        let text = serde_json::to_string(state)?;
        sessions.records.put_record(&record_key(&digest(session_id)), &text, sessions.idle).await?;
        Ok(())
    }

    /// The client deleted the session (through this replica): the record
    /// and the agent state go, and every other replica closes its worker.
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let sessions = self.sessions()?;
        let digest = digest(session_id);
        sessions.records.drop_record(&record_key(&digest)).await?;
        self.0.states.end_session(session_id);
        self.0.fanout.publish_session_ended(&digest).await;
        Ok(())
    }
}
