//! The server-sent events of 2025-11-25 sessions kept in the deployment's
//! shared [`EventLog`] (rmcp's `EventStore`), so that a stream cut on one
//! replica resumes on any other with `Last-Event-ID` and gets the rest, the
//! result of a call still running included: the replay follows the log
//! until the request's answer arrives (or, for a session's standalone
//! stream, until the client leaves).
//!
//! The events carry tool output (file contents, command output), so each is
//! sealed with AES-256-GCM under a key derived from the deployment's
//! keyring (every key of it opens, so keys rotate as sealed questions'
//! do), bound to its stream; a stream is named in the store by a digest of
//! rmcp's stream id (which for a session's standalone stream holds the
//! session id, a secret). A request's log is kept a minute after its
//! answer, a standalone stream's for the session's idle time, each at most
//! [`toolhost::coordination::MAX_LOGGED_EVENTS`] events.

use std::sync::Arc;
use std::time::Duration;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use sha2::{Digest as _, Sha256};
use toolhost::coordination::{EventLog, START};

use crate::keyring::Keyring;

/// How long a request's events stay after its answer: long enough for its
/// client to come back after a cut.
const AFTER_THE_ANSWER: Duration = Duration::from_secs(60);

/// How often a replay looks for events that are not there yet.
const FOLLOW_EVERY: Duration = Duration::from_millis(100);

/// How many events a replay reads at once.
const READ_AT_ONCE: usize = 100;

/// rmcp's event store over the deployment's [`EventLog`].
pub(crate) struct SharedEvents {
    log: Arc<dyn EventLog>,
    /// Also seals the answers forwarded to another replica (`fanout.rs`).
    pub(crate) sealer: Arc<Sealer>,
    /// Makes the ids of this replica's requests the deployment's before
    /// they are kept, as they are sent (`crossing.rs`).
    ids: Option<super::crossing::RequestIds>,
    /// How long a standalone stream's events are kept without a new one.
    idle: Duration,
}

impl SharedEvents {
    pub(crate) fn new(
        log: Arc<dyn EventLog>,
        keyring: &Keyring,
        idle: Duration,
        ids: Option<super::crossing::RequestIds>,
    ) -> Self {
        Self { log, sealer: Arc::new(Sealer::new(keyring)), ids, idle }
    }
}

/// Whether `event` opens the request stream `stream_id`: the retry event
/// rmcp sends first on every request's stream. It carries no message, and
/// resuming after it is reading the stream's log from [`START`], so it
/// costs the call no write. (rmcp sends another only when its handle's
/// `close_sse_stream` is called, which toolhost never does; one would name
/// the start too, and a resumption after it get the stream's events again,
/// never miss one.)
fn opens(stream_id: &str, event: &ServerSseMessage) -> bool {
    event.message.is_none() && !stream_id.ends_with(STANDALONE)
}

/// Seals and opens events with the keys derived from the keyring's.
pub(crate) struct Sealer {
    /// The first seals, all open.
    keys: Vec<LessSafeKey>,
}

impl Sealer {
    fn new(keyring: &Keyring) -> Self {
        let keys = keyring
            .keys()
            .iter()
            .map(|(_, key)| {
                let derived = Sha256::new().chain_update(b"toolhost-mcp sse events v1\0").chain_update(key).finalize();
                LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &derived).expect("a 32-byte key"))
            })
            .collect();
        Self { keys }
    }

    /// `nonce ‖ ciphertext ‖ tag` of `plain`, bound to `binding` (what it
    /// opens for: its stream, an answer's owner and session).
    pub(crate) fn seal(&self, binding: &str, plain: &[u8]) -> Result<Vec<u8>, EventStoreError> {
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).map_err(|e| format!("no randomness from the operating system: {e}"))?;
        let mut sealed = plain.to_vec();
        self.keys[0]
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(binding.as_bytes()), &mut sealed)
            .map_err(|_| "sealing a session event failed")?;
        Ok([nonce.as_slice(), &sealed].concat())
    }

    /// The plain text of `sealed`, under any key of the keyring; `None` when
    /// none opens it (another keyring, a forgery, another binding's entry).
    pub(crate) fn open(&self, binding: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        let (nonce, body) = sealed.split_at_checked(12)?;
        self.keys.iter().find_map(|key| {
            let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
            let mut body = body.to_vec();
            let plain = key.open_in_place(nonce, Aad::from(binding.as_bytes()), &mut body).ok()?;
            Some(plain.to_vec())
        })
    }
}

