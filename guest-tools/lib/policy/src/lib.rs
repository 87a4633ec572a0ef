//! Path policy shared by toolhost's built-in tools.
//!
//! Pure, lexical and allocation-light: it runs inside wasm32-wasip2
//! components and natively in unit tests. Nothing here touches the
//! filesystem; the host passes every form of a path that matters (for
//! example both the given and the symlink-resolved form of each working
//! directory).
//!
//! Behavioural reference: AgentScope 2.x, `ToolBase._is_dangerous_path`
//! (spec §2.5) and `_path_in_allowed_working_path` (spec §2.4), with one
//! deliberate strengthening: dangerous-file entries that contain `/`
//! (`.ssh/config`) also match as a path suffix.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use serde_json::Value;

mod fnmatch;
pub use fnmatch::{Wildcard, fnmatch};

/// Files that are dangerous to modify (AgentScope `DEFAULT_DANGEROUS_FILES`,
/// spec §2.1, 22 entries in the reference order). Matched case-insensitively
/// against the basename of a path; entries containing `/` also match as a
/// path suffix (see [`is_dangerous_path`]).
pub const DEFAULT_DANGEROUS_FILES: &[&str] = &[
    ".gitconfig",
    ".gitmodules",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".ssh/config",
    ".ssh/authorized_keys",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".env",
    ".envrc",
    ".env.local",
    ".env.development",
    ".env.development.local",
    ".env.test",
    ".env.test.local",
    ".env.staging",
    ".env.production",
    ".env.production.local",
];

/// Directories whose contents are dangerous to modify (AgentScope
/// `DEFAULT_DANGEROUS_DIRECTORIES`): any path with one of these as a segment
/// (case-insensitive) is dangerous.
pub const DEFAULT_DANGEROUS_DIRECTORIES: &[&str] = &[".git", ".vscode", ".idea", ".ssh"];

/// The dangerous-file and dangerous-directory lists a tool checks paths
/// against. [`Default`] gives [`DEFAULT_DANGEROUS_FILES`] and
/// [`DEFAULT_DANGEROUS_DIRECTORIES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DangerLists {
    /// File names (or `dir/file` suffixes) that are dangerous to modify.
    pub files: Vec<String>,
    /// Directory names that make every path below them dangerous.
    pub directories: Vec<String>,
}

