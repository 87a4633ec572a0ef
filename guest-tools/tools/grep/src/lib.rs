//! `Grep`: searches file contents with a regular expression and prints the
//! results exactly as ripgrep does (AgentScope's `Grep`, spec §6.6), over the
//! host's native search (ripgrep's engine) instead of running `rg`.
//!
//! Differences from the reference (also in `docs/tools.md`):
//! * results are ordered by path (ripgrep's parallel walk gives no order);
//! * an invalid pattern gives `Invalid regex: …` (the reference:
//!   `ripgrep error (code 2): …`); other failures `Error: …`;
//! * `.gitignore` files apply inside git repositories, as with `rg`.

#![warn(missing_docs)]

pub mod render;

use serde::Deserialize;
use serde_json::json;
use toolhost_sdk::backend::{self, EntryKind, SearchMode, SearchRequest, WalkOptions};
use toolhost_sdk::{
    Context, Decision, Output, PermissionBehavior, PermissionRule, ResultState, Tool, ToolError, ToolSpec, export_tool,
    suggest, text_chunk,
};

/// Lines wider than this many bytes are replaced by a notice (`--max-columns 500`).
pub const MAX_COLUMNS: u32 = 500;
/// `head_limit` when it is not given.
pub const DEFAULT_HEAD_LIMIT: usize = 250;

/// The `Grep` tool.
pub struct Grep;

/// The input of `Grep` (names as the reference's schema).
#[derive(Debug, Default, Deserialize)]
pub struct Input {
    /// The regular expression.
    pub pattern: String,
    /// File or directory to search (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// `content`, `files_with_matches` (default) or `count`.
    #[serde(default)]
    pub output_mode: Option<String>,
    /// File filter globs, e.g. `*.js`, `*.{ts,tsx}`, `*.rs, *.toml`.
    #[serde(default)]
    pub glob: Option<String>,
    /// A ripgrep file type (`rust`, `py`, `js`, …).
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// Lines after each match (content mode).
    #[serde(default, rename = "-A")]
    pub after: Option<u32>,
    /// Lines before each match (content mode).
    #[serde(default, rename = "-B")]
    pub before: Option<u32>,
    /// Lines around each match (content mode).
    #[serde(default, rename = "-C")]
    pub around: Option<u32>,
    /// Lines around each match; wins over `-C`.
    #[serde(default)]
    pub context: Option<u32>,
    /// Show line numbers (content mode); default true.
    #[serde(default)]
    pub n: Option<bool>,
    /// Case-insensitive.
    #[serde(default)]
    pub i: Option<bool>,
    /// Alias of `i`.
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    /// Let patterns span lines (`.` matches newlines).
    #[serde(default)]
    pub multiline: Option<bool>,
    /// At most this many output lines (default 250; 0 = all).
    #[serde(default)]
    pub head_limit: Option<i64>,
    /// Skip this many output lines first.
    #[serde(default)]
    pub offset: Option<i64>,
}

/// Splits the `glob` parameter as the reference: on whitespace; a piece with
/// both `{` and `}` is kept whole, others are split on `,` (empty parts dropped).
pub fn split_globs(glob: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in glob.split_whitespace() {
        if piece.contains('{') && piece.contains('}') {
            out.push(piece.to_string());
        } else {
            out.extend(piece.split(',').filter(|g| !g.is_empty()).map(String::from));
        }
    }
    out
}

/// The search mode named by `output_mode` (unknown names: the default).
pub fn mode_of(name: Option<&str>) -> SearchMode {
    match name {
        Some("content") => SearchMode::Content,
        Some("count") => SearchMode::Count,
        _ => SearchMode::FilesWithMatches,
    }
}

/// `(before, after)` context lines: `context`, else `-C`, else `-B`/`-A`;
/// none outside content mode.
pub fn context_of(input: &Input, mode: SearchMode) -> (u32, u32) {
    if mode != SearchMode::Content {
        return (0, 0);
    }
    if let Some(c) = input.context.or(input.around) {
        return (c, c);
    }
    (input.before.unwrap_or(0), input.after.unwrap_or(0))
}

fn search_error(e: &ToolError, given: &str) -> String {
    match e {
        ToolError::InvalidInput(m) if m.starts_with("invalid regular expression ") => {
            format!("Invalid regex: {}", &m["invalid regular expression ".len()..])
        }
        ToolError::NotFound(_) => format!("Error: Path does not exist: {given}"),
        other => format!("Error: {}", file_common::error_text(other)),
    }
}

