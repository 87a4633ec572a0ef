//! Host-owned, version-neutral forms of what crosses the WIT boundary.
//!
//! The Rust API names these types, never the ones `bindgen!` generates:
//! each WIT version's module ([`crate::runtime::bindings`]) converts its
//! generated records into these and back, so a new WIT version adds a
//! module and conversions, and changes nothing here or in the embedders.
//! (Chunks are [`crate::response::Chunk`]; permission modes, behaviours,
//! rules and verdicts are the types of [`crate::permission`].)

use crate::backend::BackendError;

/// Why a call, or a host operation, failed (the WIT `tool-error`).
///
/// `Debug` and `Display` print `ToolError::Variant("text")`, as the
/// generated type of `toolhost:tool@0.1.0` did.
#[derive(Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The input is not acceptable to the tool; the text says what to change.
    InvalidInput(String),
    /// A capability the tool needs was not granted, or a path lies outside
    /// the granted roots. The text names the capability or path and the
    /// setting that would allow it.
    Denied(String),
    /// A file, task or other named thing does not exist.
    NotFound(String),
    /// The operation ran out of time.
    Timeout(String),
    /// An I/O or process failure in the backend.
    Io(String),
    /// The operation is not available here (a program is missing, an
    /// unsupported backend feature).
    Unsupported(String),
    /// A bug or an unexpected state inside the tool.
    Internal(String),
}

impl ToolError {
    /// The variant's name and text.
    fn parts(&self) -> (&'static str, &str) {
        match self {
            ToolError::InvalidInput(m) => ("ToolError::InvalidInput", m),
            ToolError::Denied(m) => ("ToolError::Denied", m),
            ToolError::NotFound(m) => ("ToolError::NotFound", m),
            ToolError::Timeout(m) => ("ToolError::Timeout", m),
            ToolError::Io(m) => ("ToolError::Io", m),
            ToolError::Unsupported(m) => ("ToolError::Unsupported", m),
            ToolError::Internal(m) => ("ToolError::Internal", m),
        }
    }
}

impl ToolError {
    /// The same error with its text passed through `f`.
    pub(crate) fn map_text(self, f: impl FnOnce(String) -> String) -> ToolError {
        match self {
            ToolError::InvalidInput(m) => ToolError::InvalidInput(f(m)),
            ToolError::Denied(m) => ToolError::Denied(f(m)),
            ToolError::NotFound(m) => ToolError::NotFound(f(m)),
            ToolError::Timeout(m) => ToolError::Timeout(f(m)),
            ToolError::Io(m) => ToolError::Io(f(m)),
            ToolError::Unsupported(m) => ToolError::Unsupported(f(m)),
            ToolError::Internal(m) => ToolError::Internal(f(m)),
        }
    }
}

impl std::fmt::Debug for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (name, text) = self.parts();
        f.debug_tuple(name).field(&text).finish()
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for ToolError {}

impl From<BackendError> for ToolError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Denied(m) => ToolError::Denied(format!("denied: {m}")),
            BackendError::NotFound(m) => ToolError::NotFound(m),
            BackendError::Timeout(m) => ToolError::Timeout(m),
            BackendError::Invalid(m) => ToolError::InvalidInput(m),
            BackendError::Io(m) => ToolError::Io(m),
            BackendError::Unsupported(m) => ToolError::Unsupported(m),
        }
    }
}

/// What a tool needs from the host, as its metadata declares it (the WIT
/// `capabilities`). Declaring is not granting: the user's settings decide.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Roots the tool wants to read under: absolute paths, or `$WORKDIRS`.
    pub fs_read: Vec<String>,
    /// Roots the tool wants to write under (implies read).
    pub fs_write: Vec<String>,
    /// Whether the tool runs processes through the backend.
    pub process_exec: bool,
    /// Whether the tool needs network access (reserved; never granted yet).
    pub network: bool,
}

/// A tool's metadata as a component reports it (the WIT `tool-metadata`),
/// before the host validates it into a [`crate::tool::ToolInfo`]; also what
/// a middleware is told about the tool it wraps. JSON values are text here,
/// as on the wire.
///
/// This is the one Rust form of the record: a built-in's
/// `guest-tools/tools/<crate>/metadata.json` is its serialised form, with
/// the schemas written as JSON values rather than text.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolMetadata {
    /// The name shown to the model.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// The JSON Schema of the input, as text.
    #[serde(with = "json_text")]
    pub input_schema: String,
    /// Whether calls may run in parallel with other concurrency-safe calls.
    pub concurrency_safe: bool,
    /// Whether every call only reads.
    pub read_only: bool,
    /// Whether the call is carried out outside the host.
    pub external: bool,
    /// Whether the tool reads and writes the agent state.
    pub state_injected: bool,
    /// The MCP server the tool comes from, if it proxies one.
    pub mcp_origin: Option<String>,
    /// For external tools: the JSON Schema (as text) of the result metadata.
    #[serde(with = "json_text::optional")]
    pub result_metadata_schema: Option<String>,
    /// What the tool declares it needs.
    pub capabilities: Capabilities,
}

/// JSON carried as text in a record, serialised as the JSON value it
/// holds (and read back into text): a schema reads as a schema in a file.
mod json_text {
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(S::Error::custom)?;
        value.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        serde_json::to_string(&value).map_err(D::Error::custom)
    }

    /// The same for an optional value (`null` when absent).
    pub mod optional {
        use super::*;

        pub fn serialize<S: Serializer>(text: &Option<String>, serializer: S) -> Result<S::Ok, S::Error> {
            match text {
                Some(text) => super::serialize(text, serializer),
                None => serializer.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
            let value = Option::<serde_json::Value>::deserialize(deserializer)?;
            value.map(|v| serde_json::to_string(&v).map_err(D::Error::custom)).transpose()
        }
    }
}

/// What a middleware component says about itself (the WIT
/// `middleware-info`), before the host validates it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MiddlewareDescription {
    /// Its unique name.
    pub name: String,
    /// What it does.
    pub description: String,
}
