//! What one replica's front tells the listeners held by the others, over
//! the deployment's [`EventBus`]: its tool set changed (every listener of
//! every replica is sent `tools/list_changed`: the client's next request
//! may reach the replica that changed), and a watched file failed to reload
//! (a log message to each 2025-11-25 session at its level, once per file,
//! digest and error however many replicas report it), a client deleted
//! its session (every replica closes its worker of it), and a client
//! answered through this replica what another replica's worker asked
//! (`http/crossing.rs`: the answer goes to that replica, sealed). A lost link to the
//! bus counts as a change of everything (a missed change is never silent).
//!
//! The bus is the shared store, part of the trust base; still, a message is
//! only a wake-up or a log line rebuilt from checked fields, escaped as the
//! local ones are, and never more than the bus's bound.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rmcp::model::ClientJsonRpcMessage;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;
use toolhost::coordination::{BusMessage, EventBus};
use toolhost::reload::FileStatus;
use toolhost::sync::MutexExt as _;

/// How many reload errors are remembered to report each once.
const REMEMBERED_ERRORS: usize = 256;

/// A message of the fan-out, as JSON text on the bus.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
enum Event {
    /// The sender's tool set changed.
    ToolsChanged,
    /// A watched file of the sender failed to reload.
    ReloadError { status: FileStatus },
    /// A client deleted its 2025-11-25 session through the sender: every
    /// replica closes its worker of it. The session by its SHA-256.
    SessionEnded { session: String },
    /// A client answered, through the sender, a request that the replica
    /// `owner`'s worker of the session (by its SHA-256) sent; the answer
    /// sealed with the keyring (base64).
    Answer { owner: String, session: String, sealed: String },
}

/// This process's workers of 2025-11-25 sessions, as the HTTP transport
/// that holds them acts for the other replicas.
pub(crate) trait LocalSessions: Send + Sync {
    /// Closes the worker of the session with SHA-256 `digest` (another
    /// replica deleted it), if there is one.
    fn close(&self, digest: String);
    /// Hands `answer` (forwarded by another replica) to the worker of the
    /// session with SHA-256 `digest`, if there is one.
    fn deliver(&self, digest: String, answer: ClientJsonRpcMessage);
}

/// The fan-out of one front: remote tool-set changes as a generation its
/// listeners follow, and the reload errors reported so far.
pub(crate) struct Fanout {
    bus: Mutex<Option<Arc<dyn EventBus>>>,
    /// Bumped for each change another replica reports (and each lost link).
    remote_changes: tokio::sync::watch::Sender<u64>,
    /// The reload errors sent to clients lately, by file, digest and error.
    reported: Mutex<VecDeque<String>>,
    /// This process's session workers, for what other replicas send them.
    local_sessions: std::sync::OnceLock<Arc<dyn LocalSessions>>,
}

impl Fanout {
    pub(crate) fn new() -> Self {
        Self {
            bus: Mutex::new(None),
            remote_changes: tokio::sync::watch::channel(0).0,
            reported: Mutex::new(VecDeque::new()),
            local_sessions: std::sync::OnceLock::new(),
        }
    }

    /// Sets this process's session workers (the HTTP transport's).
    pub(crate) fn serve_sessions(&self, sessions: Arc<dyn LocalSessions>) {
        let _ = self.local_sessions.set(sessions);
    }

    /// Sends `answer`, posted here by a client of the session with SHA-256
    /// `session`, to the replica `owner` whose worker asked; sealed with
    /// `sealer` (it may hold what the user typed).
    pub(crate) async fn forward_answer(
        &self,
        sealer: &crate::http::event_log::Sealer,
        owner: String,
        session: String,
        answer: &ClientJsonRpcMessage,
    ) {
        use base64::Engine as _;
        let plain = serde_json::to_vec(answer).expect("an answer serialises");
        let sealed = match sealer.seal(&answer_binding(&owner, &session), &plain) {
            Ok(sealed) => base64::engine::general_purpose::STANDARD.encode(sealed),
            Err(e) => {
                tracing::warn!("an answer for replica {owner} was not forwarded: {e}");
                return;
            }
        };
        self.publish(&Event::Answer { owner, session, sealed }).await;
    }

    /// Tells the other replicas that the session of SHA-256 `digest` was
    /// deleted here.
    pub(crate) async fn publish_session_ended(&self, digest: &str) {
        self.publish(&Event::SessionEnded { session: digest.to_string() }).await;
    }

