//! Append-only logs of events per stream that every process of a
//! deployment reads ([`EventLog`]): the server-sent events of an MCP
//! session's streams, so that a stream cut on one replica resumes on
//! another from the last event its client saw.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::state::StateError;
use crate::sync::MutexExt;

/// The most entries one stream's log keeps; older ones are trimmed.
pub const MAX_LOGGED_EVENTS: usize = 1000;

/// The id before every entry of a stream: `read_after(stream, START, …)`
/// reads a log from its beginning, also one that has no entry yet.
pub const START: &str = "0";

/// One entry of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    /// Its id, ordered within its stream (`after` takes it).
    pub id: String,
    /// What was appended.
    pub data: Vec<u8>,
}

/// Logs of events by stream, each kept for a lifetime renewed at every
/// append, and at most [`MAX_LOGGED_EVENTS`] entries long.
#[async_trait::async_trait]
pub trait EventLog: Send + Sync + std::fmt::Debug + 'static {
    /// Appends `data` to the log of `stream` (a name with no secret in it),
    /// which is then kept for `ttl`; returns the entry's id.
    async fn append(&self, stream: &str, data: &[u8], ttl: Duration) -> Result<String, StateError>;
    /// At most `max` entries of `stream` that follow the entry `after`, in
    /// order (none when the log is gone).
    async fn read_after(&self, stream: &str, after: &str, max: usize) -> Result<Vec<LoggedEvent>, StateError>;
}

/// One stream's entries (id, data) and when it expires.
type MemoryStream = (Vec<(u64, Vec<u8>)>, Instant);

/// Event logs kept in this process (tests, one process).
#[derive(Debug, Default)]
pub struct MemoryEventLog {
    streams: Mutex<HashMap<String, MemoryStream>>,
    next: std::sync::atomic::AtomicU64,
}

#[async_trait::async_trait]
impl EventLog for MemoryEventLog {
    async fn append(&self, stream: &str, data: &[u8], ttl: Duration) -> Result<String, StateError> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let now = Instant::now();
        let mut streams = self.streams.lock_unpoisoned();
        streams.retain(|_, (_, until)| *until > now);
        let (entries, until) = streams.entry(stream.to_string()).or_insert_with(|| (Vec::new(), now));
        entries.push((id, data.to_vec()));
        if entries.len() > MAX_LOGGED_EVENTS {
            entries.remove(0);
        }
        *until = now + ttl;
        Ok(id.to_string())
    }

    async fn read_after(&self, stream: &str, after: &str, max: usize) -> Result<Vec<LoggedEvent>, StateError> {
        let after: u64 = after.parse().map_err(|_| StateError::Refused(format!("{after:?} is not an event id")))?;
        let now = Instant::now();
        let streams = self.streams.lock_unpoisoned();
        let Some((entries, _)) = streams.get(stream).filter(|(_, until)| *until > now) else {
            return Ok(Vec::new());
        };
        Ok(entries
            .iter()
            .filter(|(id, _)| *id > after)
            .take(max)
            .map(|(id, data)| LoggedEvent { id: id.to_string(), data: data.clone() })
            .collect())
    }
}
