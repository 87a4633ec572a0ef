//! toolhost: a host for AI-agent tools that run as WebAssembly components.
//!
//! Every tool, the built-ins included, is a WASI 0.2 component built against
//! the WIT package `toolhost:tool` (`wit/`). This crate owns everything that
//! needs authority: the permission engine, capability-scoped backends,
//! per-call limits, loading, and the call pipeline. The `toolhost` command
//! (crate `toolhost-cli`, `cli/`) is a thin front end over [`Toolhost`].
//!
//! The crate is in layers, each importing only from those below it (see
//! `docs/architecture.md`; `host/tests/layers.rs` checks it): the
//! foundation (permission engine, backends, runtime, settings, state), the
//! catalog (what a tool is), execution (instances, the middleware chain)
//! and the façade, [`Toolhost`].
//!
//! Each public item has one path. What an embedder uses most is also in
//! [`prelude`]; the WebAssembly engine on its own (for compiling or
//! inspecting a component without a host) is [`engine`].

#![deny(missing_docs)]
// Every type a public item names has a public path of its own.
#![warn(unnameable_types)]

pub mod ask_user;
pub mod audit;
pub mod audit_replay;
pub mod backend;
mod background;
pub mod capability;
pub mod capability_diff;
mod catalog;
pub mod check_batch;
pub mod coordination;
mod events;
mod execution;
mod hold;
pub mod oci;
pub mod question;
pub mod refusal;
pub mod response;
mod runtime;
pub mod state;
pub mod sync;
pub mod telemetry;
mod toolhost;
mod types;

// The pure modules live in `toolhost-core` (no wasmtime; fuzzed on their
// own); they keep their paths here.
pub use toolhost_core::{escape, lockfile, own_file, permission, protected, registry, replica, settings, utc};

/// What a tool is (its metadata, where it came from, why it did not load),
/// the groups tools are offered in and the skills beside them, and loading
/// a component on its own with an [`engine::Runtime`].
pub mod tool {
    pub use crate::catalog::group::{ToolGroup, ToolGroups};
    pub use crate::catalog::skill::{Skill, Skills};
    pub use crate::catalog::tool::*;
    pub use crate::execution::component::{LoadReport, load_component, load_component_with_hash};
    pub use crate::execution::loaded::{LoadedTool, input_errors, validate_input};
}
/// The WebAssembly engine on its own: compiling and caching components
/// without a host (`toolhost inspect`, the background optimiser), its
/// options, what it tells of its compiles, the per-call limits, why a guest
/// call failed, and the WIT package tools are built against. The engine's
/// own types stay inside the crate.
pub mod engine {
    pub use crate::runtime::bindings::WIT_PACKAGE;
    pub use crate::runtime::failure::GuestFailure;
    pub use crate::runtime::{
        CacheOutcome, CompileEvent, CompileObserver, Limits, Phase, Runtime, RuntimeOptions, Tier,
    };
}
/// Hot reload: watching the plugin folders and component files of a host
/// ([`Toolhost::watch`]) and what each watched file serves.
pub mod reload {
    pub use crate::toolhost::reload::{FileKind, FileStatus, StatusReport, describe_grants};
    pub use crate::toolhost::watch::{WatchOptions, Watcher};
}
/// Plugins loading in the background ([`Toolhost::ready`],
/// [`Toolhost::pending_loads`]): a plugin whose compiled code is not cached
/// is compiled after the host is built.
pub mod loading {
    pub use crate::toolhost::loading::{FailedLoad, LoadFailures, PendingLoad};
}
/// The four services a [`Toolhost`] composes (see `docs/architecture.md`):
/// [`services::Catalog`] (what is loaded), [`services::Permissions`] (what
/// a call may do), [`services::Pipeline`] (one call, request to response)
/// and [`services::States`] (which agent state a call uses), reached by
/// [`Toolhost::catalog`], [`Toolhost::permissions`],
/// [`Toolhost::pipeline`] and [`Toolhost::states`].
pub mod services {
    pub use crate::toolhost::{Catalog, Permissions, Pipeline, States};
}
/// A serving host among a deployment's replicas: its heartbeat in a
/// [`coordination::ReplicaRegistry`] ([`Toolhost::announce`]).
pub mod presence {
    pub use crate::toolhost::presence::{HEARTBEAT_EVERY, HEARTBEAT_TTL, Presence, PresenceOptions, ReloadErrors};
}
/// What an embedder uses most, in one import: `use toolhost::prelude::*;`.
///
/// The host and its builder, a call and its events, the answers to a
/// permission question, the settings and the overlay a front end lays over
/// them, native tools and middleware, and the errors of building, loading
/// and calling. Each item keeps its one path elsewhere in the crate.
pub mod prelude {
    pub use crate::catalog::function::FunctionTool;
    pub use crate::catalog::tool::{LoadError, LookupError, ToolInfo};
    pub use crate::events::{CallEvent, CallStream, ExternalCall, PermissionAnswer, PermissionRequest};
    pub use crate::execution::middleware::NativeMiddleware;
    pub use crate::permission::Mode;
    pub use crate::response::{ContentBlock, ResultState, ToolResponse};
    pub use crate::settings::{Overlay, Settings};
    pub use crate::state::AgentState;
    pub use crate::toolhost::{
        AttachError, BuildError, CallRequest, ExternalResult, ExternalResultError, ReplaceError, Replacement, Toolhost,
        ToolhostBuilder, UpstreamStart,
    };
    pub use crate::types::ToolError;
}
pub use catalog::builtin;
pub use catalog::function;
pub use execution::middleware;
pub use toolhost::batch;

pub use async_trait::async_trait;
pub use events::{CallEvent, CallStream, ExternalCall, Outcome, PermissionAnswer, PermissionRequest};
pub use execution::callable::CallableTool;
pub use execution::upstream::UpstreamServer;
pub use toolhost::{
    AttachError, BACKGROUND_LOAD_BYTES, BuildError, CallRequest, ExternalResult, ExternalResultError, InstanceError,
    ListToolsError, RUNNING_CALLS, RememberError, ReplaceError, Replacement, Toolhost, ToolhostBuilder,
    UPSTREAM_RELIST_INTERVAL, UpstreamRetry, UpstreamStart, WatchError, tool_error_text,
};
pub use types::ToolError;
