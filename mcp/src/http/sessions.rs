//! 2025-11-25 sessions, bounded: rmcp's [`LocalSessionManager`] keeps them
//! (each about 64 KiB before it holds any agent state, and for 300 s of
//! silence by default), so a client that sends `initialize` after
//! `initialize` grew the server without end. [`BoundedSessions`] wraps it:
//! at most `max` sessions live; the next one takes the place of the one idle
//! longest (a session that never made a request after `initialize` first),
//! never of one with a request or stream open; and a session that has made
//! no request since `initialize` is closed after `unused_timeout`.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use futures::StreamExt as _;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio_util::sync::CancellationToken;
use toolhost::sync::MutexExt;

use super::crossing::{Answer, RequestIds};

/// How many sessions live at once, and how long one may stay unused.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    pub(crate) max: usize,
    /// How long a session may live without making a request after
    /// `initialize`.
    pub(crate) unused_timeout: Duration,
    /// How long any session may stay silent (rmcp's keep-alive).
    pub(crate) idle_timeout: Duration,
}

/// rmcp's session manager with a bound on the sessions it keeps.
pub(crate) struct BoundedSessions {
    inner: LocalSessionManager,
    /// When the deployment's replicas share sessions: the request ids made
    /// the deployment's, and the front that forwards another replica's
    /// answers (`crossing.rs`).
    crossing: Option<(RequestIds, crate::McpFront)>,
    limits: SessionLimits,
    table: Arc<Mutex<Table>>,
    /// Where the number of live sessions is shown (`toolhost_http_sessions`).
    metrics: std::sync::OnceLock<Arc<toolhost::telemetry::Metrics>>,
    /// Sessions restored here whose handshake is being replayed: a request
    /// of one waits until it is (rmcp asks `has_session` first, and a
    /// request reaching the worker before the replayed `initialize` ends
    /// the worker).
    restoring: Mutex<HashMap<SessionId, tokio::sync::watch::Sender<bool>>>,
}

/// The longest a request waits for its session's restore to finish.
const RESTORE_WAIT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Table {
    live: HashMap<SessionId, Use>,
    /// Sessions being created (counted against the bound already).
    creating: usize,
}

struct Use {
    /// When the session began, or its last request or stream began or ended.
    last: Instant,
    /// Whether a request or stream came after `initialize`.
    used: bool,
    /// Requests and streams open now: a busy session is never evicted.
    busy: usize,
}

/// Why a session was not created.
#[derive(Debug)]
pub(crate) enum SessionsError {
    /// rmcp's own error.
    Local(LocalSessionManagerError),
    /// Every session is busy and the bound is reached.
    Full(usize),
}

impl std::fmt::Display for SessionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionsError::Local(e) => e.fmt(f),
            SessionsError::Full(max) => write!(f, "{}", full_message(*max)),
        }
    }
}

impl std::error::Error for SessionsError {}

impl From<LocalSessionManagerError> for SessionsError {
    fn from(e: LocalSessionManagerError) -> Self {
        SessionsError::Local(e)
    }
}

/// What a client is told when no session can be made.
pub(crate) fn full_message(max: usize) -> String {
    format!(
        "toolhost serve holds {max} MCP sessions and each has a request or stream open; \
         retry shortly (or use protocol 2026-07-28, which needs no session)"
    )
}

impl BoundedSessions {
    /// Sessions within `limits`, for one process.
    #[cfg(test)]
    pub(crate) fn new(limits: SessionLimits) -> Arc<Self> {
        Self::shared(limits, None, None)
    }

