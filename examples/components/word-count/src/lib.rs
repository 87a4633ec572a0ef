//! `WordCount`: counts the lines, words and bytes of text files, like `wc`.
//!
//! A third-party tool written only against `toolhost-sdk`. It declares that it
//! reads under the working directories; the host gives it nothing until the
//! user grants that (`--grant WordCount=fs-read`).

use serde::Deserialize;
use serde_json::json;
use toolhost_sdk::{Output, PermissionBehavior, Tool, ToolError, ToolSpec, backend, export_tool};

struct WordCount;

#[derive(Deserialize)]
struct Input {
    /// Absolute paths of the files to count.
    paths: Vec<String>,
}

#[derive(Default)]
struct Counts {
    lines: usize,
    words: usize,
    bytes: usize,
}

impl Counts {
    fn of(bytes: &[u8]) -> Self {
        let text = String::from_utf8_lossy(bytes);
        Self {
            lines: bytes.iter().filter(|&&b| b == b'\n').count(),
            words: text.split_whitespace().count(),
            bytes: bytes.len(),
        }
    }
}

impl Tool for WordCount {
    type Input = Input;

    fn spec() -> ToolSpec {
        ToolSpec::new("WordCount", "Counts lines, words and bytes of text files (like `wc`). Pass absolute paths.")
            .schema(json!({
                "type": "object",
                "properties": {
                    "paths": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "description": "Absolute paths of the files to count"
                    }
                },
                "required": ["paths"],
                "additionalProperties": false
            }))
            .read_only(true)
            .concurrency_safe(true)
            .reads("$WORKDIRS")
    }

    fn match_rule(
        _behavior: PermissionBehavior,
        rule_content: &str,
        input: &Input,
        _ctx: &toolhost_sdk::Context,
    ) -> bool {
        // `WordCount(/src/)` covers calls whose every path starts with that prefix.
        input.paths.iter().all(|p| p.starts_with(rule_content))
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        let mut total = Counts::default();
        let mut rows = Vec::new();
        for path in &input.paths {
            let bytes = backend::read_file(path)?;
            let c = Counts::of(&bytes);
            out.text(&format!("{:>8} {:>8} {:>8} {path}\n", c.lines, c.words, c.bytes));
            rows.push(json!({"path": path, "lines": c.lines, "words": c.words, "bytes": c.bytes}));
            total.lines += c.lines;
            total.words += c.words;
            total.bytes += c.bytes;
        }
        if input.paths.len() > 1 {
            out.text(&format!("{:>8} {:>8} {:>8} total\n", total.lines, total.words, total.bytes));
        }
        out.text_with_metadata("", &json!({"files": rows}));
        Ok(())
    }
}

export_tool!(WordCount);
