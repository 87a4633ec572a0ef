//! Log messages from the server itself to its MCP clients: a watched
//! plugin or middleware file whose newest bytes do not serve (a reload
//! error: the file, the name it serves under, why; the previous version
//! keeps serving), and a plugin file whose background load at start failed
//! (a load error: the file and why; its tool is not offered).
//!
//! Clients of 2025-11-25 and earlier get each message as
//! `notifications/message` when it is at or above the level they set with
//! `logging/setLevel` (`info` until they set one). Logging is deprecated from
//! 2026-07-28 (SEP-2577): there a message reaches a client only inside a
//! request that opted in, and these errors belong to no request, so those
//! clients read them in `toolhost status` (and the server's log).
//!
//! A client shows a message to a person, and its strings are not all
//! toolhost's words: a file's name is whoever made the file's, an error can
//! quote what a plugin said. Each goes through the one escaper
//! ([`toolhost::escape`]): the file and name on one line, the error with
//! its line breaks kept.
#![allow(deprecated)] // rmcp marks the logging types deprecated (SEP-2577); 2025-11-25 clients still use them.

use std::sync::atomic::{AtomicU8, Ordering};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use toolhost::Toolhost;
use toolhost::escape::{block, line};
use toolhost::loading::FailedLoad;
use toolhost::reload::FileStatus;

/// How many messages a slow session may fall behind before it misses the
/// oldest (it is told how many it missed).
const BACKLOG: usize = 64;

/// The server's messages, fanned out to every session that listens.
pub(crate) struct Logs {
    tx: broadcast::Sender<LoggingMessageNotificationParam>,
}

impl Logs {
    pub(crate) fn new() -> Self {
        Self { tx: broadcast::Sender::new(BACKLOG) }
    }

    /// Sends `message` to every listening session (none listening: dropped).
    pub(crate) fn send(&self, message: LoggingMessageNotificationParam) {
        let _ = self.tx.send(message);
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<LoggingMessageNotificationParam> {
        self.tx.subscribe()
    }
}

/// One session's `logging/setLevel`: the lowest level it is sent.
pub(crate) struct Threshold(AtomicU8);

impl Default for Threshold {
    fn default() -> Self {
        Self(AtomicU8::new(rank(&LoggingLevel::Info)))
    }
}

impl Threshold {
    pub(crate) fn set(&self, level: &LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }

    fn admits(&self, level: &LoggingLevel) -> bool {
        rank(level) >= self.0.load(Ordering::Relaxed)
    }
}

/// RFC 5424 severity, least severe first.
fn rank(level: &LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The message for a watched file's status, when it carries a reload error.
pub(crate) fn reload_error(status: &FileStatus) -> Option<LoggingMessageNotificationParam> {
    let error = status.last_error.as_ref()?;
    let serving =
        if status.sha256.is_empty() { "nothing from this file serves" } else { "the previous version keeps serving" };
    let data = json!({
        "event": "reload-error",
        "file": line(&status.file.display().to_string()),
        "name": status.name.as_deref().map(line),
        "error": block(error),
        "serving": serving,
        "serving_sha256": line(&status.sha256),
    });
    Some(LoggingMessageNotificationParam::new(LoggingLevel::Error, data).with_logger("toolhost.reload"))
}

/// The message for a plugin file whose background load failed (its tool
/// is missing from the list).
pub(crate) fn load_error(failed: &FailedLoad) -> LoggingMessageNotificationParam {
    let data = json!({
        "event": "load-error",
        "file": line(&failed.file.display().to_string()),
        "sha256": line(&failed.sha256),
        "error": block(&failed.error),
    });
    LoggingMessageNotificationParam::new(LoggingLevel::Error, data).with_logger("toolhost.load")
}

/// Sends `peer` every background load of `host` that failed, those before
/// this session began included, each once (as its `threshold` admits it),
/// until either token of `until` fires or the peer is gone.
pub(crate) async fn forward_load_failures(
    host: Toolhost,
    threshold: std::sync::Arc<Threshold>,
    until: [CancellationToken; 2],
    peer: Peer<RoleServer>,
) {
    let mut changes = host.load_changes();
    let mut sent = 0;
    loop {
        // Failures are only ever added, in order.
        for failed in host.failed_loads().iter().skip(sent) {
            sent += 1;
            if threshold.admits(&LoggingLevel::Error) && peer.notify_logging_message(load_error(failed)).await.is_err()
            {
                return;
            }
        }
        tokio::select! {
            () = until[0].cancelled() => return,
            () = until[1].cancelled() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
    }
}

/// Sends the server's messages to `peer` (as its `threshold` admits them)
/// until either token of `until` fires or the peer is gone.
pub(crate) async fn forward_to(
    mut messages: broadcast::Receiver<LoggingMessageNotificationParam>,
    threshold: std::sync::Arc<Threshold>,
    until: [CancellationToken; 2],
    peer: Peer<RoleServer>,
) {
    loop {
        let message = tokio::select! {
            () = until[0].cancelled() => return,
            () = until[1].cancelled() => return,
            message = messages.recv() => message,
        };
        let message = match message {
            Ok(message) => message,
            Err(broadcast::error::RecvError::Lagged(missed)) => LoggingMessageNotificationParam::new(
                LoggingLevel::Warning,
                json!({"event": "messages-missed", "missed": missed}),
            )
            .with_logger("toolhost"),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if threshold.admits(&message.level) && peer.notify_logging_message(message).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_admits_its_level_and_above() {
        let threshold = Threshold::default();
        assert!(!threshold.admits(&LoggingLevel::Debug) && threshold.admits(&LoggingLevel::Info));
        threshold.set(&LoggingLevel::Critical);
        assert!(!threshold.admits(&LoggingLevel::Error) && threshold.admits(&LoggingLevel::Emergency));
    }

    #[test]
    fn only_a_status_with_an_error_is_a_message() {
        let mut status = FileStatus {
            file: "/p/swap.wasm".into(),
            kind: toolhost::reload::FileKind::Tool,
            name: Some("Swap".into()),
            sha256: "ab".into(),
            grants: "nothing".into(),
            last_error: None,
        };
        assert!(reload_error(&status).is_none());
        status.last_error = Some("does not compile".into());
        let message = reload_error(&status).expect("a message");
        assert_eq!(message.logger.as_deref(), Some("toolhost.reload"));
        assert_eq!(message.data["error"], "does not compile");
        assert_eq!(message.data["serving"], "the previous version keeps serving");
    }

    #[test]
    fn a_message_shows_someone_else_s_text_escaped() {
        let hostile = "evil\u{202e}\u{2066}\u{9b}\u{7f}\x1b[2J\u{200b}";
        let status = FileStatus {
            file: format!("/p/{hostile}.wasm").into(),
            kind: toolhost::reload::FileKind::Tool,
            name: None,
            sha256: String::new(),
            grants: "nothing".into(),
            last_error: Some(format!("line one\n{hostile}")),
        };
        let data = reload_error(&status).expect("a message").data;
        let shown = "evil\\u{202e}\\u{2066}\\u{009b}\\x7f\\x1b[2J\\u{200b}";
        assert_eq!(data["file"], format!("/p/{shown}.wasm"));
        assert_eq!(data["error"], format!("line one\n{shown}"));
        let failed = FailedLoad { file: status.file.clone(), sha256: "ab".into(), error: hostile.into() };
        assert_eq!(load_error(&failed).data["error"], shown);
    }
}
