//! `serve --metrics ADDR`: the host's Prometheus metrics as text on
//! `GET /metrics`. Loopback only unless a bearer token guards it; the
//! metrics carry tool names, outcomes and counts, never a tool's input.

use std::net::SocketAddr;

use anyhow::{Context as _, Result, bail};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use toolhost::Toolhost;

/// Binds `addr` now (so the port is open before `serve` says it is ready)
/// and serves the metrics of `host` on it in a task of its own until the
/// process ends; returns the bound address. `token`, when given, must come
/// as `Authorization: Bearer TOKEN` on every scrape.
pub async fn serve_metrics(host: Toolhost, addr: SocketAddr, token: Option<String>) -> Result<SocketAddr> {
    if host.telemetry().is_none() {
        bail!("the host keeps no metrics; build it with ToolhostBuilder::metrics(true)");
    }
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "--metrics {addr} is not a loopback address and no token guards it; give --metrics-token (or TOOLHOST_METRICS_TOKEN), or \
             listen on 127.0.0.1"
        );
    }
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding the metrics address {addr}"))?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: HeaderMap| {
            let host = host.clone();
            let token = token.clone();
            async move { scrape(&host, token.as_deref(), &headers) }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("the metrics endpoint stopped: {e}");
        }
    });
    Ok(bound)
}

fn scrape(host: &Toolhost, token: Option<&str>, headers: &HeaderMap) -> Response {
    if let Some(token) = token {
        let sent = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !crate::http::same_token(sent.as_bytes(), token.as_bytes()) {
            return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token (Authorization: Bearer T)")
                .into_response();
        }
    }
    match host.metrics_text() {
        Some(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response(),
        None => (StatusCode::NOT_FOUND, "no metrics").into_response(),
    }
}
