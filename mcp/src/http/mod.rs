//! MCP streamable HTTP: loopback unless a token guards it, the token
//! checked on every request, `Origin` matched exactly, bodies bounded in
//! size and time, headers bounded in time, writes bounded in time,
//! connections, long-lived streams and sessions bounded in number, and a
//! graceful stop.
//!
//! Two kinds of slot: a connection holds a *connection slot* while it
//! serves requests (`tools/call` among them); a long-lived stream (a
//! `subscriptions/listen`, a 2025-11-25 GET stream), and a call while it
//! waits for the user's answer to an elicitation ([`park`]), take a
//! *stream slot* instead (`guard.rs`, `streams.rs`), so streams no one
//! reads and questions no one answers never take the slots a new client's
//! call needs.

pub(crate) mod crossing;
mod deadline;
pub(crate) mod event_log;
mod guard;
mod health;
mod origin;
mod sessions;
mod streams;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

pub(crate) use guard::park;
pub(crate) use guard::same as same_token;

use crate::{McpFront, SETTLE};
use deadline::WriteDeadline;
use guard::{Connection, Guard};
use origin::AllowedOrigins;
use sessions::{BoundedSessions, SessionLimits};
use streams::{Peer, StreamSlots};

/// How `toolhost serve --http` listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to bind.
    pub addr: SocketAddr,
    /// The bearer token every request must carry (required off loopback).
    pub token: Option<String>,
    /// Browser origins allowed to call (`scheme://host[:port]`, matched
    /// exactly: no port means the scheme's default port; `scheme://host:*`
    /// any port; `null`); a request with any other `Origin` header is
    /// refused. Requests without one (non-browser clients) pass.
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
    /// How long a write may wait for the client to read before the
    /// connection (a stream, an answer) is dropped.
    pub write_timeout: Duration,
    /// Connections serving requests at once; the next waits for one to
    /// close (at most the header timeout), then is answered 503. Streams
    /// do not count.
    pub max_connections: usize,
    /// Long-lived streams (`subscriptions/listen`, GET streams) and calls
    /// waiting for the user's answer to an elicitation, at once.
    pub max_streams: usize,
    /// The same, for one client address (an IPv6 /64).
    pub max_streams_per_peer: usize,
    /// Live 2025-11-25 sessions; the next evicts the one idle longest, or is
    /// answered 503 when every session has a request or stream open.
    pub max_sessions: usize,
    /// How long a session may stay silent before it is closed.
    pub session_idle_timeout: Duration,
    /// How long a session that has made no request since `initialize` is
    /// kept.
    pub unused_session_timeout: Duration,
}

impl HttpOptions {
    /// Options for `addr` with the defaults: no token, no browser origin,
    /// 4 MiB bodies, 10 s grace, headers within 10 s, bodies within 30 s,
    /// writes within 30 s, 512 connections, 256 streams (32 per client
    /// address), 1000 sessions kept while they speak at least every 300 s
    /// (60 s until their first request).
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
            write_timeout: Duration::from_secs(30),
            max_connections: 512,
            max_streams: 256,
            max_streams_per_peer: 32,
            max_sessions: 1000,
            session_idle_timeout: Duration::from_secs(300),
            unused_session_timeout: Duration::from_secs(60),
        }
    }

    /// Refuses a reachable address without a token, an empty token, a
    /// bound of zero and a zero time.
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
        for (n, flag) in [
            (self.max_connections, "--max-connections"),
            (self.max_streams, "--max-streams"),
            (self.max_streams_per_peer, "--max-streams-per-peer"),
            (self.max_sessions, "--max-sessions"),
        ] {
            if n == 0 {
                bail!("{flag} must be at least 1");
            }
        }
        for (t, flag) in [
            (self.write_timeout, "--write-timeout"),
            (self.session_idle_timeout, "--session-idle-timeout"),
            (self.unused_session_timeout, "--unused-session-timeout"),
        ] {
            if t.is_zero() {
                bail!("{flag} must be more than 0 seconds");
            }
        }
        Ok(())
    }
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
    let origins = AllowedOrigins::parse(&options.allowed_origins)?;
    let listener = listen(options.addr, options.max_connections)
        .with_context(|| format!("binding {} (is the port in use?)", options.addr))?;
    let addr = listener.local_addr()?;
    let cancel = CancellationToken::new();
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string(), addr.ip().to_string()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    // toolhost checks the origin first (exactly); rmcp checks it again.
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins.for_rmcp())
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(cancel.child_token());
    let limits = SessionLimits {
        max: options.max_sessions,
        unused_timeout: options.unused_session_timeout,
        idle_timeout: options.session_idle_timeout,
    };
    let crossing = front.request_ids().map(|ids| (ids, front.clone()));
    let sessions = BoundedSessions::shared(limits, front.event_store(), crossing);
    tokio::spawn(sessions.clone().close_unused(cancel.clone()));
    // Sessions any replica can take: restored from the shared records,
    // closed here when another replica deletes them.
    config.session_store = front.session_store();
    front.shared.fanout.serve_sessions(Arc::new(sessions::Workers(Arc::downgrade(&sessions))));
    if let Some(telemetry) = front.host().telemetry() {
        sessions.count_in(telemetry.metrics().clone());
    }
    let factory = front.clone();
    let mcp = StreamableHttpService::new(move || Ok(factory.for_new_session()), sessions.clone(), config);
    let checks = Arc::new(Guard {
        token: options.token.clone(),
        origins,
        max_body_bytes: options.max_body_bytes,
        body_timeout: options.body_timeout,
        sessions,
        max_sessions: options.max_sessions,
    });
    let router = axum::Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(checks, guard::check))
        .merge(health::routes(front.clone()));
    bound(addr);
    let streams = StreamSlots::new(options.max_streams, options.max_streams_per_peer);
    let result = accept(listener, router, streams, &front, &options, cancel.clone(), stop).await;
    cancel.cancel();
    result
}

