//! `Glob`: finds files by name pattern, newest first (AgentScope's `Glob`,
//! spec §6.5), over the host's native walk instead of a helper script.
//!
//! Differences from the reference (also in `docs/tools.md`):
//! * `.gitignore` (inside git repositories), `.ignore` and `.rgignore` are
//!   respected, and version-control directories (`.git`, `.svn`, `.hg`,
//!   `.bzr`, `.jj`, `.sl`) are skipped; dot-files are still listed;
//! * `[...]` classes and `{a,b}` alternatives are supported, `.` parts are
//!   ignored ([`pattern`]);
//! * an absolute pattern searches where it points (see
//!   [`pattern::split_absolute`]) instead of matching nothing;
//! * at most [`MAX_RESULTS`] paths are listed, with a note giving the total.

#![warn(missing_docs)]

pub mod pattern;

use serde::Deserialize;
use serde_json::json;
use toolhost_sdk::backend::{self, DirEntry, EntryKind, WalkOptions};
use toolhost_sdk::{
    Context, Decision, Output, PermissionBehavior, PermissionRule, Tool, ToolError, ToolSpec, export_tool, suggest,
};

use pattern::GlobPattern;

/// At most this many paths are listed.
pub const MAX_RESULTS: usize = 100;

/// The `Glob` tool.
pub struct Glob;

/// The input of `Glob`.
#[derive(Debug, Deserialize)]
pub struct Input {
    /// The pattern, e.g. `**/*.rs`, `src/**/*.{ts,tsx}`.
    pub pattern: String,
    /// The directory to search (default: the backend's working directory).
    #[serde(default)]
    pub path: Option<String>,
}

/// Where a call searches.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// The base as shown in results (as given, or the cwd, or the directory
    /// part of an absolute pattern).
    pub given: String,
    /// The base, absolute and normalised.
    pub base: String,
    /// The pattern relative to the base.
    pub pattern: String,
}

/// Works out the base and the relative pattern of a call.
pub fn plan(input: &Input, cwd: &str, home: &str) -> Plan {
    let given = input.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| cwd.to_string());
    let base = file_common::normalize(&given, cwd, home);
    if file_common::is_absolute(&input.pattern) {
        let (new_base, rel) = pattern::split_absolute(&input.pattern, &base);
        if let Some(b) = new_base {
            return Plan { given: b.clone(), base: file_common::normalize(&b, cwd, home), pattern: rel };
        }
        return Plan { given, base, pattern: rel };
    }
    Plan { given, base, pattern: input.pattern.clone() }
}

/// The path of `found` relative to `base` (`None` if it is not under it).
fn relative<'a>(base: &str, found: &'a str) -> Option<&'a str> {
    if base == "/" {
        return found.strip_prefix('/');
    }
    found.strip_prefix(base)?.strip_prefix('/')
}

/// The result text for walked `entries` (sorted by path): matching files,
/// newest first (ties keep path order), at most [`MAX_RESULTS`], one per line.
pub fn render(entries: &[DirEntry], plan: &Plan, pat: &GlobPattern, original_pattern: &str) -> String {
    let mut hits: Vec<(u64, &str)> = entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::File | EntryKind::Symlink))
        .filter_map(|e| {
            let rel = relative(&plan.base, &e.path)?;
            pat.matches(rel, e.kind == EntryKind::Symlink).then_some((e.mtime_ns, e.path.as_str()))
        })
        .collect();
    if hits.is_empty() {
        return format!("No files found matching pattern: {original_pattern}");
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.0));
    let total = hits.len();
    let mut text: String = hits
        .iter()
        .take(MAX_RESULTS)
        .map(|(_, p)| file_common::display_path(&plan.given, &plan.base, p))
        .collect::<Vec<_>>()
        .join("\n");
    if total > MAX_RESULTS {
        text.push_str(&format!(
            "\n\n(Results are truncated: showing the first {MAX_RESULTS} of {total} matches. Use a more specific path or pattern.)"
        ));
    }
    text
}

