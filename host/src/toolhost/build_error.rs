//! Why a host could not be built ([`BuildError`]): which part of the
//! settings or of the start-up failed, each with its cause and its fix, so
//! an embedder can tell a bad setting from a plugin that did not load.

use crate::catalog::tool::LoadError;

/// Why [`crate::ToolhostBuilder::build`] failed. Each message names the
/// cause and what to do.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A setting is at fault: the working directories, the permission
    /// rules, a grant, a tool group, an upstream server's table, a
    /// middleware attachment, the replica id, or a shared state store
    /// without the seam it needs.
    #[error("{0}")]
    Settings(String),
    /// The backend `[backend]` describes could not be set up (an unknown
    /// kind, an option at fault, a sandbox the kernel cannot give).
    #[error("{0}")]
    Backend(String),
    /// The compile engine or its cache could not be set up.
    #[error("{0}")]
    Runtime(String),
    /// The lock file could not be read.
    #[error("{0}")]
    Lock(String),
    /// A plugin of a registry (`oci://`) could not be pulled or verified.
    #[error("{0}")]
    Registry(String),
    /// The audit log could not be opened.
    #[error("{0}")]
    Audit(String),
    /// Telemetry (`[telemetry]`) could not be started.
    #[error("{0}")]
    Telemetry(String),
    /// A plugin or middleware was refused or failed to load.
    #[error(transparent)]
    Load(#[from] LoadError),
}

impl BuildError {
    /// `make` of the whole cause chain of `error`.
    pub(crate) fn from_chain(make: fn(String) -> Self) -> impl FnOnce(anyhow::Error) -> Self {
        move |error| make(format!("{error:#}"))
    }
}