fn run(input: &Input, out: &mut Output) -> Result<(), String> {
    let head_limit = input.head_limit;
    if head_limit.is_some_and(|h| h < 0) {
        return Err("Error: head_limit must be non-negative.".to_string());
    }
    let offset = input.offset.unwrap_or(0);
    if offset < 0 {
        return Err("Error: offset must be non-negative.".to_string());
    }
    let cwd = backend::cwd();
    let home = backend::expand_user("~");
    let given = input.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| cwd.clone());
    let root = file_common::normalize(&given, &cwd, &home);
    let single_file = match backend::stat(&given) {
        Ok(st) => st.kind != EntryKind::Directory,
        Err(e) => return Err(search_error(&e, &given)),
    };
    let mode = mode_of(input.output_mode.as_deref());
    let (before, after) = context_of(input, mode);
    let request = SearchRequest {
        files: WalkOptions {
            root: given.clone(),
            globs: input.glob.as_deref().map(split_globs).unwrap_or_default(),
            file_type: input.file_type.clone().filter(|t| !t.is_empty()),
            hidden: true,
            respect_ignore_files: true,
            follow_symlinks: false,
            max_entries: 0,
            match_names: Vec::new(),
        },
        pattern: input.pattern.clone(),
        case_insensitive: input.i.unwrap_or(false) || input.case_insensitive.unwrap_or(false),
        multiline: input.multiline.unwrap_or(false),
        mode,
        before_context: before,
        after_context: after,
        max_columns: MAX_COLUMNS,
    };
    let files = backend::search(&request).map_err(|e| search_error(&e, &given))?;
    let style = render::Style {
        mode,
        with_path: !single_file,
        line_numbers: input.n.unwrap_or(true),
        separators: before > 0 || after > 0,
    };
    let lines = render::lines(&files, &style, |p| file_common::display_path(&given, &root, p));
    let text = if lines.is_empty() {
        format!("No matches found for pattern: {}", input.pattern)
    } else {
        render::paginate(&lines, head_limit.map(|h| h as usize), offset as usize)
    };
    out.emit(text_chunk(&text, ResultState::Success, None));
    Ok(())
}

/// The absolute, normalised path a call searches.
fn searched(input: &Input, ctx: &Context) -> String {
    let given = input.path.as_deref().filter(|p| !p.is_empty()).unwrap_or(&ctx.cwd);
    file_common::normalize(given, &ctx.cwd, &ctx.home)
}

const DESCRIPTION: &str = "A powerful search tool built on ripgrep's engine.\n\n\
Usage:\n\
- Supports full regex syntax (e.g. \"log.*Error\", \"function\\\\s+\\\\w+\"); literal braces need escaping (\"interface\\\\{\\\\}\").\n\
- Filter files with glob (e.g. \"*.js\", \"**/*.tsx\") or type (e.g. \"js\", \"py\", \"rust\").\n\
- output_mode: \"content\" shows matching lines, \"files_with_matches\" (default) shows only file paths, \"count\" shows match counts.\n\
- -A/-B/-C (or context) show context lines and n shows line numbers, in content mode.\n\
- multiline: true lets patterns span lines.\n\
- Results are limited to head_limit lines (default 250, 0 for all); use offset to page through them.\n\
- Hidden files are searched; .gitignore'd files and version-control directories are skipped.";

impl Tool for Grep {
    type Input = Input;

    fn spec() -> ToolSpec {
        let int = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
        ToolSpec::new("Grep", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "description": "The parameters of the Grep tool.",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression pattern to search for in file contents"},
                    "path": {"type": "string", "description": "File or directory to search in (default: the current working directory)"},
                    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "default": "files_with_matches",
                                    "description": "\"content\" shows matching lines, \"files_with_matches\" shows file paths, \"count\" shows match counts"},
                    "glob": {"type": "string", "description": "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\")"},
                    "type": {"type": "string", "description": "File type to search (rg --type), e.g. js, py, rust, go, java"},
                    "-A": int("Number of lines to show after each match (content mode)"),
                    "-B": int("Number of lines to show before each match (content mode)"),
                    "-C": int("Number of lines to show before and after each match (content mode)"),
                    "context": int("Number of lines to show before and after each match (content mode); overrides -C"),
                    "n": {"type": "boolean", "default": true, "description": "Show line numbers (content mode)"},
                    "i": {"type": "boolean", "default": false, "description": "Case-insensitive search"},
                    "case_insensitive": {"type": "boolean", "default": false, "description": "Case-insensitive search (alias of i)"},
                    "multiline": {"type": "boolean", "default": false, "description": "Let patterns span lines; . matches newlines"},
                    "head_limit": {"type": "integer", "minimum": 0, "default": 250,
                                   "description": "Show at most this many output lines (0 for all)"},
                    "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Skip this many output lines first"}
                },
                "required": ["pattern"]
            }))
            .read_only(true)
            .concurrency_safe(true)
            .reads("$WORKDIRS")
    }

    fn check_permissions(_input: &Input, _ctx: &Context) -> Decision {
        Decision::passthrough("Grep search is read-only.")
    }

    /// As the reference (`path or cwd` fnmatch the rule), and also the
    /// absolute searched path, alone or followed by `/` (its contents), so
    /// the suggested `dir/**` matches a search of `dir`.
    fn match_rule(behavior: PermissionBehavior, rule_content: &str, input: &Input, ctx: &Context) -> bool {
        let raw = input.path.as_deref().filter(|p| !p.is_empty()).unwrap_or(&ctx.cwd);
        let abs = searched(input, ctx);
        file_common::file_rule_matches(behavior, rule_content, raw)
            || file_common::fnmatch(rule_content, &abs)
            || file_common::fnmatch(rule_content, &format!("{}/", abs.trim_end_matches('/')))
    }

    fn suggestions(input: &Input, ctx: &Context) -> Vec<PermissionRule> {
        vec![suggest("Grep", Some(file_common::dir_rule_suggestion(&searched(input, ctx))))]
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        if let Err(message) = run(&input, out) {
            out.error(&message);
        }
        Ok(())
    }
}

export_tool!(Grep);

#[cfg(test)]
mod tests;
