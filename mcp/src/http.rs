//! MCP streamable HTTP: loopback unless a token guards it, the token
//! checked on every request, `Origin` validated, bodies bounded in size and
//! time, headers bounded in time, connections bounded in number, and a
//! graceful stop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::{McpFront, SETTLE};

/// The most connections served at once; the next waits for one to close
/// (at most the header timeout), then is answered 503.
const MAX_CONNECTIONS: usize = 512;

/// How `toolhost serve --http` listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to bind.
    pub addr: SocketAddr,
    /// The bearer token every request must carry (required off loopback).
    pub token: Option<String>,
    /// Browser origins allowed to call (`scheme://host:port`); a request
    /// with any other `Origin` header is refused. Requests without one
    /// (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// Host names (besides the loopback ones and the bound address) the
    /// `Host` header may carry: the DNS-rebinding defence.
    pub allowed_hosts: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// How long running calls may finish after a stop before they are
    /// cancelled.
    pub grace: Duration,
    /// How long a client may take to send a request's headers (also how
    /// long an idle connection is kept).
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body (then 408).
    pub body_timeout: Duration,
}

impl HttpOptions {
    /// Options for `addr` with the defaults: no token, no browser origin,
    /// 4 MiB bodies, 10 s grace, headers within 10 s, bodies within 30 s.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            token: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            grace: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
        }
    }

    /// Refuses a reachable address without a token, and an empty token.
    fn check(&self) -> Result<()> {
        if self.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            bail!("the token is empty: give a long random one with --token or --token-file");
        }
        if !self.addr.ip().is_loopback() && self.token.is_none() {
            bail!(
                "refusing to serve on {} without a token: a non-loopback address is reachable from other machines; \
                 pass --token T or --token-file FILE (clients send `Authorization: Bearer T`), or bind 127.0.0.1",
                self.addr
            );
        }
        Ok(())
    }
}

struct Guard {
    token: Option<String>,
    max_body_bytes: usize,
    body_timeout: Duration,
}

/// Serves `front` over streamable HTTP at `/mcp` until `stop` resolves;
/// then stops accepting connections and calls, lets running calls finish
/// for the grace period, and cancels what remains (killing their
/// processes). `bound` is told the bound address
/// (useful with port 0).
pub async fn serve_http(
    front: McpFront,
    options: HttpOptions,
    bound: impl FnOnce(SocketAddr),
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    options.check()?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("binding {} (is the port in use?)", options.addr))?;
    let addr = listener.local_addr()?;
    let cancel = CancellationToken::new();
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string(), addr.ip().to_string()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(options.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(cancel.child_token());
    let sessions = front.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(sessions.for_new_session()),
        LocalSessionManager::default().into(),
        config,
    );
    let guard = Arc::new(Guard {
        token: options.token.clone(),
        max_body_bytes: options.max_body_bytes,
        body_timeout: options.body_timeout,
    });
    let router =
        axum::Router::new().nest_service("/mcp", mcp).layer(axum::middleware::from_fn_with_state(guard, check_request));
    bound(addr);
    accept(listener, router, &front, &options, cancel, stop).await
}

async fn accept(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    front: &McpFront,
    options: &HttpOptions,
    cancel: CancellationToken,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let waiters = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let service = hyper_util::service::TowerToHyperService::new(router);
    tokio::pin!(stop);
    loop {
        let (stream, _) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accepting a connection failed: {e}");
                    continue;
                }
            },
        };
        // A response goes out in several writes (head, then the SSE event);
        // with Nagle's algorithm on, the second waits for the client's
        // delayed ACK: 40 ms a call for a client that sends each request in
        // one write.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::warn!("setting TCP_NODELAY failed: {e}");
        }
        // Past the limit a connection waits for a slot, at most the header
        // timeout, then is answered 503 and closed: load delays a call by a
        // bounded time, and a refusal says why. As many may wait as may be
        // served; more are refused at once.
        let slot = slots.clone().try_acquire_owned();
        let waiter = if slot.is_err() { waiters.clone().try_acquire_owned().ok() } else { None };
        if slot.is_err() && waiter.is_none() {
            tokio::spawn(refuse_busy(stream));
            continue;
        }
        let (slots, watcher, timeout) = (slots.clone(), graceful.watcher(), options.header_timeout);
        let service = service.clone();
        tokio::spawn(async move {
            let slot = match slot {
                Ok(slot) => slot,
                Err(_) => match tokio::time::timeout(timeout, slots.acquire_owned()).await {
                    Ok(Ok(slot)) => slot,
                    _ => return refuse_busy(stream).await,
                },
            };
            drop(waiter);
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(timeout)
                .serve_connection(TokioIo::new(stream), service);
            let _ = watcher.watch(conn).await;
            drop(slot);
        });
    }
    drop(listener);
    // No new connections or calls; connections close once answered.
    front.stop_new_work();
    let closing = tokio::spawn(graceful.shutdown());
    if !front.drain(options.grace).await {
        tracing::warn!("calls still running after the grace period are cancelled");
    }
    if tokio::time::timeout(SETTLE, closing).await.is_err() {
        // Streams that never end by themselves (a legacy client's GET
        // stream, calls past the grace period) are closed now.
        cancel.cancel();
    }
    Ok(())
}

/// The token (compared in constant time) and the body's size and time
/// limits, before the request reaches MCP.
async fn check_request(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
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
    let (parts, body) = request.into_parts();
    let body = match tokio::time::timeout(guard.body_timeout, axum::body::to_bytes(body, guard.max_body_bytes)).await {
        Err(_) => return (StatusCode::REQUEST_TIMEOUT, "the request body took too long").into_response(),
        Ok(Err(_)) => {
            return (StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is over {} bytes", guard.max_body_bytes))
                .into_response();
        }
        Ok(Ok(bytes)) => bytes,
    };
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// Equal in constant time for equal lengths (the length is not secret).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Answers a connection that found no free slot: 503, and closed.
async fn refuse_busy(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt as _;
    let body = format!("toolhost serve is serving {MAX_CONNECTIONS} connections at once; retry shortly\n");
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reachable_address_needs_a_token() {
        let open = HttpOptions::new("0.0.0.0:8080".parse().unwrap());
        let e = open.check().unwrap_err().to_string();
        assert!(e.contains("--token"), "{e}");
        assert!(HttpOptions { token: Some("s3cret".into()), ..open.clone() }.check().is_ok());
        assert!(HttpOptions { token: Some(" ".into()), ..open }.check().is_err());
        assert!(HttpOptions::new("127.0.0.1:0".parse().unwrap()).check().is_ok());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"ab", b"abc"));
    }
}
