//! What one replica's front tells the listeners held by the others, over
//! the deployment's [`EventBus`]: its tool set changed (every listener of
//! every replica is sent `tools/list_changed`: the client's next request
//! may reach the replica that changed), and a watched file failed to reload
//! (a log message to each 2025-11-25 session at its level, once per file,
//! digest and error however many replicas report it), and a client deleted
//! its session (every replica closes its worker of it). A lost link to the
//! bus counts as a change of everything (a missed change is never silent).
//!
//! The bus is the shared store, part of the trust base; still, a message is
//! only a wake-up or a log line rebuilt from checked fields, escaped as the
//! local ones are, and never more than the bus's bound.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

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
}

/// What closes this process's worker of a deleted session (given its
/// SHA-256), set by the HTTP transport that holds the workers.
pub(crate) type CloseSession = Arc<dyn Fn(String) + Send + Sync>;

/// The fan-out of one front: remote tool-set changes as a generation its
/// listeners follow, and the reload errors reported so far.
pub(crate) struct Fanout {
    bus: Mutex<Option<Arc<dyn EventBus>>>,
    /// Bumped for each change another replica reports (and each lost link).
    remote_changes: tokio::sync::watch::Sender<u64>,
    /// The reload errors sent to clients lately, by file, digest and error.
    reported: Mutex<VecDeque<String>>,
    /// Closes a local worker of a session another replica deleted.
    close_session: std::sync::OnceLock<CloseSession>,
}

impl Fanout {
    pub(crate) fn new() -> Self {
        Self {
            bus: Mutex::new(None),
            remote_changes: tokio::sync::watch::channel(0).0,
            reported: Mutex::new(VecDeque::new()),
            close_session: std::sync::OnceLock::new(),
        }
    }

    /// Sets what closes a local worker of a session another replica
    /// deleted (the HTTP transport's).
    pub(crate) fn on_session_ended(&self, close: CloseSession) {
        let _ = self.close_session.set(close);
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
                                if let Some(close) = shared.fanout.close_session.get() {
                                    close(session);
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
