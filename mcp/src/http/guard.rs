//! What every HTTP request passes before rmcp sees it: the token (in
//! constant time), the `Origin` (exactly), the body's declared size (413 at
//! once), its real size and time; then a long-lived stream takes a stream
//! slot (or is refused with 503), giving back the connection slot it held,
//! and an `initialize` is refused with 503 when no session can be made. A
//! call that waits for the user's answer trades its slot the same way
//! ([`park`]); a later request on its connection takes a connection slot
//! again.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolhost::sync::MutexExt;

use super::origin::AllowedOrigins;
use super::sessions::{BoundedSessions, full_message};
use super::streams::{Full, Peer, StreamPermit, StreamSlots};

/// How long a client refused a stream or a session is told to wait.
const RETRY_AFTER_SECONDS: &str = "5";

/// The checks and bounds, shared by every request.
pub(crate) struct Guard {
    pub(crate) token: Option<String>,
    pub(crate) origins: AllowedOrigins,
    pub(crate) max_body_bytes: usize,
    pub(crate) body_timeout: Duration,
    pub(crate) sessions: Arc<BoundedSessions>,
    pub(crate) max_sessions: usize,
}

/// One accepted connection: whose it is, and the connection slot it holds
/// while it serves requests (a request extension).
pub(crate) struct Connection {
    peer: Peer,
    /// The connection slots, to take one again after giving it back.
    slots: Arc<Semaphore>,
    streams: Arc<StreamSlots>,
    slot: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Connection {
    pub(crate) fn new(
        peer: Peer,
        slots: Arc<Semaphore>,
        streams: Arc<StreamSlots>,
        slot: OwnedSemaphorePermit,
    ) -> Self {
        Self { peer, slots, streams, slot: Mutex::new(Some(slot)) }
    }

    /// The connection now carries a stream, or waits on a question,
    /// bounded by the stream slots: the connection slot is free for
    /// requests again.
    fn give_back_slot(&self) {
        self.slot.lock_unpoisoned().take();
    }

    /// Whether the connection holds a connection slot, taking a free one
    /// if it gave its own back (a request after an answered question).
    fn has_slot(&self) -> bool {
        let mut slot = self.slot.lock_unpoisoned();
        if slot.is_none() {
            *slot = self.slots.clone().try_acquire_owned().ok();
        }
        slot.is_some()
    }

    /// Trades the connection slot for a stream slot while the request waits
    /// for something that may take long (the user's answer).
    fn park(&self) -> Result<StreamPermit, Full> {
        let permit = self.streams.take(self.peer)?;
        self.give_back_slot();
        Ok(permit)
    }
}

/// For a request that is about to wait for the user's answer (an
/// elicitation): its connection slot is given back and a stream slot taken
/// until the returned permit is dropped, so unanswered questions are bounded
/// like streams and cannot hold the slots calls need. `Ok(None)` for a
/// request that came over no connection of ours (stdio); `Err` with the
/// reason when this client address has as many streams and waiting
/// questions as it may.
pub(crate) fn park(ctx: &RequestContext<RoleServer>) -> Result<Option<StreamPermit>, String> {
    let connection =
        ctx.extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<Arc<Connection>>());
    match connection {
        None => Ok(None),
        Some(connection) => connection.park().map(Some).map_err(|full| full.to_string()),
    }
}

/// What a request is, for the bounds.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// A long-lived stream: a GET stream (2025-11-25) or a
    /// `subscriptions/listen` (2026-07-28).
    Stream,
    /// An `initialize` that makes a new 2025-11-25 session.
    Initialize,
    /// Anything else (`tools/call` among them): served on a connection slot.
    Request,
}