    /// The other replicas' tool-set changes, for a listener to follow.
    pub(crate) fn remote_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.remote_changes.subscribe()
    }

    /// Whether `status`'s error is new here (and now remembered as sent).
    pub(crate) fn first_report(&self, status: &FileStatus) -> bool {
        let key =
            format!("{}\0{}\0{}", status.file.display(), status.sha256, status.last_error.as_deref().unwrap_or(""));
        let mut reported = self.reported.lock_unpoisoned();
        if reported.contains(&key) {
            return false;
        }
        if reported.len() == REMEMBERED_ERRORS {
            reported.pop_front();
        }
        reported.push_back(key);
        true
    }

    /// Tells the other replicas of a local reload error (when there is a bus).
    pub(crate) async fn publish_reload_error(&self, status: &FileStatus) {
        self.publish(&Event::ReloadError { status: status.clone() }).await;
    }

    async fn publish(&self, event: &Event) {
        let bus = self.bus.lock_unpoisoned().clone();
        let Some(bus) = bus else { return };
        let text = serde_json::to_string(event).expect("a fan-out event serialises");
        if let Err(e) = bus.publish(&text).await {
            tracing::warn!("the other replicas were not told of a change here: {e}");
        }
    }
}

/// What a forwarded answer is sealed to: its owner and session, so it
/// opens for nothing else.
fn answer_binding(owner: &str, session: &str) -> String {
    format!("answer\0{owner}\0{session}")
}

/// A forwarded answer, opened; `None` when it does not open with this
/// keyring or is not an answer.
fn open_answer(
    shared: &crate::handler::Shared,
    owner: &str,
    session: &str,
    sealed: &str,
) -> Option<ClientJsonRpcMessage> {
    use base64::Engine as _;
    let sealer = &shared.sessions.get()?.events.sealer;
    let sealed = base64::engine::general_purpose::STANDARD.decode(sealed).ok()?;
    let plain = sealer.open(&answer_binding(owner, session), &sealed)?;
    serde_json::from_slice(&plain).ok()
}

impl crate::McpFront {
    /// Shares this front's changes with the other replicas of its
    /// deployment over `bus`, and theirs with its listeners, until the
    /// server stops: a change of the host's tool set is published; one
    /// heard wakes every listener here; a reload error heard is sent as
    /// this process's own are ([`crate::McpFront::forward_reload_errors`]).
    pub fn share_events(&self, bus: Arc<dyn EventBus>) -> tokio::task::JoinHandle<()> {
        let shared = self.shared.clone();
        *shared.fanout.bus.lock_unpoisoned() = Some(bus.clone());
        let mut heard = bus.subscribe();
        let mut local = shared.host.tool_list_changes();
        local.mark_unchanged();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = shared.stopping.cancelled() => return,
                    changed = local.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        shared.fanout.publish(&Event::ToolsChanged).await;
                    }
                    message = heard.recv() => match message {
                        Ok(BusMessage::Message(text)) => match serde_json::from_str::<Event>(&text) {
                            Ok(Event::ToolsChanged) => shared.fanout.remote_changes.send_modify(|g| *g += 1),
                            Ok(Event::ReloadError { status }) => {
                                if shared.fanout.first_report(&status)
                                    && let Some(message) = crate::logs::reload_error(&status)
                                {
                                    shared.logs.send(message);
                                }
                            }
                            Ok(Event::SessionEnded { session }) => {
                                if let Some(sessions) = shared.fanout.local_sessions.get() {
                                    sessions.close(session);
                                }
                            }
                            Ok(Event::Answer { owner, session, sealed }) => {
                                if shared.host.replica_id() == Some(owner.as_str())
                                    && let Some(answer) = open_answer(&shared, &owner, &session, &sealed)
                                    && let Some(sessions) = shared.fanout.local_sessions.get()
                                {
                                    sessions.deliver(session, answer);
                                }
                            }
                            Err(e) => tracing::debug!("a message on the deployment's bus is not one toolhost sends: {e}"),
                        },
                        Ok(BusMessage::Reconnected) | Err(RecvError::Lagged(_)) => {
                            shared.fanout.remote_changes.send_modify(|g| *g += 1);
                        }
                        Err(RecvError::Closed) => return,
                    },
                }
            }
        })
    }
}