/// What an event holds, sealed in the log.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    message: Option<ServerJsonRpcMessage>,
    retry_ms: Option<u64>,
}

/// The id of an event sent but not kept (the store did not answer).
const UNLOGGED: &str = "unlogged";

/// How rmcp's id of a session's standalone stream ends (a request's stream
/// is named by a UUID).
const STANDALONE: &str = ":common";

/// The log's name for rmcp's stream `stream_id`.
fn log_name(stream_id: &str) -> String {
    hex::encode(&Sha256::digest(format!("toolhost-mcp sse\0{stream_id}"))[..16])
}

/// Whether `message` ends its request's stream.
fn is_answer(message: &ServerJsonRpcMessage) -> bool {
    matches!(message, ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
}

#[toolhost::async_trait]
impl EventStore for SharedEvents {
    async fn store_event(&self, stream_id: &str, event: &ServerSseMessage) -> Result<EventId, EventStoreError> {
        let stream = log_name(stream_id);
        if opens(stream_id, event) {
            return Ok(format!("{stream}.{START}"));
        }
        let message = event.message.as_deref().cloned().map(|m| match &self.ids {
            Some(ids) => ids.outgoing(m),
            None => m,
        });
        let ends = message.as_ref().is_some_and(is_answer);
        let retry_ms = event.retry.map(|r| u64::try_from(r.as_millis()).unwrap_or(u64::MAX));
        let plain = serde_json::to_vec(&Stored { message, retry_ms })?;
        let ttl = if ends { AFTER_THE_ANSWER } else { self.idle };
        match self.log.append(&stream, &self.sealer.seal(&stream, &plain)?, ttl).await {
            Ok(id) => Ok(format!("{stream}.{id}")),
            // The event still goes to its client: only a resumption after
            // it is lost, where refusing it would lose the call's answer.
            Err(e) => {
                tracing::warn!("a session event was sent but not kept for resumption: {e}");
                Ok(format!("{stream}.{UNLOGGED}"))
            }
        }
    }

    async fn replay_events_after(&self, last_event_id: &str) -> Result<EventStream, EventStoreError> {
        let (stream, after) = last_event_id
            .split_once('.')
            .filter(|(stream, after)| stream.len() == 32 && !after.is_empty())
            .ok_or("Last-Event-ID is not an event id this server gave")?;
        if after == UNLOGGED {
            return Err("the event named by Last-Event-ID was sent while the shared state store was unavailable, so \
                        it was not kept and the stream cannot be resumed after it; send the request again"
                .into());
        }
        let (stream, mut after) = (stream.to_string(), after.to_string());
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let (log, sealer) = (self.log.clone(), self.sealer.clone());
        tokio::spawn(async move {
            loop {
                let entries = match log.read_after(&stream, &after, READ_AT_ONCE).await {
                    Ok(entries) => entries,
                    Err(e) => {
                        tracing::warn!("replaying a session's events stopped: {e}");
                        return;
                    }
                };
                if entries.is_empty() {
                    tokio::select! {
                        () = tx.closed() => return,
                        () = tokio::time::sleep(FOLLOW_EVERY) => continue,
                    }
                }
                for entry in entries {
                    after = entry.id.clone();
                    let Some(plain) = sealer.open(&stream, &entry.data) else {
                        tracing::warn!("a session event in the shared store does not open with this keyring; skipped");
                        continue;
                    };
                    let Ok(stored) = serde_json::from_slice::<Stored>(&plain) else { continue };
                    let ends = stored.message.as_ref().is_some_and(is_answer);
                    let mut event = ServerSseMessage::default();
                    event.event_id = Some(format!("{stream}.{}", entry.id));
                    event.message = stored.message.map(Arc::new);
                    event.retry = stored.retry_ms.map(Duration::from_millis);
                    if tx.send(event).await.is_err() || ends {
                        return;
                    }
                }
            }
        });
        Ok(Box::pin(Replay(rx)))
    }
}

/// The events a replay task sends, as a stream.
struct Replay(tokio::sync::mpsc::Receiver<ServerSseMessage>);

impl futures::Stream for Replay {
    type Item = ServerSseMessage;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<ServerSseMessage>> {
        self.0.poll_recv(cx)
    }
}