    /// Sessions within `limits`; with `events` (a deployment's shared log)
    /// any replica resumes their streams, and with `crossing` (this
    /// replica's request ids and its front) an answer posted through any
    /// replica reaches the worker that asked.
    pub(crate) fn shared(
        limits: SessionLimits,
        events: Option<Arc<dyn EventStore>>,
        crossing: Option<(RequestIds, crate::McpFront)>,
    ) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        if let Some(events) = events {
            inner = inner.with_event_store(events);
        }
        inner.session_config.keep_alive = Some(limits.idle_timeout);
        Arc::new(Self {
            inner,
            crossing,
            limits,
            table: Arc::default(),
            metrics: Default::default(),
            restoring: Mutex::default(),
        })
    }

    /// `stream` with this replica's request ids made the deployment's.
    fn outgoing<S>(&self, stream: S) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        let ids = self.crossing.as_ref().map(|(ids, _)| ids.clone());
        stream.map(move |event| match &ids {
            Some(ids) => ids.outgoing_event(event),
            None => event,
        })
    }

    /// Shows the number of live sessions in `metrics`, brought up to date
    /// every second by [`BoundedSessions::close_unused`].
    pub(crate) fn count_in(&self, metrics: Arc<toolhost::telemetry::Metrics>) {
        let _ = self.metrics.set(metrics);
    }

    /// Whether an `initialize` would get a session now (a place is free, or
    /// one can be evicted).
    pub(crate) fn has_room(&self) -> bool {
        let table = self.table.lock_unpoisoned();
        table.live.len() + table.creating < self.limits.max || table.live.values().any(|u| u.busy == 0)
    }

    /// Closes the sessions that stayed unused past their time, every second
    /// (or more often for a shorter time) until `until` fires.
    pub(crate) async fn close_unused(self: Arc<Self>, until: CancellationToken) {
        let every = self.limits.unused_timeout.clamp(Duration::from_millis(10), Duration::from_secs(1));
        loop {
            tokio::select! {
                () = until.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            let expired: Vec<SessionId> = {
                let mut table = self.table.lock_unpoisoned();
                let timeout = self.limits.unused_timeout;
                let expired: Vec<SessionId> = table
                    .live
                    .iter()
                    .filter(|(_, u)| !u.used && u.busy == 0 && u.last.elapsed() >= timeout)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &expired {
                    table.live.remove(id);
                }
                if let Some(metrics) = self.metrics.get() {
                    metrics.http_sessions.set(table.live.len() as i64);
                }
                expired
            };
            for id in expired {
                self.close_inner(&id).await;
            }
        }
    }

    /// Takes a place for a new session, evicting the session idle longest
    /// (unused ones first) when the bound is reached; `Err` when every
    /// session is busy.
    fn reserve(&self) -> Result<Option<SessionId>, SessionsError> {
        let mut table = self.table.lock_unpoisoned();
        let mut evicted = None;
        if table.live.len() + table.creating >= self.limits.max {
            let victim = table
                .live
                .iter()
                .filter(|(_, u)| u.busy == 0)
                .min_by_key(|(_, u)| (u.used, u.last))
                .map(|(id, _)| id.clone())
                .ok_or(SessionsError::Full(self.limits.max))?;
            table.live.remove(&victim);
            evicted = Some(victim);
        }
        table.creating += 1;
        Ok(evicted)
    }

    /// The restore of `id` ended, its handshake replayed or not: the
    /// requests waiting for it go on.
    fn restored(&self, id: &SessionId) {
        if let Some(done) = self.restoring.lock_unpoisoned().remove(id) {
            done.send_replace(true);
        }
    }

    async fn close_inner(&self, id: &SessionId) {
        self.restored(id);
        if let Err(e) = self.inner.close_session(id).await {
            tracing::warn!("closing MCP session failed: {e}");
        }
    }

    /// Closes the worker of the session whose id has the SHA-256 `digest`
    /// (another replica deleted it), if this process has one.
    pub(crate) async fn close_by_digest(&self, digest: &str) {
        if let Some(id) = self.by_digest(digest) {
            self.table.lock_unpoisoned().live.remove(&id);
            self.close_inner(&id).await;
        }
    }

    /// The live session whose id has the SHA-256 `digest`.
    fn by_digest(&self, digest: &str) -> Option<SessionId> {
        let table = self.table.lock_unpoisoned();
        table.live.keys().find(|id| crate::shared_sessions::digest(id) == digest).cloned()
    }

    /// Marks session `id` used and busy until the returned guard is dropped.
    fn busy(&self, id: &SessionId) -> Busy {
        if let Some(u) = self.table.lock_unpoisoned().live.get_mut(id) {
            u.last = Instant::now();
            u.used = true;
            u.busy += 1;
        }
        Busy { table: self.table.clone(), id: id.clone() }
    }

    #[cfg(test)]
    fn live(&self) -> Vec<SessionId> {
        self.table.lock_unpoisoned().live.keys().cloned().collect()
    }
}

