//! Code shared by toolhost's file tools (`Read`, `Write`, `Edit`, `Glob`,
//! `Grep`): the absolute-path message, the Write/Edit permission check, rule
//! matching and rule suggestions on paths, unified diffs, line-ending
//! normalisation, path display and the tools' settings.
//!
//! Behavioural reference: AgentScope 2.x (spec §4.6, §6). Everything here is
//! pure (no host calls) except [`tool_config`], so it is unit-tested natively.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::borrow::Cow;

use toolhost_sdk::{Context, Decision, PermissionBehavior, PermissionRule, ToolError, suggest};

pub use toolhost_policy::{DangerLists, fnmatch, normalize};

mod diff;
pub use diff::unified_diff;

/// Whether `path` is absolute for a POSIX backend (`/…`), or a Windows one
/// (`C:\…`, `C:/…`, `\\server\…`).
pub fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/'))
}

/// The reference's error for a relative `file_path` (Read, Write, Edit).
pub fn not_absolute(path: &str) -> String {
    format!("Error: file_path must be an absolute path, got: {path}")
}

/// The text of a host error, without its kind.
pub fn error_text(e: &ToolError) -> &str {
    match e {
        ToolError::InvalidInput(m)
        | ToolError::Denied(m)
        | ToolError::NotFound(m)
        | ToolError::Timeout(m)
        | ToolError::Io(m)
        | ToolError::Unsupported(m)
        | ToolError::Internal(m) => m,
    }
}

/// `\r\n` and lone `\r` become `\n` (borrowed when there is no `\r`).
pub fn normalize_newlines(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// Python's `posixpath.dirname`: everything before the last `/`, with
/// trailing slashes removed unless it is only slashes.
pub fn dirname(path: &str) -> &str {
    let head = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "",
    };
    if !head.is_empty() && !head.bytes().all(|b| b == b'/') { head.trim_end_matches('/') } else { head }
}

/// Escapes `path` so that [`fnmatch`] matches it literally (`[`, `*`, `?`
/// each become a one-character class).
pub fn fnmatch_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '[' => out.push_str("[[]"),
            '*' => out.push_str("[*]"),
            '?' => out.push_str("[?]"),
            c => out.push(c),
        }
    }
    out
}

/// The rule content suggested for Read/Write/Edit of `file_path` (spec
/// §4.6): its directory with trailing separators stripped plus `/**`, or
/// `**` when that directory is the root. The directory is escaped
/// ([`fnmatch_escape`]) so the rule always matches the call it was made
/// for. `None` without a path, for a relative one (the call fails anyway,
/// and `**` would allow every file, not the directory asked about), and
/// for one with a `..` segment (no `dir/**` matches both its spellings; see
/// [`file_rule_matches`]).
pub fn file_rule_suggestion(file_path: &str) -> Option<String> {
    if !is_absolute(file_path) || has_dot_dot(file_path) {
        return None;
    }
    let dir = dirname(file_path).trim_end_matches(['/', '\\']);
    Some(if dir.is_empty() { "**".to_string() } else { format!("{}/**", fnmatch_escape(dir)) })
}

/// The rule content suggested for Glob/Grep: `base` (already absolute and
/// normalised) stripped of trailing separators, escaped, plus `/**`.
pub fn dir_rule_suggestion(base: &str) -> String {
    format!("{}/**", fnmatch_escape(base.trim_end_matches(['/', '\\'])))
}

/// Whether a path has a `..` segment (`/` or `\\` separated).
fn has_dot_dot(path: &str) -> bool {
    path.split(['/', '\\']).any(|seg| seg == "..")
}

/// `match_rule` of Read/Write/Edit, and of Glob/Grep on the path and
/// pattern as given: the rule content is an fnmatch pattern
/// (Python semantics, `*` crosses `/`) over `file_path` as given; an empty
/// path never matches. A path with a `..` segment is also matched in its
/// resolved form: an allow rule must match both (`/w/src/**` does not allow
/// `/w/src/../../etc/x`), a deny or ask rule either (`/etc/**` denies it).
pub fn file_rule_matches(behavior: PermissionBehavior, content: &str, file_path: &str) -> bool {
    if file_path.is_empty() {
        return false;
    }
    let given = fnmatch(content, file_path);
    if !has_dot_dot(file_path) {
        return given;
    }
    let resolved = fnmatch(content, &normalize(file_path, "/", "/"));
    match behavior {
        PermissionBehavior::Allow => given && resolved,
        _ => given || resolved,
    }
}

