//! `Edit`: exact string replacement in a file that was read first
//! (AgentScope's `Edit`, spec §6.4).
//!
//! The base is the content recorded by the last `Read` (line endings
//! normalised to `\n`), so a CRLF file is saved with LF. The file must have
//! been read, and not changed since; after an edit it must be read again
//! before the next Write or Edit.

#![warn(missing_docs)]

use serde::Deserialize;
use serde_json::json;
use toolhost_sdk::{
    Context, Decision, Output, PermissionBehavior, PermissionRule, Tool, ToolError, ToolSpec, backend, export_tool,
    state,
};

/// The `Edit` tool.
pub struct Edit;

/// The input of `Edit`.
#[derive(Debug, Deserialize)]
pub struct Input {
    /// Absolute path of the file to modify.
    pub file_path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// A successful replacement.
#[derive(Debug, PartialEq, Eq)]
pub struct Replaced {
    /// The new content.
    pub content: String,
    /// The `occurrences` metadata: all of them with `replace_all`, else 1.
    pub occurrences: usize,
    /// The success message.
    pub message: String,
}

/// Replaces `old` by `new` in `base` with the reference's rules and
/// messages: Python `str.count` occurrences (non-overlapping; `""` counts
/// characters + 1), none → not found, several without `replace_all` →
/// error, else all or the first.
pub fn replace(path: &str, base: &str, old: &str, new: &str, replace_all: bool) -> Result<Replaced, String> {
    let n = base.matches(old).count();
    if n == 0 {
        return Err(format!("Error: old_string not found in {path}"));
    }
    if n > 1 && !replace_all {
        return Err(format!(
            "Error: old_string appears {n} times in {path}. Set replace_all=true to replace all occurrences, or make old_string more specific."
        ));
    }
    if replace_all {
        Ok(Replaced {
            content: base.replace(old, new),
            occurrences: n,
            message: format!("Successfully replaced all {n} occurrences in {path}"),
        })
    } else {
        Ok(Replaced {
            content: base.replacen(old, new, 1),
            occurrences: 1,
            message: format!("Successfully replaced 1 occurrence in {path}"),
        })
    }
}

const DESCRIPTION: &str = "Performs exact string replacements in a file.\n\n\
Usage:\n\
- The file_path parameter must be an absolute path, not a relative path.\n\
- You must read the file with the Read tool before editing it, and read it again after every Write or Edit; \
  otherwise the edit fails.\n\
- Give old_string exactly as it appears in the file (without the line-number prefix of Read's output). \
  The edit fails if old_string is not found, or if it appears more than once and replace_all is not set: \
  add surrounding context to make it unique, or set replace_all to change every occurrence.\n\
- Line endings are normalised to \\n when the file is saved.";

fn run(input: &Input, out: &mut Output) -> Result<(), String> {
    let path = input.file_path.as_str();
    if !file_common::is_absolute(path) {
        return Err(file_common::not_absolute(path));
    }
    match backend::stat(path) {
        Ok(_) => {}
        Err(ToolError::NotFound(_)) => return Err(format!("Error: File not found: {path}")),
        Err(e) => return Err(format!("Error: {}", file_common::error_text(&e))),
    }
    if input.old_string == input.new_string {
        return Err("Error: old_string and new_string are identical. No changes to make.".to_string());
    }
    let Some(base) = state::cached_file(path) else {
        return Err("Error: To edit a file, you must first read it using the Read tool.".to_string());
    };
    let done = replace(path, &base, &input.old_string, &input.new_string, input.replace_all)?;
    backend::write_file(path, done.content.as_bytes())
        .map_err(|e| format!("Error writing file: {}", file_common::error_text(&e)))?;
    state::forget_file(path);
    let diff = file_common::unified_diff(&base, &done.content, &format!("a/{path}"), &format!("b/{path}"));
    out.text_with_metadata(&done.message, &json!({"diff": diff, "file_path": path, "occurrences": done.occurrences}));
    Ok(())
}

impl Tool for Edit {
    type Input = Input;