/// A request or stream of a session, open.
struct Busy {
    table: Arc<Mutex<Table>>,
    id: SessionId,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(u) = self.table.lock_unpoisoned().live.get_mut(&self.id) {
            u.last = Instant::now();
            u.busy = u.busy.saturating_sub(1);
        }
    }
}

/// A session's response stream, which keeps its session busy while open.
struct Tracked<S> {
    inner: Pin<Box<S>>,
    _busy: Busy,
}

impl<S: Stream> Stream for Tracked<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// This process's workers as the other replicas reach them (`fanout.rs`).
/// Weak: the sessions hold the front, whose fan-out holds this.
pub(crate) struct Workers(pub(crate) std::sync::Weak<BoundedSessions>);

impl crate::fanout::LocalSessions for Workers {
    fn close(&self, digest: String) {
        let Some(sessions) = self.0.upgrade() else { return };
        tokio::spawn(async move { sessions.close_by_digest(&digest).await });
    }

    fn deliver(&self, digest: String, answer: ClientJsonRpcMessage) {
        let Some(sessions) = self.0.upgrade() else { return };
        tokio::spawn(async move {
            let Some((ids, _)) = &sessions.crossing else { return };
            let (Some(id), Some(answer)) = (sessions.by_digest(&digest), ids.forwarded(answer)) else { return };
            if let Err(e) = sessions.inner.accept_message(&id, answer).await {
                tracing::debug!("an answer forwarded by another replica found no waiting request: {e}");
            }
        });
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if let Some(evicted) = self.reserve()? {
            tracing::debug!("evicting the MCP session idle longest to make room");
            self.close_inner(&evicted).await;
        }
        let created = self.inner.create_session().await;
        let mut table = self.table.lock_unpoisoned();
        table.creating -= 1;
        let (id, transport) = created?;
        table.live.insert(id.clone(), Use { last: Instant::now(), used: false, busy: 0 });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let initialized = self.inner.initialize_session(id, message).await;
        if initialized.is_err() {
            self.restored(id);
        }
        Ok(initialized?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        let restoring = self.restoring.lock_unpoisoned().get(id).map(tokio::sync::watch::Sender::subscribe);
        if let Some(mut done) = restoring {
            let _ = tokio::time::timeout(RESTORE_WAIT, done.wait_for(|done| *done)).await;
        }
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.restored(id);
        self.table.lock_unpoisoned().live.remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.busy(id);
        let stream = self.outgoing(self.inner.create_stream(id, message).await?);
        Ok(Tracked { inner: Box::pin(stream), _busy: busy })
    }

    /// A notification or an answer to the server's request: not a use of
    /// the session, nor does it keep an unused one (a client sending
    /// notifications only) from closing.
    ///
    /// An answer to a request another replica's worker sent goes to that
    /// replica (`crossing.rs`).
    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        let message = match &self.crossing {
            Some((ids, front)) => match ids.incoming(message) {
                Answer::Here(message) => message,
                Answer::Elsewhere { owner, message } => {
                    front.forward_answer(owner, crate::shared_sessions::digest(id), &message).await;
                    return Ok(());
                }
            },
            None => message,
        };
        let accepted = self.inner.accept_message(id, message).await;
        // The first message a restored session accepts is its replayed
        // `initialized` notification, the handshake's last step (every
        // other request waits in `has_session`).
        self.restored(id);
        Ok(accepted?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.busy(id);
        let stream = self.outgoing(self.inner.create_standalone_stream(id).await?);
        Ok(Tracked { inner: Box::pin(stream), _busy: busy })
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.busy(id);
        let stream = self.outgoing(self.inner.resume(id, last_event_id).await?);
        Ok(Tracked { inner: Box::pin(stream), _busy: busy })
    }

    /// A session another replica began (its record in the shared store),
    /// taken here: bounded as a new one is, and counted used.
    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        if let Some(evicted) = self.reserve()? {
            tracing::debug!("evicting the MCP session idle longest to make room");
            self.close_inner(&evicted).await;
        }
        let restored = self.inner.restore_session(id.clone()).await;
        let mut table = self.table.lock_unpoisoned();
        table.creating -= 1;
        let restored = restored?;
        if matches!(restored, RestoreOutcome::Restored(_)) {
            table.live.insert(id.clone(), Use { last: Instant::now(), used: true, busy: 0 });
            self.restoring.lock_unpoisoned().insert(id, tokio::sync::watch::channel(false).0);
        }
        Ok(restored)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize) -> SessionLimits {
        SessionLimits { max, unused_timeout: Duration::from_secs(3600), idle_timeout: Duration::from_secs(3600) }
    }

