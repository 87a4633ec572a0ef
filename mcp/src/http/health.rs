//! `GET /healthz` and `GET /readyz`, for a load balancer or an
//! orchestrator. Neither needs the token nor passes the Host check, and
//! neither says more than one word: `/healthz` is 200 while the process
//! serves; `/readyz` is 200 only when it can take calls now, else 503 with
//! what it waits for — `stopping` (from the first moment of a graceful
//! stop), `loading` (plugins still loading) or `state-store` (a shared
//! store that does not answer).

use axum::http::StatusCode;
use axum::routing::get;

use crate::McpFront;

/// The two routes, served beside `/mcp` and outside its checks.
pub(crate) fn routes(front: McpFront) -> axum::Router {
    axum::Router::new().route("/healthz", get(|| async { (StatusCode::OK, "ok") })).route(
        "/readyz",
        get(move || {
            let front = front.clone();
            async move {
                match front.readiness().await {
                    Ok(()) => (StatusCode::OK, "ready"),
                    Err(waiting_for) => (StatusCode::SERVICE_UNAVAILABLE, waiting_for),
                }
            }
        }),
    )
}
