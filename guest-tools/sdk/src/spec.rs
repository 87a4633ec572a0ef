//! [`ToolSpec`]: a builder for the metadata a tool reports.

use crate::{Capabilities, ToolMetadata};

/// The static description of a tool. Defaults are the safe ones: not
/// read-only, not concurrency-safe, not external, no state, no capabilities,
/// and an input schema accepting an empty object.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Name shown to the model.
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the input (`type: object`).
    pub input_schema: serde_json::Value,
    /// Calls may run in parallel with other concurrency-safe calls.
    pub concurrency_safe: bool,
    /// Every call only reads.
    pub read_only: bool,
    /// Carried out outside the host.
    pub external: bool,
    /// Uses the agent state.
    pub state_injected: bool,
    /// The MCP server proxied, if any.
    pub mcp_origin: Option<String>,
    /// For external tools: the schema of the result metadata.
    pub result_metadata_schema: Option<serde_json::Value>,
    /// What the tool needs from the host.
    pub capabilities: Capabilities,
}

impl ToolSpec {
    /// A tool with a name and a description, and nothing else yet.
    pub fn new(name: &str, description: &str) -> Self {
        Self {
            name: name.to_string(),
            description: description.to_string(),
            input_schema: serde_json::json!({"type": "object", "properties": {}}),
            concurrency_safe: false,
            read_only: false,
            external: false,
            state_injected: false,
            mcp_origin: None,
            result_metadata_schema: None,
            capabilities: Capabilities {
                fs_read: Vec::new(),
                fs_write: Vec::new(),
                process_exec: false,
                network: false,
            },
        }
    }

    /// Sets the input JSON Schema.
    pub fn schema(mut self, schema: serde_json::Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Marks every call as read-only (allowed in every mode).
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// Lets calls run in parallel with other concurrency-safe calls.
    pub fn concurrency_safe(mut self, yes: bool) -> Self {
        self.concurrency_safe = yes;
        self
    }

    /// Marks the tool as carried out outside the host.
    pub fn external(mut self, yes: bool) -> Self {
        self.external = yes;
        self
    }

    /// Asks for the agent state (`state` import).
    pub fn state_injected(mut self, yes: bool) -> Self {
        self.state_injected = yes;
        self
    }

    /// Declares the schema of an external result's metadata.
    pub fn result_metadata_schema(mut self, schema: serde_json::Value) -> Self {
        self.result_metadata_schema = Some(schema);
        self
    }

    /// Asks to read under `root` (absolute, or `$WORKDIRS`).
    pub fn reads(mut self, root: &str) -> Self {
        self.capabilities.fs_read.push(root.to_string());
        self
    }

    /// Asks to write (and read) under `root` (absolute, or `$WORKDIRS`).
    pub fn writes(mut self, root: &str) -> Self {
        self.capabilities.fs_write.push(root.to_string());
        self
    }

    /// Asks to run processes through the backend.
    pub fn runs_processes(mut self) -> Self {
        self.capabilities.process_exec = true;
        self
    }

    /// The WIT record.
    pub fn into_metadata(self) -> ToolMetadata {
        ToolMetadata {
            name: self.name,
            description: self.description,
            input_schema: self.input_schema.to_string(),
            concurrency_safe: self.concurrency_safe,
            read_only: self.read_only,
            external: self.external,
            state_injected: self.state_injected,
            mcp_origin: self.mcp_origin,
            result_metadata_schema: self.result_metadata_schema.map(|s| s.to_string()),
            capabilities: self.capabilities,
        }
    }
}
