//! toolhost: a host for AI-agent tools that run as WebAssembly components.
//!
//! Every tool, the built-ins included, is a WASI 0.2 component built against
//! the WIT package `toolhost:tool` (`wit/`). This crate owns everything that
//! needs authority: the permission engine, capability-scoped backends,
//! per-call limits, loading, and the call pipeline. The `toolhost` command
//! (crate `toolhost-cli`, `cli/`) is a thin front end over [`Toolhost`].

#![warn(missing_docs)]

pub mod backend;
pub mod batch;
pub mod builtin;
pub mod capability;
pub mod escape;
pub mod events;
pub mod function;
pub mod instance;
pub mod middleware;
pub mod permission;
pub mod protected;
mod registry;
pub mod response;
pub mod runtime;
pub mod settings;
pub mod state;
pub mod tool;
mod toolhost;
pub mod types;

pub use async_trait::async_trait;
pub use events::{CallEvent, CallStream, ExternalCall, Outcome, PermissionAnswer, PermissionRequest};
pub use function::FunctionTool;
pub use middleware::NativeMiddleware;
pub use tool::LookupError;
pub use toolhost::{CallRequest, ExternalResult, Toolhost, ToolhostBuilder, tool_error_text};
pub use types::ToolError;
