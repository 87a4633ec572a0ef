//! `rewrite-input`: normalises the input before the tool sees it. It trims
//! surrounding whitespace from every top-level string field, and fills in
//! every field the tool's schema gives a `default` for and the input lacks.
//! What it changed is recorded in the response metadata
//! (`rewrite_input: {"trimmed": [...], "added": [...]}`).
//!
//! The host validates the rewritten input against the tool's schema again
//! (`next.run`), so a rewrite can never smuggle invalid input to a tool.

use serde_json::{Map, Value, json};
use toolhost_sdk::middleware::{Middleware, Next, metadata_chunk};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct RewriteInput;

/// The rewritten input and the names of the fields trimmed and added.
fn rewrite(input: &str, schema: &str) -> (String, Vec<String>, Vec<String>) {
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(input) else {
        return (input.to_string(), Vec::new(), Vec::new());
    };
    let mut trimmed = Vec::new();
    for (name, value) in fields.iter_mut() {
        if let Value::String(s) = value {
            let t = s.trim();
            if t.len() != s.len() {
                *s = t.to_string();
                trimmed.push(name.clone());
            }
        }
    }
    let mut added = Vec::new();
    let schema: Value = serde_json::from_str(schema).unwrap_or(Value::Null);
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !fields.contains_key(name)
            {
                fields.insert(name.clone(), default.clone());
                added.push(name.clone());
            }
        }
    }
    (Value::Object(Map::from_iter(fields)).to_string(), trimmed, added)
}

impl Middleware for RewriteInput {
    const NAME: &'static str = "rewrite-input";
    const DESCRIPTION: &'static str =
        "Trims string fields and fills in the schema's defaults before the tool sees the input.";

    fn on_tool_call(tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let (input, trimmed, added) = rewrite(&input, &tool.input_schema);
        let outcome = next.run(&input)?.forward(out);
        out.emit(metadata_chunk(&json!({"rewrite_input": {"trimmed": trimmed, "added": added}})));
        outcome
    }
}

export_middleware!(RewriteInput);
