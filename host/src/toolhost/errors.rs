//! The errors of the façade's changing operations, typed so that an
//! embedder can match on why: building a host ([`BuildError`]: a bad
//! setting or a plugin that did not load), replacing a tool or middleware
//! ([`ReplaceError`]), attaching middleware ([`AttachError`]) and
//! completing an external call ([`ExternalResultError`]), making an
//! instance or a check ([`InstanceError`]), remembering a rule
//! ([`RememberError`]) and watching the plugin folders ([`WatchError`]).
//! Each message names the cause and what to do. (Loading one file fails with a
//! [`LoadError`]; a call with a [`crate::ToolError`].)

use crate::catalog::tool::{LoadError, LookupError};

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

/// Why [`crate::Toolhost::replace`] or
/// [`crate::Toolhost::replace_middleware`] changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    /// No tool of that name is registered.
    #[error(transparent)]
    UnknownTool(#[from] LookupError),
    /// No middleware of that name is loaded.
    #[error("cannot replace middleware '{0}': no middleware of that name is loaded")]
    UnknownMiddleware(String),
    /// The replacement is of the other kind: a middleware for a tool, or a
    /// tool for a middleware.
    #[error("cannot replace {kind} '{name}' with {label}: it is a {other}; use Toolhost::{method}")]
    WrongKind {
        /// `tool` or `middleware`: what was to be replaced.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The replacement.
        label: String,
        /// What the replacement is.
        other: &'static str,
        /// The method that replaces that kind.
        method: &'static str,
    },
    /// The replacement reports another name: a replacement keeps the name.
    #[error(
        "cannot replace {kind} '{name}' with {label}: it reports the name '{reported}'; a replacement keeps the name{}",
        if *kind == "tool" { format!(" (to rename, unload '{name}' and load the new one)") } else { String::new() }
    )]
    Renamed {
        /// `tool` or `middleware`.
        kind: &'static str,
        /// The name replaced.
        name: String,
        /// The replacement.
        label: String,
        /// The name the replacement reports.
        reported: String,
    },
    /// The replacement did not load.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Why [`crate::Toolhost::attach`] attached nothing.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// A name that no loaded middleware has.
    #[error(
        "cannot attach middleware '{name}' to '{tool}': no middleware of that name is loaded (loaded: {}); load it first (--middleware FILE, [middleware].files or Toolhost::load_middleware)",
        if loaded.is_empty() { "none".to_string() } else { loaded.join(", ") }
    )]
    NotLoaded {
        /// The middleware named.
        name: String,
        /// The tool (or `*`) it was to be attached to.
        tool: String,
        /// The middleware that is loaded.
        loaded: Vec<String>,
    },
}

/// Why [`crate::Toolhost::complete_external`] refused an external
/// executor's result (the call stays open: report a corrected result).
#[derive(Debug, thiserror::Error)]
pub enum ExternalResultError {
    /// The tool's own result-metadata schema does not compile.
    #[error("the tool's result schema is invalid: {0}")]
    InvalidSchema(String),
    /// The result's metadata does not follow the tool's result schema.
    #[error("the result metadata for {tool} does not match its schema at `{at}`: {why}")]
    MetadataMismatch {
        /// The tool.
        tool: String,
        /// Where in the metadata (a JSON pointer).
        at: String,
        /// What is wrong there.
        why: String,
    },
}

/// Why [`crate::Toolhost::instantiate`], [`crate::Toolhost::decision_instance`]
/// or [`crate::Toolhost::check`] made no instance or no decision.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    /// The tool is not registered, or did not load.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// The input does not follow the tool's input schema (a check
    /// validates it before any guest code runs).
    #[error("{0}")]
    InvalidInput(String),
    /// The tool's instance could not be started (the cause follows as
    /// this error's source).
    #[error("starting tool '{tool}'")]
    Start {
        /// The tool.
        tool: String,
        /// Why, as the runtime said it.
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl InstanceError {
    /// The instance of `tool` did not start because of `cause`.
    pub(crate) fn start(tool: &str, cause: anyhow::Error) -> Self {
        InstanceError::Start { tool: tool.to_string(), cause: cause.into() }
    }
}

/// Why "allow and remember" could not keep a rule beyond this process (the
/// rule was allowed this once, or holds until the host exits).
#[derive(Debug, thiserror::Error)]
pub enum RememberError {
    /// The settings file could not be written; the rule holds in this host
    /// until it exits.
    #[error(
        "could not save the rule `{rule}` to {}: {cause}. It holds until this toolhost exits; to keep it, add it by \
         hand under [permissions] in a settings file: {behavior} = [\"{rule}\"] (or pass --{behavior} '{rule}')",
        path.display()
    )]
    Save {
        /// The rule, as written in settings.
        rule: String,
        /// `allow`, `ask` or `deny`.
        behavior: String,
        /// The settings file.
        path: std::path::PathBuf,
        /// Why the write failed.
        cause: String,
    },
    /// The shared store ([`crate::ToolhostBuilder::rule_store`]) did not
    /// take it; the call was allowed this once.
    #[error(
        "could not remember the rule `{rule}` in the shared store: {cause}; it was allowed this once. To keep it, add \
         it under [permissions] in the settings every process reads: {behavior} = [\"{rule}\"]"
    )]
    Shared {
        /// The rule, as written in settings.
        rule: String,
        /// `allow`, `ask` or `deny`.
        behavior: String,
        /// Why the store refused it.
        cause: String,
    },
}

/// Why [`crate::Toolhost::watch`] did not start watching.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The operating system's file watcher could not be started.
    #[error("starting the file watcher")]
    Start(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A plugin folder could not be watched.
    #[error("watching {} for plugin changes (does the folder exist, and may toolhost read it?)", dir.display())]
    Folder {
        /// The folder.
        dir: std::path::PathBuf,
        /// Why, as the file watcher said it.
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
}