impl Default for DangerLists {
    fn default() -> Self {
        Self {
            files: DEFAULT_DANGEROUS_FILES.iter().map(|s| s.to_string()).collect(),
            directories: DEFAULT_DANGEROUS_DIRECTORIES.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl DangerLists {
    /// Builds the lists from a tool's JSON configuration.
    ///
    /// The keys `"dangerous_files"` and `"dangerous_directories"`, when
    /// present, must be arrays of strings and **replace** the corresponding
    /// default list; an empty array turns that check off. Absent keys (or a
    /// `null` configuration) keep the defaults. Other keys are ignored.
    ///
    /// # Errors
    /// A message naming the offending key when a value has the wrong type,
    /// or saying the configuration is not an object.
    pub fn from_tool_config(config: &Value) -> Result<Self, String> {
        let mut lists = Self::default();
        let obj = match config {
            Value::Null => return Ok(lists),
            Value::Object(map) => map,
            _ => return Err("tool configuration must be a JSON object".to_string()),
        };
        if let Some(v) = obj.get("dangerous_files") {
            lists.files = string_list(v, "dangerous_files")?;
        }
        if let Some(v) = obj.get("dangerous_directories") {
            lists.directories = string_list(v, "dangerous_directories")?;
        }
        Ok(lists)
    }
}

fn string_list(v: &Value, key: &str) -> Result<Vec<String>, String> {
    let arr = v.as_array().ok_or_else(|| format!("configuration key `{key}` must be an array of strings"))?;
    arr.iter()
        .map(|item| {
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("configuration key `{key}` must be an array of strings (found {item})"))
        })
        .collect()
}

/// Expands a leading `~` (alone) or `~/` to `home`, like Python's
/// `os.path.expanduser` for the current user. `~user` forms and `~`
/// anywhere else are left unchanged.
pub fn expand_user(path: &str, home: &str) -> String {
    if path == "~" {
        return home.to_string();
    }
    if let Some(rest) = path.strip_prefix("~/") {
        let home = home.trim_end_matches('/');
        return format!("{home}/{rest}");
    }
    path.to_string()
}

/// Makes `path` absolute and lexically normal: expands `~` (see
/// [`expand_user`]), joins a relative path onto `cwd`, resolves `.` and `..`
/// without touching the filesystem (`..` at the root stays at the root),
/// collapses repeated `/` and strips any trailing `/`. The result is `/` or
/// starts with `/` and has no trailing `/`. An empty `path` gives `cwd`
/// normalised. A relative `cwd` is treated as relative to `/`.
pub fn normalize(path: &str, cwd: &str, home: &str) -> String {
    let expanded = expand_user(path, home);
    let mut parts: Vec<&str> = Vec::new();
    let joined;
    let full: &str = if expanded.starts_with('/') {
        &expanded
    } else {
        let cwd_expanded = expand_user(cwd, home);
        joined = format!("{cwd_expanded}/{expanded}");
        &joined
    };
    for seg in full.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = String::with_capacity(full.len());
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// True when `path` names a file that is dangerous to modify (spec §2.5):
/// after [`normalize`], its basename equals a `lists.files` entry, or one of
/// its segments equals a `lists.directories` entry, both case-insensitively.
///
/// Stricter than the reference: a `files` entry containing `/`
/// (`.ssh/config`) also matches when the normalised path ends with `/` +
/// entry (case-insensitive), so it is enforced even when the directory list
/// is turned off.
pub fn is_dangerous_path(path: &str, cwd: &str, home: &str, lists: &DangerLists) -> bool {
    let abs = normalize(path, cwd, home).to_lowercase();
    let base = abs.rsplit('/').next().unwrap_or("");
    for entry in &lists.files {
        let e = lowercase(entry.trim_matches('/'));
        let e = e.as_ref();
        if e.is_empty() {
            continue;
        }
        if base == e {
            return true;
        }
        // `abs` ends with `/` + `e`.
        if e.contains('/') && abs.len() > e.len() && abs.ends_with(e) && abs.as_bytes()[abs.len() - e.len() - 1] == b'/'
        {
            return true;
        }
    }
    for dir in &lists.directories {
        let d = lowercase(dir.trim_matches('/'));
        let d = d.as_ref();
        if d.is_empty() {
            continue;
        }
        if d.contains('/') {
            // A multi-segment directory entry: match it as a run of segments.
            let needle = format!("/{d}");
            if abs.ends_with(&needle) || abs.contains(&format!("{needle}/")) {
                return true;
            }
        } else if abs.split('/').any(|seg| seg == d) {
            return true;
        }
    }
    false
}

/// True when `path` lies inside one of `working_dirs` (spec §2.4): after
/// [`normalize`] of both (same `cwd` and `home`), the path equals the
/// directory or starts with the directory followed by `/`. Purely lexical:
/// the host passes both the given and the symlink-resolved form of each
/// working directory. Empty entries are ignored; a working dir of `/`
/// contains every absolute path. The `cwd` is only used to resolve relative
/// paths; it is not implicitly a working directory.
pub fn in_working_dirs(path: &str, cwd: &str, home: &str, working_dirs: &[String]) -> bool {
    let file = normalize(path, cwd, home);
    working_dirs.iter().filter(|d| !d.is_empty()).any(|d| {
        let dir = normalize(d, cwd, home);
        dir == "/"
            || file == dir
            || (file.len() > dir.len()
                && file.starts_with(dir.as_str())
                && file.as_bytes().get(dir.len()) == Some(&b'/'))
    })
}

/// `s.to_lowercase()`, without allocating when that changes nothing (ASCII
/// text without capitals, the usual list entry).
fn lowercase(s: &str) -> std::borrow::Cow<'_, str> {
    if s.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(s.to_lowercase())
    }
}

#[cfg(test)]
mod tests;