fn kind(method: &Method, has_session: bool, body: &[u8]) -> Kind {
    if method == Method::GET {
        return Kind::Stream;
    }
    if method != Method::POST {
        return Kind::Request;
    }
    #[derive(serde::Deserialize)]
    struct Probe {
        method: Option<String>,
    }
    match serde_json::from_slice::<Probe>(body).ok().and_then(|p| p.method).as_deref() {
        Some("subscriptions/listen") => Kind::Stream,
        Some("initialize") if !has_session => Kind::Initialize,
        _ => Kind::Request,
    }
}

/// The token, the origin and the body's size and time; then the stream and
/// session bounds.
pub(crate) async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(token) = &guard.token {
        let sent = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same(sent.as_bytes(), token.as_bytes()) {
            let mut response =
                (StatusCode::UNAUTHORIZED, "missing or wrong bearer token (Authorization: Bearer T)").into_response();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        if !guard.origins.admits(&origin) {
            let text = format!(
                "Origin {origin:?} may not call this server (a browser page of another site); \
                 allow it with --allowed-origin scheme://host:port"
            );
            return (StatusCode::FORBIDDEN, text).into_response();
        }
    }
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > guard.max_body_bytes as u64) {
        return closing(too_large(guard.max_body_bytes));
    }
    let connection = request.extensions().get::<Arc<Connection>>().cloned();
    if connection.as_ref().is_some_and(|c| !c.has_slot()) {
        return busy("toolhost serve is serving as many requests at once as it may; retry shortly".to_string());
    }
    let (parts, body) = request.into_parts();
    let body = match tokio::time::timeout(guard.body_timeout, axum::body::to_bytes(body, guard.max_body_bytes)).await {
        Err(_) => return closing((StatusCode::REQUEST_TIMEOUT, "the request body took too long").into_response()),
        Ok(Err(_)) => return closing(too_large(guard.max_body_bytes)),
        Ok(Ok(bytes)) => bytes,
    };
    let kind = kind(&parts.method, parts.headers.contains_key("mcp-session-id"), &body);
    let request = Request::from_parts(parts, Body::from(body));
    match kind {
        Kind::Request => next.run(request).await,
        Kind::Initialize => {
            if !guard.sessions.has_room() {
                return busy(full_message(guard.max_sessions));
            }
            next.run(request).await
        }
        Kind::Stream => {
            let Some(connection) = connection else { return next.run(request).await };
            let permit = match connection.streams.take(connection.peer) {
                Ok(permit) => permit,
                Err(full) => return busy(full.to_string()),
            };
            let response = next.run(request).await;
            let is_stream = response.status() == StatusCode::OK
                && response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            if !is_stream {
                return response;
            }
            connection.give_back_slot();
            // The connection ends with its stream.
            let (mut parts, body) = response.into_parts();
            parts.headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            Response::from_parts(parts, Body::new(Held { body, _permit: permit }))
        }
    }
}

fn too_large(max: usize) -> Response {
    (StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is over {max} bytes")).into_response()
}

/// 503 with `Retry-After`, and the connection closed.
fn busy(text: String) -> Response {
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, text).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
    closing(response)
}

/// `response` with `Connection: close` (a body left unread, or a refusal).
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Equal in constant time for equal lengths (the length is not secret).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A stream's body, holding its stream slot until it ends or is dropped.
struct Held {
    body: Body,
    _permit: StreamPermit,
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"ab", b"abc"));
    }

    #[test]
    fn streams_initializes_and_requests_are_told_apart() {
        let listen = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}"#;
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert_eq!(kind(&Method::GET, true, b""), Kind::Stream);
        assert_eq!(kind(&Method::POST, false, listen), Kind::Stream);
        assert_eq!(kind(&Method::POST, false, init), Kind::Initialize);
        assert_eq!(kind(&Method::POST, true, init), Kind::Request, "inside a session, rmcp refuses it");
        assert_eq!(kind(&Method::POST, true, call), Kind::Request);
        assert_eq!(kind(&Method::POST, false, b"[1,2]"), Kind::Request);
        assert_eq!(kind(&Method::DELETE, true, b""), Kind::Request);
    }
}
