//! Runtime support for `#[toolhost_sdk::tool]` functions (generated code
//! calls these; not a stable API).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Output, ToolError};

/// The message of a function tool's own permission check (AgentScope §9.1).
pub const ASK: &str = "Custom function tools must be explicitly allowed by the user.";

/// Reads parameter `name` from the input: its value if present and not
/// null, else `default` (JSON text), else null (so `Option` parameters
/// become `None` and required ones fail with a clear error).
pub fn arg<T: DeserializeOwned>(input: &Value, name: &str, default: Option<&str>) -> Result<T, ToolError> {
    match input.get(name) {
        Some(v) if !v.is_null() => {
            serde_json::from_value(v.clone()).map_err(|e| ToolError::InvalidInput(format!("parameter `{name}`: {e}")))
        }
        _ => match default {
            Some(text) => serde_json::from_str(text).map_err(|e| {
                ToolError::Internal(format!("the default of parameter `{name}` ({text}) does not fit its type: {e}"))
            }),
            None => serde_json::from_value(Value::Null)
                .map_err(|_| ToolError::InvalidInput(format!("missing required parameter `{name}`"))),
        },
    }
}

/// What a tool function may return.
pub trait IntoToolResult {
    /// Emits the result; `Err` values become an error chunk.
    fn into_tool_result(self, out: &mut Output) -> Result<(), ToolError>;
}

impl IntoToolResult for String {
    fn into_tool_result(self, out: &mut Output) -> Result<(), ToolError> {
        out.text(&self);
        Ok(())
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self, out: &mut Output) -> Result<(), ToolError> {
        out.text(self);
        Ok(())
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self, _out: &mut Output) -> Result<(), ToolError> {
        Ok(())
    }
}

impl IntoToolResult for Value {
    fn into_tool_result(self, out: &mut Output) -> Result<(), ToolError> {
        match self {
            Value::String(s) => out.text(&s),
            other => out.text(&other.to_string()),
        };
        Ok(())
    }
}

impl<T: IntoToolResult, E: std::fmt::Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self, out: &mut Output) -> Result<(), ToolError> {
        match self {
            Ok(value) => value.into_tool_result(out),
            Err(e) => {
                out.error(&format!("Error: {e}"));
                Ok(())
            }
        }
    }
}

/// Parses the schema text the macro generated (or the author wrote).
pub fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("the input schema of this function tool is not JSON: {e}"))
}