    fn spec() -> ToolSpec {
        ToolSpec::new("Edit", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "description": "The parameters of the Edit tool.",
                "properties": {
                    "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
                    "old_string": {"type": "string", "description": "The text to replace"},
                    "new_string": {"type": "string", "description": "The text to replace it with (must be different from old_string)"},
                    "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurrences of old_string"}
                },
                "required": ["file_path", "old_string", "new_string"]
            }))
            .state_injected(true)
            .writes("$WORKDIRS")
    }

    fn check_permissions(input: &Input, ctx: &Context) -> Decision {
        file_common::EDIT.check_permissions(&input.file_path, ctx)
    }

    fn match_rule(behavior: PermissionBehavior, rule_content: &str, input: &Input, _ctx: &Context) -> bool {
        file_common::file_rule_matches(behavior, rule_content, &input.file_path)
    }

    fn suggestions(input: &Input, _ctx: &Context) -> Vec<PermissionRule> {
        file_common::EDIT.suggestions(&input.file_path)
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        if let Err(message) = run(&input, out) {
            out.error(&message);
        }
        Ok(())
    }
}

export_tool!(Edit);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::PermissionMode;

    #[test]
    fn replacement_rules() {
        let r = replace("/p", "a foo b foo", "foo", "bar", true).unwrap();
        assert_eq!(r.content, "a bar b bar");
        assert_eq!(r.occurrences, 2);
        assert_eq!(r.message, "Successfully replaced all 2 occurrences in /p");
        assert_eq!(
            replace("/p", "a foo b foo", "foo", "bar", false).unwrap_err(),
            "Error: old_string appears 2 times in /p. Set replace_all=true to replace all occurrences, or make old_string more specific."
        );
        let r = replace("/p", "a foo b", "foo", "bar", false).unwrap();
        assert_eq!((r.content.as_str(), r.occurrences), ("a bar b", 1));
        assert_eq!(r.message, "Successfully replaced 1 occurrence in /p");
        assert_eq!(replace("/p", "abc", "x", "y", false).unwrap_err(), "Error: old_string not found in /p");
        // Non-overlapping counting, as Python's str.count.
        assert_eq!(replace("/p", "aaaa", "aa", "b", true).unwrap().content, "bb");
        // replace_all with a single occurrence still reports all 1.
        assert_eq!(replace("/p", "x", "x", "y", true).unwrap().occurrences, 1);
    }

    #[test]
    fn empty_old_string_edge() {
        // Only an empty file accepts an empty old_string without replace_all.
        assert_eq!(replace("/p", "", "", "new", false).unwrap().content, "new");
        assert!(replace("/p", "ab", "", "x", false).unwrap_err().contains("appears 3 times"));
        let r = replace("/p", "ab", "", "-", true).unwrap();
        assert_eq!((r.content.as_str(), r.occurrences), ("-a-b-", 3));
        assert_eq!(replace("/p", "é", "", "-", true).unwrap().content, "-é-");
    }

    #[test]
    fn suggestions_match_their_call() {
        let ctx = Context {
            mode: PermissionMode::Default,
            working_dirs: vec![],
            cwd: "/".into(),
            home: "/h".into(),
            tool_config: json!({}),
        };
        let input =
            |p: &str| Input { file_path: p.into(), old_string: "x".into(), new_string: "y".into(), replace_all: false };
        for p in ["/a/b.txt", "/a*/[b]/c"] {
            let rules = Edit::suggestions(&input(p), &ctx);
            assert_eq!(rules.len(), 1);
            let content = rules[0].rule_content.clone().unwrap();
            assert!(Edit::match_rule(PermissionBehavior::Allow, &content, &input(p), &ctx), "{content} vs {p}");
        }
        // A relative path gets none (the call fails; `**` would allow every file).
        assert!(Edit::suggestions(&input("b.txt"), &ctx).is_empty());
    }

    #[test]
    fn permission_messages() {
        let ctx = Context {
            mode: PermissionMode::DontAsk,
            working_dirs: vec!["/w".into()],
            cwd: "/w".into(),
            home: "/h".into(),
            tool_config: json!({}),
        };
        let input = Input {
            file_path: "/w/.git/config".into(),
            old_string: "x".into(),
            new_string: "y".into(),
            replace_all: false,
        };
        let d = Edit::check_permissions(&input, &ctx);
        assert!(d.bypass_immune);
        assert_eq!(d.message, "Permission required: Edit operation on sensitive file /w/.git/config");
        let input = Input { file_path: "/w/a.txt".into(), ..input };
        assert_eq!(
            Edit::check_permissions(&input, &ctx).message,
            "Permission granted for editing /w/a.txt (in working directory)"
        );
    }
}