    #[tokio::test]
    async fn the_bound_evicts_unused_then_the_idlest_and_never_a_busy_session() {
        let sessions = BoundedSessions::new(limits(3));
        let live = |want: &[&SessionId]| {
            let mut live = sessions.live();
            live.sort();
            let mut want: Vec<SessionId> = want.iter().map(|id| (*id).clone()).collect();
            want.sort();
            assert_eq!(live, want);
        };
        let a = sessions.create_session().await.unwrap().0;
        let _b = sessions.create_session().await.unwrap().0;
        let c = sessions.create_session().await.unwrap().0;
        // c opens a stream (and is idle longest from now on); a makes a
        // request; b never does.
        let c_open = sessions.busy(&c);
        drop(sessions.busy(&a));
        // The unused session goes first: b, then d (though a is idle longer).
        let d = sessions.create_session().await.unwrap().0;
        live(&[&a, &c, &d]);
        let e = sessions.create_session().await.unwrap().0;
        live(&[&a, &c, &e]);
        // Among used sessions the idlest goes, never one with a stream open.
        drop(sessions.busy(&e));
        let f = sessions.create_session().await.unwrap().0;
        live(&[&c, &e, &f]);
        assert!(!sessions.inner.has_session(&a).await.unwrap(), "an evicted session is closed in rmcp too");
        drop(c_open);
    }

    /// A request of a session being restored here waits until its
    /// handshake is replayed: reaching the worker before the replayed
    /// `initialize` would end it.
    #[tokio::test]
    async fn a_request_waits_for_the_restore_of_its_session() {
        use rmcp::model::{ClientNotification, InitializedNotification};
        let sessions = BoundedSessions::new(limits(3));
        let id: SessionId = "restored-here".into();
        let RestoreOutcome::Restored(_worker) = sessions.restore_session(id.clone()).await.unwrap() else {
            panic!("a session this process does not have is restored");
        };
        let waiting = tokio::spawn({
            let (sessions, id) = (sessions.clone(), id.clone());
            async move { sessions.has_session(&id).await.unwrap() }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "the request waits while the handshake is replayed");
        let initialized = ClientJsonRpcMessage::notification(ClientNotification::InitializedNotification(
            InitializedNotification::default(),
        ));
        let _ = sessions.accept_message(&id, initialized).await;
        let found = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("it goes on").unwrap();
        assert!(found, "and finds the session");
    }

    #[tokio::test]
    async fn when_every_session_is_busy_there_is_no_room() {
        let sessions = BoundedSessions::new(limits(2));
        let a = sessions.create_session().await.unwrap().0;
        let b = sessions.create_session().await.unwrap().0;
        let (held_a, held_b) = (sessions.busy(&a), sessions.busy(&b));
        assert!(!sessions.has_room());
        let e = sessions.create_session().await.err().expect("full");
        assert!(e.to_string().contains("2 MCP sessions"), "{e}");
        drop(held_a);
        assert!(sessions.has_room());
        drop(held_b);
    }

    #[tokio::test]
    async fn an_unused_session_is_closed_after_its_time_and_a_used_one_is_kept() {
        let sessions = BoundedSessions::new(SessionLimits { unused_timeout: Duration::from_millis(50), ..limits(10) });
        let unused = sessions.create_session().await.unwrap().0;
        let used = sessions.create_session().await.unwrap().0;
        drop(sessions.busy(&used));
        let stop = CancellationToken::new();
        let closing = tokio::spawn(sessions.clone().close_unused(stop.clone()));
        while sessions.live().contains(&unused) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!sessions.inner.has_session(&unused).await.unwrap());
        assert!(sessions.live().contains(&used));
        stop.cancel();
        closing.await.unwrap();
    }
}
