//! Tool middleware: layers that wrap every call of the tools they are
//! attached to (AgentScope's `ToolMiddlewareBase`, spec §3).
//!
//! A middleware is either a component built against the
//! `middleware-component` world (`toolhost_sdk::export_middleware!`), or a
//! [`NativeMiddleware`] registered from Rust by the embedding program. Both
//! kinds run in the same chain, in the same order.
//!
//! **Order.** The middleware attached to a tool form a chain: the first one
//! is outermost (its pre-logic runs first and its post-logic last), the
//! tool's `call` is innermost. Layers attached to `"*"` (every tool) come
//! before those attached to the tool by name; a name listed twice runs once,
//! at its first place. For `[outer, inner]` a call runs outer-pre,
//! inner-pre, call, inner-post, outer-post.
//!
//! **When.** The chain runs after the permission decision (and never for
//! external tools), in place of the direct `call`.
//!
//! **Isolation.** Every invocation of a middleware component gets a fresh
//! store with the call's limits: the call's deadline (shared by every layer
//! of the call), the memory cap and the output cap, and no capability unless
//! the user grants it under `[grants.NAME]` (or `--grant NAME=...`) with the
//! middleware's name. A middleware that traps, hangs or floods its output
//! fails the call with an error naming it; the host keeps serving.
//!
//! **next.** `next.run(input)` re-validates the (possibly rewritten) input
//! against the tool's schema, refusing invalid input with the validation
//! error; decides an input that differs (as a JSON value) from every input
//! allowed so far in the call again with the whole permission engine, asks
//! included (a refusal is `ToolError::Denied` naming the middleware, and
//! nothing inside runs); and starts the inner layers afresh as their own task (a new tool
//! instance each time, which is how a middleware retries); their chunks
//! stream to the middleware as they are produced.
//!
//! **Attaching.** In `toolhost.toml`:
//!
//! ```toml
//! [middleware]
//! files = ["mw/logging.wasm", "mw/redact.wasm"]
//!
//! [middleware.attach]
//! "*" = ["logging"]          # every tool
//! Bash = ["redact"]          # Bash runs logging(redact(Bash))
//! ```
//!
//! or `--middleware mw/logging.wasm --attach 'Bash=logging,redact'` on the
//! command line, or [`Toolhost::load_middleware`](crate::Toolhost::load_middleware)
//! and [`Toolhost::attach`](crate::Toolhost::attach) from Rust.
//!
//! **Settings.** `[middleware.NAME]` tables are that middleware's own
//! settings: a component reads them as JSON from `TOOLHOST_TOOL_CONFIG`,
//! the way a tool reads `[tools.NAME]`.
//!
//! **Parts.** `native` (the Rust API: [`NativeMiddleware`], [`Next`]),
//! `registry` (loaded middleware and attachments, swapped atomically),
//! `failure` (what went wrong and whom to blame), `chain` (one call's
//! chain) and `loader` (checking a component and asking it for its
//! `info`). The settings data type lives with the other settings
//! ([`crate::settings::MiddlewareSettings`]).

pub(crate) mod chain;
pub(crate) mod failure;
pub(crate) mod loader;
pub(crate) mod native;
pub(crate) mod registry;

pub use failure::{CallFailure, MiddlewareFault};
pub use loader::{LoadedMiddleware, load_middleware_component};
pub use native::{InnerStream, MiddlewareOutput, NativeMiddleware, Next};
pub use registry::MiddlewareInfo;
