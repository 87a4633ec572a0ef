//! W3C trace context over MCP: a request's `traceparent`/`tracestate`
//! from its `_meta` (or, over HTTP, its headers) so the call's span
//! continues the agent's trace (the library's upstream client puts the
//! same keys in the `_meta` of its requests).

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use toolhost::telemetry::TraceParent;

/// The longest value taken: a `traceparent` is 55 characters and a
/// `tracestate` at most 32 entries of 256; anything longer is not W3C.
const MAX_VALUE: usize = 8192;

/// The caller's trace context: `_meta` first, then the HTTP headers of the
/// request that carried it.
pub(crate) fn from_request(ctx: &RequestContext<RoleServer>) -> Option<TraceParent> {
    let headers = ctx.extensions.get::<axum::http::request::Parts>().map(|parts| &parts.headers);
    let header = |key: &str| headers.and_then(|h| h.get(key)).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (traceparent, tracestate) = match ctx.meta.get_traceparent() {
        Some(parent) => (parent.to_owned(), ctx.meta.get_tracestate().map(str::to_owned)),
        None => (header("traceparent")?, header("tracestate")),
    };
    if traceparent.len() > MAX_VALUE {
        return None;
    }
    Some(TraceParent { traceparent, tracestate: tracestate.filter(|s| s.len() <= MAX_VALUE) })
}