/// The operation names used in the Write/Edit permission messages.
#[derive(Clone, Copy, Debug)]
pub struct WriteOp {
    /// `Write` or `Edit`, as in `Write operation on sensitive file …`.
    pub noun: &'static str,
    /// `writing` or `editing`, as in `Permission granted for writing …`.
    pub verb: &'static str,
}

/// Write's operation names (its tool name is the noun).
pub const WRITE: WriteOp = WriteOp { noun: "Write", verb: "writing" };
/// Edit's operation names (its tool name is the noun).
pub const EDIT: WriteOp = WriteOp { noun: "Edit", verb: "editing" };

impl WriteOp {
    /// The tool's `check-permissions` for `file_path`: [`write_permission`]
    /// with the path's symlinks resolved by the backend. A relative path is
    /// taken against the call's `cwd` (`ctx.cwd`), never the backend's own.
    pub fn check_permissions(self, file_path: &str, ctx: &Context) -> Decision {
        let real = if file_path.is_empty() { RealPath::Unknown } else { real_path(file_path, ctx) };
        write_permission(self, file_path, real.as_ref(), ctx)
    }

    /// The tool's suggestions for `file_path`: `Tool(dir/**)`, or none.
    pub fn suggestions(self, file_path: &str) -> Vec<PermissionRule> {
        file_rule_suggestion(file_path).map(|c| suggest(self.noun, Some(c))).into_iter().collect()
    }
}

/// `check_permissions` of Write and Edit (spec §6.3), messages verbatim:
///
/// 1. no path → passthrough `No file path provided`;
/// 2. a dangerous path (after `~` expansion and normalisation against the
///    context's cwd; lists from the tool configuration) → a bypass-immune
///    ask `Permission required: {Op} operation on sensitive file {p}`;
/// 3. accept-edits or dont-ask, inside a working directory → allow;
/// 4. otherwise passthrough (the rules and the mode decide).
///
/// An invalid `dangerous_files`/`dangerous_directories` setting fails
/// closed: a safety ask naming the configuration error.
/// `real_path` is what the backend says of the path with its symlinks
/// resolved: a symlink to a dangerous file is dangerous, and a path is in a
/// working directory only if its real path is too (a path the backend
/// refuses to resolve, [`RealPath::Outside`], never is).
pub fn write_permission(op: WriteOp, file_path: &str, real_path: RealPath<&str>, ctx: &Context) -> Decision {
    if file_path.is_empty() {
        return Decision::passthrough("No file path provided");
    }
    let lists = match DangerLists::from_tool_config(&ctx.tool_config) {
        Ok(l) => l,
        Err(e) => {
            return Decision::safety_ask(format!(
                "Permission required: {} operation on {file_path} (the {} tool's settings are invalid: {e})",
                op.noun, op.noun
            ))
            .because("Safety check: invalid dangerous-path settings");
        }
    };
    let dangerous = |p: &str| toolhost_policy::is_dangerous_path(p, &ctx.cwd, &ctx.home, &lists);
    if dangerous(file_path) || real_path.resolved().is_some_and(dangerous) {
        return Decision::safety_ask(format!(
            "Permission required: {} operation on sensitive file {file_path}",
            op.noun
        ))
        .because("Safety check: dangerous file or directory");
    }
    let in_workdirs = |p: &str| toolhost_policy::in_working_dirs(p, &ctx.cwd, &ctx.home, &ctx.working_dirs);
    let real_inside = match real_path {
        RealPath::Resolved(real) => in_workdirs(real),
        RealPath::Outside => false,
        RealPath::Unknown => true,
    };
    if ctx.auto_allows_edits() && in_workdirs(file_path) && real_inside {
        return Decision::allow(format!("Permission granted for {} {file_path} (in working directory)", op.verb))
            .because("File is in working directory and not a dangerous path");
    }
    Decision::passthrough("")
}