fn run(input: &Input, out: &mut Output) -> Result<(), String> {
    let cwd = backend::cwd();
    let home = backend::expand_user("~");
    let plan = plan(input, &cwd, &home);
    match backend::stat(&plan.base) {
        Ok(st) if st.kind == EntryKind::Directory => {}
        Ok(_) | Err(ToolError::NotFound(_)) => return Err(format!("Directory not found: {}", plan.given)),
        Err(e) => return Err(format!("Error: {}", file_common::error_text(&e))),
    }
    let pat = GlobPattern::new(&plan.pattern);
    let prefix = pat.literal_prefix();
    let root = if prefix.is_empty() {
        plan.base.clone()
    } else {
        format!("{}/{}", plan.base.trim_end_matches('/'), prefix.join("/"))
    };
    let options = WalkOptions {
        root,
        globs: Vec::new(),
        file_type: None,
        hidden: true,
        respect_ignore_files: true,
        follow_symlinks: false,
        max_entries: 0,
        // A superset of what the pattern can match, so the host skips (and
        // never stats) files whose name cannot match; `render` still
        // applies the whole pattern.
        match_names: pat.name_globs(),
    };
    let entries = match backend::walk(&options) {
        Ok(v) => v,
        // The pattern's leading directories do not exist (or are a file).
        Err(ToolError::NotFound(_) | ToolError::InvalidInput(_)) if !prefix.is_empty() => Vec::new(),
        Err(e) => return Err(format!("Error: {}", file_common::error_text(&e))),
    };
    out.text(&render(&entries, &plan, &pat, &input.pattern));
    Ok(())
}

/// The absolute form of what a call can list (`base/pattern`, with `..`
/// resolved), matched by rules as well as the reference's raw path and
/// pattern.
fn reach(input: &Input, ctx: &Context) -> (String, String) {
    let p = plan(input, &ctx.cwd, &ctx.home);
    let joined = file_common::normalize(&format!("{}/{}", p.base, p.pattern), "/", &ctx.home);
    (p.base, joined)
}

const DESCRIPTION: &str = "Fast file pattern matching that works with any codebase size.\n\n\
- Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"; also [abc] classes and {a,b} alternatives.\n\
- Returns matching file paths sorted by modification time, newest first (at most 100).\n\
- Files ignored by .gitignore and version-control directories are skipped.\n\
- path is the directory to search in; omit it to search the current working directory.";

impl Tool for Glob {
    type Input = Input;

    fn spec() -> ToolSpec {
        ToolSpec::new("Glob", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "description": "The parameters of the Glob tool.",
                "properties": {
                    "pattern": {"type": "string", "description": "The glob pattern to match files against"},
                    "path": {"type": "string", "description": "The directory to search in (default: the current working directory)"}
                },
                "required": ["pattern"]
            }))
            .read_only(true)
            .concurrency_safe(true)
            .reads("$WORKDIRS")
    }

    fn check_permissions(_input: &Input, _ctx: &Context) -> Decision {
        Decision::passthrough("Glob pattern matching is read-only.")
    }

    /// As the reference (`path` or `pattern` fnmatch the rule), and also the
    /// absolute `base/pattern` or `base/` the call searches, so that
    /// `Glob(/etc/**)` catches `{"path": "/", "pattern": "etc/*"}`.
    fn match_rule(behavior: PermissionBehavior, rule_content: &str, input: &Input, ctx: &Context) -> bool {
        let path = input.path.as_deref().unwrap_or("");
        if file_common::file_rule_matches(behavior, rule_content, path)
            || file_common::file_rule_matches(behavior, rule_content, &input.pattern)
        {
            return true;
        }
        let (base, joined) = reach(input, ctx);
        file_common::fnmatch(rule_content, &joined)
            || file_common::fnmatch(rule_content, &format!("{}/", base.trim_end_matches('/')))
    }

    fn suggestions(input: &Input, ctx: &Context) -> Vec<PermissionRule> {
        let (base, _) = reach(input, ctx);
        vec![suggest("Glob", Some(file_common::dir_rule_suggestion(&base)))]
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        if let Err(message) = run(&input, out) {
            out.error(&message);
        }
        Ok(())
    }
}

export_tool!(Glob);

#[cfg(test)]
mod tests;
