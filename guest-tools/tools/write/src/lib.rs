//! `Write`: writes a whole file, creating it (and its parent directories) or
//! replacing it, with read-before-write for existing files (AgentScope's
//! `Write`, spec §6.3).
//!
//! An existing file must have been read with `Read` (and not changed since)
//! before it can be overwritten; after a write the file must be read again
//! before the next Write or Edit, as in the reference. The write is atomic
//! (the backend writes a temporary file and renames it).

#![warn(missing_docs)]

use serde::Deserialize;
use serde_json::json;
use toolhost_sdk::{
    Context, Decision, Output, PermissionBehavior, PermissionRule, Tool, ToolError, ToolSpec, backend, export_tool,
    state,
};

/// The `Write` tool.
pub struct Write;

/// The input of `Write`.
#[derive(Debug, Deserialize)]
pub struct Input {
    /// Absolute path of the file to write.
    pub file_path: String,
    /// The complete new content (written as is, UTF-8, no line-ending changes).
    pub content: String,
}

/// The reference's line count: the number of `\n`-separated pieces
/// (`""` → 1, `"a\nb\n"` → 3).
pub fn line_count(content: &str) -> usize {
    content.split('\n').count()
}

/// The success message.
pub fn success_text(path: &str, content: &str) -> String {
    format!("The file {path} has been written successfully ({} lines).", line_count(content))
}

const DESCRIPTION: &str = "Writes a file to the filesystem, creating it and its parent directories if needed, or replacing it.\n\n\
Usage:\n\
- The file_path parameter must be an absolute path, not a relative path.\n\
- This tool overwrites an existing file completely. An existing file must be read with the Read tool first, \
  and read again after every Write or Edit, otherwise the write fails.\n\
- Prefer the Edit tool to change part of an existing file; use Write for new files or complete rewrites.";

fn run(input: &Input, out: &mut Output) -> Result<(), String> {
    let path = input.file_path.as_str();
    if !file_common::is_absolute(path) {
        return Err(file_common::not_absolute(path));
    }
    let exists = match backend::stat(path) {
        Ok(_) => true,
        Err(ToolError::NotFound(_)) => false,
        Err(e) => return Err(format!("Error: {}", file_common::error_text(&e))),
    };
    if exists && state::cached_file(path).is_none() {
        return Err(format!(
            "Error: File {path} exists but has not been read yet. You must read the file first before writing to it."
        ));
    }
    let previous = if exists {
        Some(backend::read_file(path).ok().and_then(|b| String::from_utf8(b).ok()).unwrap_or_default())
    } else {
        None
    };
    backend::write_file(path, input.content.as_bytes())
        .map_err(|e| format!("Error writing file: {}", file_common::error_text(&e)))?;
    // The write changed the file: the next Write or Edit needs a fresh Read.
    state::forget_file(path);
    let diff = file_common::write_diff(path, previous.as_deref(), &input.content);
    out.text_with_metadata(
        &success_text(path, &input.content),
        &json!({"diff": diff, "file_path": path, "occurrences": 1}),
    );
    Ok(())
}

impl Tool for Write {
    type Input = Input;

    fn spec() -> ToolSpec {
        ToolSpec::new("Write", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "description": "The parameters of the Write tool.",
                "properties": {
                    "file_path": {"type": "string", "description": "The absolute path to the file to write"},
                    "content": {"type": "string", "description": "The content to write to the file"}
                },
                "required": ["file_path", "content"]
            }))
            .state_injected(true)
            .writes("$WORKDIRS")
    }

    fn check_permissions(input: &Input, ctx: &Context) -> Decision {
        file_common::WRITE.check_permissions(&input.file_path, ctx)
    }

    fn match_rule(behavior: PermissionBehavior, rule_content: &str, input: &Input, _ctx: &Context) -> bool {
        file_common::file_rule_matches(behavior, rule_content, &input.file_path)
    }

    fn suggestions(input: &Input, _ctx: &Context) -> Vec<PermissionRule> {
        file_common::WRITE.suggestions(&input.file_path)
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        if let Err(message) = run(&input, out) {
            out.error(&message);
        }
        Ok(())
    }
}

export_tool!(Write);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::PermissionMode;

    fn ctx(mode: PermissionMode) -> Context {
        Context {
            mode,
            working_dirs: vec!["/tmp/project".into()],
            cwd: "/tmp/project".into(),
            home: "/home/u".into(),
            tool_config: json!({}),
        }
    }

    #[test]
    fn line_counts_like_the_reference() {
        assert_eq!(line_count(""), 1);
        assert_eq!(line_count("a\nb\n"), 3);
        assert_eq!(success_text("/t/a", "a\nb\n"), "The file /t/a has been written successfully (3 lines).");
    }

    #[test]
    fn permissions() {
        let input = Input { file_path: "/tmp/project/.bashrc".into(), content: String::new() };
        let d = Write::check_permissions(&input, &ctx(PermissionMode::AcceptEdits));
        assert!(d.bypass_immune);
        assert_eq!(d.message, "Permission required: Write operation on sensitive file /tmp/project/.bashrc");
        let input = Input { file_path: "/tmp/project/src/a.rs".into(), content: String::new() };
        let d = Write::check_permissions(&input, &ctx(PermissionMode::AcceptEdits));
        assert_eq!(d.behavior, PermissionBehavior::Allow);
        assert_eq!(d.message, "Permission granted for writing /tmp/project/src/a.rs (in working directory)");
    }

    #[test]
    fn suggestions_match_their_call() {
        for p in ["/tmp/project/src/a.rs", "/[x]/a?.rs", "/top.rs"] {
            let input = Input { file_path: p.into(), content: String::new() };
            let c = ctx(PermissionMode::Default);
            let rules = Write::suggestions(&input, &c);
            assert_eq!(rules.len(), 1);
            let content = rules[0].rule_content.clone().unwrap();
            assert!(Write::match_rule(PermissionBehavior::Allow, &content, &input, &c), "{content} vs {p}");
        }
        // A relative path gets none (the call fails; `**` would allow every file).
        let relative = Input { file_path: "a.rs".into(), content: String::new() };
        assert!(Write::suggestions(&relative, &ctx(PermissionMode::Default)).is_empty());
        assert_eq!(
            Write::suggestions(
                &Input { file_path: "/a/b/c.py".into(), content: String::new() },
                &ctx(PermissionMode::Default)
            )[0]
            .rule_content
            .as_deref(),
            Some("/a/b/**")
        );
    }

    #[test]
    fn new_file_diff() {
        assert!(file_common::write_diff("/t/n.txt", None, "a\nb\n").starts_with("--- /dev/null\n+++ b//t/n.txt\n"));
    }
}