/// A listener on `addr` whose kernel queue holds a burst of connections as
/// large as those served and those let wait together (the kernel caps it at
/// `net.core.somaxconn`). The runtime's default queue holds 128: a burst past
/// it had its handshakes dropped, and each such client waited a second for
/// its retransmission before `accept` saw it.
fn listen(addr: SocketAddr, max_connections: usize) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let backlog = u32::try_from(max_connections.saturating_mul(2)).unwrap_or(u32::MAX).max(128);
    socket.listen(backlog)
}

async fn accept(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    streams: Arc<StreamSlots>,
    front: &McpFront,
    options: &HttpOptions,
    cancel: CancellationToken,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let waiters = Arc::new(Semaphore::new(options.max_connections));
    let max_connections = options.max_connections;
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
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
            tokio::spawn(refuse_busy(stream, max_connections));
            continue;
        }
        let (slots, watcher, timeout) = (slots.clone(), graceful.watcher(), options.header_timeout);
        let (router, streams, write_timeout) = (router.clone(), streams.clone(), options.write_timeout);
        let counted = front.host().telemetry().map(|t| t.metrics().clone());
        tokio::spawn(async move {
            let slot = match slot {
                Ok(slot) => slot,
                Err(_) => match tokio::time::timeout(timeout, slots.clone().acquire_owned()).await {
                    Ok(Ok(slot)) => slot,
                    _ => return refuse_busy(stream, max_connections).await,
                },
            };
            drop(waiter);
            // The slot goes with the connection; the guard gives it back
            // while the connection carries a stream or waits on a question.
            let connection = Arc::new(Connection::new(Peer::of(peer.ip()), slots, streams, slot));
            let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(connection.clone());
                router.clone().call(request)
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(timeout)
                .serve_connection(TokioIo::new(WriteDeadline::new(stream, write_timeout)), service);
            if let Some(metrics) = &counted {
                metrics.http_connections_total.inc();
                metrics.http_connections.inc();
            }
            let _ = watcher.watch(conn).await;
            if let Some(metrics) = &counted {
                metrics.http_connections.dec();
            }
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

/// Answers a connection that found no free slot: 503, and closed.
async fn refuse_busy(mut stream: tokio::net::TcpStream, max_connections: usize) {
    use tokio::io::AsyncWriteExt as _;
    let body = format!("toolhost serve is serving {max_connections} connections at once; retry shortly\n");
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

    /// A burst of clients all finish their handshakes before the server
    /// accepts one: none waits for a retransmitted handshake.
    #[tokio::test]
    async fn a_burst_of_connections_is_queued_whole() {
        let listener = listen("127.0.0.1:0".parse().unwrap(), 512).unwrap();
        let addr = listener.local_addr().unwrap();
        let burst = 600;
        let clients: Vec<_> = (0..burst).map(|_| tokio::spawn(tokio::net::TcpStream::connect(addr))).collect();
        // Loopback handshakes take microseconds; the kernel queues what
        // its backlog holds and drops the handshakes past it.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut queued = 0;
        while let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(20), listener.accept()).await {
            queued += 1;
        }
        assert_eq!(queued, burst, "the listen queue held only {queued} of a burst of {burst}");
        for client in clients {
            client.await.unwrap().unwrap();
        }
    }

    #[test]
    fn bounds_and_times_must_be_positive() {
        let base = HttpOptions::new("127.0.0.1:0".parse().unwrap());
        let e = HttpOptions { max_streams: 0, ..base.clone() }.check().unwrap_err().to_string();
        assert!(e.contains("--max-streams"), "{e}");
        let e = HttpOptions { write_timeout: Duration::ZERO, ..base }.check().unwrap_err().to_string();
        assert!(e.contains("--write-timeout"), "{e}");
    }
}