/// What the backend says of a path with its symlinks resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealPath<S> {
    /// The real path.
    Resolved(S),
    /// The backend refused to resolve it because a symbolic link on the way
    /// leads outside the roots granted to the tool.
    Outside,
    /// Not known: the path or its folder does not exist yet, the path as
    /// given lies outside the tool's roots (a `toolhost check` request with
    /// its own working directories), or there is no host (native unit
    /// tests).
    Unknown,
}

impl RealPath<String> {
    /// Borrows the resolved path.
    pub fn as_ref(&self) -> RealPath<&str> {
        match self {
            RealPath::Resolved(s) => RealPath::Resolved(s),
            RealPath::Outside => RealPath::Outside,
            RealPath::Unknown => RealPath::Unknown,
        }
    }
}

impl<'a> RealPath<&'a str> {
    /// The resolved path, if any.
    pub fn resolved(self) -> Option<&'a str> {
        match self {
            RealPath::Resolved(s) => Some(s),
            _ => None,
        }
    }
}

/// `path` with its symlinks resolved by the backend. A relative path (or
/// one starting with `~`) is first made absolute against the call's
/// context (`ctx.cwd`, `ctx.home`), so the answer does not depend on the
/// backend's own directory. Natively (unit tests, no host) always
/// [`RealPath::Unknown`].
pub fn real_path(path: &str, ctx: &Context) -> RealPath<String> {
    if !cfg!(target_arch = "wasm32") {
        return RealPath::Unknown;
    }
    let abs = normalize(path, &ctx.cwd, &ctx.home);
    match toolhost_sdk::backend::real_path(&abs) {
        Ok(real) => RealPath::Resolved(real),
        // The host's wordings for a link that leads out of the roots (see
        // `escape_denied` in the local backend) and for toolhost's own files.
        Err(ToolError::Denied(m)) if m.contains("a symbolic link on the way") || m.contains("no tool may touch it") => {
            RealPath::Outside
        }
        Err(_) => RealPath::Unknown,
    }
}

/// The `diff` metadata of Write for `path`: headers `--- /dev/null` (new
/// file) or `--- a/{p}`, and `+++ b/{p}` (so absolute paths give `a//tmp/…`,
/// as the reference).
pub fn write_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let from = match old {
        Some(_) => format!("a/{path}"),
        None => "/dev/null".to_string(),
    };
    unified_diff(old.unwrap_or(""), new, &from, &format!("b/{path}"))
}

/// How a result path found under `root` is shown: with `root` (the
/// normalised absolute form of the search base) replaced by the base as the
/// user gave it, trailing `/` trimmed, as ripgrep and the reference's Glob
/// print them (`src` + `a.rs` → `src/a.rs`). A path outside `root` is shown
/// unchanged.
pub fn display_path(given: &str, root: &str, found: &str) -> String {
    let rel = if root == "/" {
        found.strip_prefix('/')
    } else {
        found.strip_prefix(root).and_then(|r| if r.is_empty() { Some(r) } else { r.strip_prefix('/') })
    };
    let Some(rel) = rel else { return found.to_string() };
    let base = if given.len() > 1 { given.trim_end_matches('/') } else { given };
    if rel.is_empty() {
        base.to_string()
    } else if base.is_empty() {
        rel.to_string()
    } else if base.ends_with('/') {
        format!("{base}{rel}")
    } else {
        format!("{base}/{rel}")
    }
}

/// The name of the environment variable through which the host may pass a
/// tool's settings (the JSON object also given to `check-permissions` as
/// `tool-config`) to `call`, which receives only the input.
pub const TOOL_CONFIG_ENV: &str = "TOOLHOST_TOOL_CONFIG";

/// The tool's settings for `call`: the JSON object in
/// [`TOOL_CONFIG_ENV`] when the host sets it, else `{}` (every setting at
/// its default). Only the file tools' own keys are read from it.
pub fn tool_config() -> serde_json::Value {
    std::env::var(TOOL_CONFIG_ENV)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::Value::Object(Default::default()))
}

#[cfg(test)]
mod tests;
