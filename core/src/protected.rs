//! toolhost's own files, off limits to every tool.
//!
//! The settings file (the one read, `--config` included, the one "allow
//! and remember" writes to, and `toolhost.toml` of every working
//! directory), the session state folder, the compile cache and the
//! configured plugin and middleware files and plugin folders decide what
//! later calls may do: a tool that rewrites `mode = "bypass"`
//! into the settings file, plants a session or swaps a compiled component
//! would widen its own rights. So no tool, built-in or plugin, may touch
//! them, whatever the mode, the grants or the rules. Two layers hold this:
//!
//! * the permission engine denies a call whose input names a protected path
//!   (a path-like field such as `file_path` or `path`, or a word of a
//!   `command`), before any rule and in every mode, bypass included
//!   ([`ProtectedPaths::named_in_input`]; lexical, no filesystem access);
//! * the local backend refuses every file operation on a protected path or
//!   below a protected folder, symlinks resolved and hard links to a
//!   protected file recognised, and leaves them out of walks and searches
//!   (see `toolhost::backend::local`).
//!
//! The lock file (`toolhost.lock`, [`crate::lockfile`]) pins which plugin
//! bytes a locked host accepts and what each may declare: it is protected
//! like the settings file, where it is configured and beside every working
//! directory's settings file.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::path::normalize_lexically;

/// What a protected path is to toolhost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtectedKind {
    /// A settings file (read, or written by "allow and remember").
    SettingsFile,
    /// The folder of session state files.
    StateDir,
    /// The compile cache folder.
    CacheDir,
    /// A configured plugin or middleware component file: whoever rewrites
    /// it runs with that component's grants on the next start.
    ComponentFile,
    /// A configured plugin folder: a file added to it is loaded as a plugin
    /// on the next start.
    PluginDir,
    /// The lock file: the pinned hashes and approved declarations.
    LockFile,
    /// The audit log or one of its rotated files: a tool that could write
    /// it could forge or erase the record of what it did.
    AuditLog,
    /// The folder of audit logs kept one per replica (`{replica}` in
    /// `[audit] path`): the logs of other processes lie there too.
    AuditDir,
    /// A configured skill folder (`[skills] dirs`): its `SKILL.md` files
    /// are instructions to the model, listed at the next start.
    SkillDir,
    /// A secret toolhost reads (`[state] keyring_file`, `[state.redis]
    /// password_file`): a tool that read it could forge the answer to a
    /// question or reach the shared state store itself.
    Secret,
}

impl ProtectedKind {
    /// How messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            ProtectedKind::SettingsFile => "toolhost's own settings file",
            ProtectedKind::StateDir => "toolhost's session state folder",
            ProtectedKind::CacheDir => "toolhost's compile cache",
            ProtectedKind::ComponentFile => "a plugin or middleware component toolhost loads",
            ProtectedKind::PluginDir => "a plugin folder toolhost loads from",
            ProtectedKind::LockFile => "toolhost's lock file of pinned plugins",
            ProtectedKind::AuditLog => "toolhost's audit log",
            ProtectedKind::AuditDir => "toolhost's folder of audit logs",
            ProtectedKind::SkillDir => "a skill folder toolhost reads",
            ProtectedKind::Secret => "a secret toolhost reads",
        }
    }

    fn is_dir(self) -> bool {
        !matches!(
            self,
            ProtectedKind::SettingsFile
                | ProtectedKind::ComponentFile
                | ProtectedKind::LockFile
                | ProtectedKind::AuditLog
                | ProtectedKind::Secret
        )
    }
}

/// One protected path, as configured and with its symlinks resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedPath {
    /// What it is.
    pub kind: ProtectedKind,
    /// Absolute and lexically normal, as configured.
    pub path: PathBuf,
    /// The symlink-free form, when it differs from `path`.
    pub real: Option<PathBuf>,
}

impl ProtectedPath {
    /// Whether `path` (absolute, lexically normal) is this path or, for a
    /// folder, lies below it.
    fn covers(&self, path: &Path) -> bool {
        let hit = |p: &Path| if self.kind.is_dir() { path.starts_with(p) } else { path == p };
        hit(&self.path) || self.real.as_deref().is_some_and(hit)
    }

    /// Whether this path lies at or below `path` (removing `path` would
    /// remove it).
    fn below(&self, path: &Path) -> bool {
        self.path.starts_with(path) || self.real.as_deref().is_some_and(|r| r.starts_with(path))
    }

    /// The refusal for `path`, which this entry covers or lies below.
    pub fn refusal(&self, path: &Path) -> String {
        let what = self.kind.describe();
        if path == self.path || Some(path) == self.real.as_deref() {
            format!("{} is {what}; no tool may touch it", path.display())
        } else if self.covers(path) {
            format!("{} is inside {what} {}; no tool may touch it", path.display(), self.path.display())
        } else {
            format!("{} contains {what} {}; no tool may touch it", path.display(), self.path.display())
        }
    }
}

/// The set of protected paths of one host. Empty by default (a backend or
/// context built without a host protects nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    entries: Vec<ProtectedPath>,
}

impl ProtectedPaths {
    /// No protected path.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `path` (made absolute against the current directory) as `kind`.
    /// Its symlink-free form is computed now, as far as the path exists.
    pub fn add(&mut self, kind: ProtectedKind, path: &Path) {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let path = normalize_lexically(&abs);
        let real = real_form(&path).filter(|r| *r != path);
        if !self.entries.iter().any(|e| e.path == path && e.kind == kind) {
            self.entries.push(ProtectedPath { kind, path, real });
        }
    }

    /// Whether nothing is protected.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every protected path.
    pub fn entries(&self) -> &[ProtectedPath] {
        &self.entries
    }

    /// The entry that `path` (absolute; normalised here) is, or lies below.
    /// Lexical: symlinks are the caller's job.
    pub fn covering(&self, path: &Path) -> Option<&ProtectedPath> {
        let path = normalize_lexically(path);
        self.entries.iter().find(|e| e.covers(&path))
    }

    /// The first entry at or below `path` (absolute): what removing `path`
    /// would remove.
    pub fn below(&self, path: &Path) -> Option<&ProtectedPath> {
        let path = normalize_lexically(path);
        self.entries.iter().find(|e| e.below(&path))
    }

    /// The protected paths as seen through `given`, a path whose real form
    /// is `real` (a walk started through a symlinked folder sees entries
    /// under `given`, not under `real`).
    pub fn seen_through(&self, given: &Path, real: &Path) -> ProtectedPaths {
        let mut out = self.clone();
        if given == real {
            return out;
        }
        for e in &self.entries {
            for form in std::iter::once(&e.path).chain(e.real.as_ref()) {
                if let Ok(rest) = form.strip_prefix(real) {
                    out.entries.push(ProtectedPath { kind: e.kind, path: given.join(rest), real: None });
                }
            }
        }
        out
    }

    /// Whether `input_text` (a call's input as JSON text) could name a
    /// protected path at all, as [`ProtectedPaths::named_in_input`] reads
    /// it: a cheap test that lets most decisions skip parsing the input.
    ///
    /// A string can name an entry only by spelling the entry's last
    /// component (or that of its real form), since `..` only climbs and a
    /// word is joined to `cwd` or `home` — once `$HOME` and `${HOME}` are
    /// expanded as the command scan expands them, and unless `cwd` or
    /// `home` (taken against `cwd` when relative, as the scan takes it) is
    /// an entry or lies below one, or the text holds a backslash or a
    /// single quote; those cases answer `true`.
    pub fn may_be_named_in(&self, input_text: &str, cwd: &str, home: &str) -> bool {
        if self.is_empty() {
            return false;
        }
        // `home` put in place of `$HOME` can complete a name the text only
        // starts (`${HOME}host.toml` with home `/w/tool`) or bring a whole
        // one as a word of its own (a home that holds a blank).
        let text = expand_home(input_text, home);
        // A backslash (a JSON escape, or one the command scan drops) or a
        // quote (which the command scan removes) can join the pieces of a
        // name that the text does not spell in one piece.
        // From a `cwd` or `home` at or below an entry, `..` climbs to it
        // without a name: below a file entry too, which no file system
        // allows but a path's text does.
        let home = Path::new(cwd).join(home);
        if text.contains(['\\', '\'']) || [Path::new(cwd), &home].into_iter().any(|d| self.at_or_above(d).is_some()) {
            return true;
        }
        self.entries
            .iter()
            .flat_map(|e| std::iter::once(&e.path).chain(e.real.as_ref()))
            .any(|p| p.file_name().and_then(|n| n.to_str()).is_none_or(|name| text.contains(name)))
    }

    /// The entry that is `path` (absolute; normalised here) or one of its
    /// ancestors, whatever the entry's kind.
    fn at_or_above(&self, path: &Path) -> Option<&ProtectedPath> {
        let path = normalize_lexically(path);
        self.entries
            .iter()
            .find(|e| path.starts_with(&e.path) || e.real.as_deref().is_some_and(|r| path.starts_with(r)))
    }

    /// The refusal text when `input` (a tool call's input object) names a
    /// protected path: the value of a path-like key (`path`, `*_path`, `cwd`,
    /// `dir`, `directory`, or an array of such under `paths`), or a word of
    /// a `command` (split at blanks, quotes and shell operators, with `~`,
    /// `$HOME` and `${HOME}` expanded). Relative paths are taken against
    /// `cwd` and, in a command that changes directory, against every folder
    /// it may change to ([`CommandScan`]); after a change of directory that
    /// cannot be read from the text (`cd "$D"`, `cd -`), a relative word
    /// that spells the name of a protected path is refused too. Lexical
    /// only: a path spelled through a symlink, a glob or a variable is left
    /// to the backend (files) and the process sandbox (commands).
    pub fn named_in_input(&self, input: &serde_json::Value, cwd: &str, home: &str) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut found = None;
        visit_strings(input, None, &mut |key, text| {
            if found.is_some() {
                return;
            }
            found = if key == "command" {
                self.named_in_command(text, cwd, home)
            } else if is_path_key(key) {
                self.named(text, cwd, home)
            } else {
                None
            };
        });
        found
    }

    /// The refusal when a word of `command` names a protected path, from
    /// `cwd` or from any folder the command may `cd` to.
    ///
    /// A relative word names an entry from a folder only if it spells the
    /// entry's name or the folder is an entry or below one (the reasoning of
    /// [`ProtectedPaths::may_be_named_in`], per folder), so other words are
    /// resolved only from protected folders. Words that spell a name are
    /// resolved from every folder, within [`MAX_RESOLVED_BYTES`] of paths
    /// in all; past that, a word that still needs resolving is refused as
    /// if its folder were unknown.
    fn named_in_command(&self, command: &str, cwd: &str, home: &str) -> Option<String> {
        let scan = CommandScan::new(command, cwd, home);
        let every_dir: Vec<&PathBuf> = scan.dirs.iter().collect();
        let protected_dirs: Vec<&PathBuf> = scan.dirs.iter().filter(|d| self.at_or_above(d).is_some()).collect();
        let mut resolved = 0;
        for word in &scan.words {
            let relative = !word.starts_with('/') && !word.starts_with('~');
            if !relative {
                if let Some(why) = self.named(word, cwd, home) {
                    return Some(why);
                }
                continue;
            }
            let spelled = self.spelled_by(word);
            let dirs = if spelled.is_some() { &every_dir } else { &protected_dirs };
            resolved += dirs.iter().map(|d| d.as_os_str().len() + word.len()).sum::<usize>();
            if resolved > MAX_RESOLVED_BYTES {
                let why = format!(
                    "the command names it from more folders than toolhost follows: {} MiB of paths resolved",
                    MAX_RESOLVED_BYTES >> 20
                );
                if let Some(entry) = spelled.or_else(|| dirs.iter().find_map(|d| self.at_or_above(d))) {
                    return Some(unknown_folder_refusal(word, entry, &why));
                }
            }
            for dir in dirs {
                if let Some(why) = self.named(word, &dir.to_string_lossy(), home) {
                    return Some(why);
                }
            }
            if let (Some(unknown), Some(entry)) = (&scan.unknown_cd, spelled) {
                let why = format!(
                    "the command changes directory with `{unknown}`, which cannot be read from its text, and then \
                     names `{word}`"
                );
                return Some(unknown_folder_refusal(word, entry, &why));
            }
        }
        None
    }

    /// The first entry whose name (or its real form's) is a component of
    /// `word`: what `word` may name from a folder that is not known.
    fn spelled_by(&self, word: &str) -> Option<&ProtectedPath> {
        let parts: Vec<&std::ffi::OsStr> = Path::new(word)
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(part) => Some(part),
                _ => None,
            })
            .collect();
        self.entries.iter().find(|e| {
            std::iter::once(&e.path)
                .chain(e.real.as_ref())
                .any(|p| p.file_name().is_some_and(|name| parts.contains(&name)))
        })
    }

    fn named(&self, word: &str, cwd: &str, home: &str) -> Option<String> {
        let abs = resolve(word, Path::new(cwd), home)?;
        self.covering(&abs).map(|e| e.refusal(&abs))
    }
}

/// The refusal of `word`, which may name `entry` from a folder the scan
/// does not know (`why`).
fn unknown_folder_refusal(word: &str, entry: &ProtectedPath, why: &str) -> String {
    format!(
        "`{word}` may be {} {} ({why}); name the file by its absolute path, or change directory to a literal path",
        entry.kind.describe(),
        entry.path.display()
    )
}

/// `word` as a path: `~` and `~/…` taken in `home`, a relative path
/// joined to `base`, `.` and `..` resolved lexically. `None` for an empty
/// word, or one that is not absolute even so.
fn resolve(word: &str, base: &Path, home: &str) -> Option<PathBuf> {
    if word.is_empty() {
        return None;
    }
    let expanded = if word == "~" {
        PathBuf::from(home)
    } else if let Some(rest) = word.strip_prefix("~/") {
        Path::new(home).join(rest)
    } else {
        PathBuf::from(word)
    };
    let abs = if expanded.is_absolute() { expanded } else { base.join(expanded) };
    abs.is_absolute().then(|| normalize_lexically(&abs))
}

/// What the protected-path check reads of a shell command: its words, and
/// every folder the command may be in when it uses one.
///
/// A command that changes directory (`cd DIR && cat ./audit.jsonl`) names
/// files relative to the new folder. So every word that starts a change
/// of directory — `cd`, `pushd`, `chdir`, and PowerShell's `Set-Location`,
/// `sl`, `Push-Location` (any case), wherever it stands: after `builtin`,
/// `command`, `eval`, inside `sh -c '…'` — adds the folder its argument
/// names, taken from every folder found so far (`cd a; cd b` may be in
/// `a/b`); with no argument, the home folder. The folders are an
/// over-approximation: every relative word is checked against all of them,
/// whatever the order (a loop runs a later `cd` before an earlier word), so
/// the check denies more, never less. A change whose target the text does
/// not give — a variable, a substitution, a glob, `cd -` (the previous
/// folder, which a variable can set), `~user`, `CDPATH` anywhere in the
/// command, `..` under `-P` — is recorded as unknown.
#[derive(Debug, Default)]
pub struct CommandScan {
    /// The words that could name a file: split at blanks, shell operators,
    /// `=`, `:` and `,`, with `$HOME`/`${HOME}` expanded and quotes and
    /// backslashes dropped (the shell joins `'tool'host.toml`).
    pub words: Vec<String>,
    /// The working folder, then every folder a change of directory names.
    pub dirs: Vec<PathBuf>,
    /// The first change of directory whose target is not in the text.
    pub unknown_cd: Option<String>,
}

/// The most folders a scan follows. Each `cd` is taken from every folder
/// found so far, so alternating targets (`cd a; cd b; cd a; …`) double
/// them each time; past this many the next change of directory is
/// recorded as unknown (a word spelling a protected name is then refused),
/// so a hostile command cannot make the check run for ever.
const MAX_SCAN_DIRS: usize = 64;

/// The most bytes of path (folder and word) a command's relative words are
/// resolved over ([`ProtectedPaths::named_in_input`]): a word that spells a
/// protected name is resolved from every folder, and any word from every
/// protected folder, so a long hostile command (or a long home folder it
/// expands) would otherwise hold the check for seconds.
const MAX_RESOLVED_BYTES: usize = 4 << 20;

/// A token of a command: a word, or a shell operator character.
enum Token {
    Word(String),
    Op(char),
}

impl CommandScan {
    /// Scans `command` run from `cwd`, whose home is `home`.
    pub fn new(command: &str, cwd: &str, home: &str) -> Self {
        let text = expand_home(command, home).replace(['\\', '\'', '"'], "");
        let mut tokens = Vec::new();
        let mut word = String::new();
        for c in text.chars() {
            let op = c == '\n' || ";&|<>()`{}".contains(c);
            if op || c.is_whitespace() {
                if !word.is_empty() {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                }
                if op {
                    tokens.push(Token::Op(c));
                }
            } else {
                word.push(c);
            }
        }
        if !word.is_empty() {
            tokens.push(Token::Word(word));
        }
        let mut scan = CommandScan { dirs: vec![PathBuf::from(cwd)], ..Self::default() };
        let cdpath = text.contains("CDPATH");
        for (at, token) in tokens.iter().enumerate() {
            let Token::Word(word) = token else { continue };
            scan.words.extend(word.split(['=', ':', ',']).filter(|w| !w.is_empty()).map(str::to_string));
            if !is_cd(word) {
                continue;
            }
            match cd_target(&tokens[at + 1..]) {
                CdTarget::Home => scan.add_dir(&PathBuf::from(home)),
                CdTarget::Stays => {}
                CdTarget::Dir { dir, physical } => {
                    if scan.dirs.len() >= MAX_SCAN_DIRS {
                        scan.unknown(&format!("{word} {dir} (after {MAX_SCAN_DIRS} folders)"));
                        continue;
                    }
                    let unknown = cdpath
                        || dir.contains(['$', '*', '?', '['])
                        || (dir.starts_with('~') && dir != "~" && !dir.starts_with("~/"))
                        || (physical && dir.split('/').any(|part| part == ".."));
                    if unknown {
                        scan.unknown(&format!("{word} {dir}"));
                        continue;
                    }
                    let found: Vec<PathBuf> = scan.dirs.iter().filter_map(|base| resolve(dir, base, home)).collect();
                    found.iter().for_each(|d| scan.add_dir(d));
                }
                CdTarget::Unknown(why) => scan.unknown(&format!("{word} {why}")),
            }
        }
        scan
    }

    fn add_dir(&mut self, dir: &Path) {
        if !self.dirs.iter().any(|d| d == dir) {
            self.dirs.push(dir.to_path_buf());
        }
    }

    fn unknown(&mut self, what: &str) {
        self.unknown_cd.get_or_insert_with(|| what.trim_end().to_string());
    }
}

/// Whether `word` changes the directory (`cd`, `pushd`, `chdir`, or a
/// PowerShell spelling of it).
fn is_cd(word: &str) -> bool {
    ["cd", "pushd", "chdir", "set-location", "sl", "push-location"].iter().any(|cd| word.eq_ignore_ascii_case(cd))
}

/// Where a change of directory goes, from the tokens after its word.
enum CdTarget<'a> {
    /// No argument: the home folder.
    Home,
    /// Somewhere already seen (`pushd` with no folder, or `+N`).
    Stays,
    /// The folder named; `physical` under `-P`.
    Dir { dir: &'a str, physical: bool },
    /// Not in the text: what stands in its place.
    Unknown(String),
}

fn cd_target(after: &[Token]) -> CdTarget<'_> {
    let mut physical = false;
    for token in after {
        match token {
            Token::Op(c) if ";&|)}\n".contains(*c) => return CdTarget::Home,
            // `cd $(…)`, `cd `…``, `cd <x`: not a literal folder.
            Token::Op(c) => return CdTarget::Unknown(c.to_string()),
            Token::Word(w) if w == "-" => return CdTarget::Unknown(w.clone()),
            Token::Word(w) if w.starts_with('+') => return CdTarget::Stays,
            Token::Word(w) if w.starts_with('-') => physical |= !w.starts_with("--") && w.contains('P'),
            Token::Word(w) => return CdTarget::Dir { dir: w, physical },
        }
    }
    CdTarget::Home
}

/// Keys whose string values are paths.
fn is_path_key(key: &str) -> bool {
    matches!(key, "path" | "paths" | "cwd" | "dir" | "directory") || key.ends_with("_path")
}

/// Calls `f(key, text)` for every string in `value`, with the key of the
/// object member it sits under (array items inherit their array's key).
fn visit_strings(value: &serde_json::Value, key: Option<&str>, f: &mut impl FnMut(&str, &str)) {
    match value {
        serde_json::Value::String(s) => f(key.unwrap_or(""), s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| visit_strings(v, key, f)),
        serde_json::Value::Object(map) => map.iter().for_each(|(k, v)| visit_strings(v, Some(k), f)),
        _ => {}
    }
}

/// `text` with `${HOME}` and `$HOME` replaced by `home`, as the command
/// scan reads a command (and as the cheap test must read any input).
///
/// One pass, as the shell expands: a `$HOME` inside `home` itself is not
/// expanded again (which would make the text grow with the square of a
/// home folder that spells it).
fn expand_home<'a>(text: &'a str, home: &str) -> Cow<'a, str> {
    if !text.contains("$HOME") && !text.contains("${HOME}") {
        return Cow::Borrowed(text);
    }
    let mut expanded = String::with_capacity(text.len() + home.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        expanded.push_str(&rest[..at]);
        let after = &rest[at..];
        match ["${HOME}", "$HOME"].into_iter().find(|name| after.starts_with(name)) {
            Some(name) => {
                expanded.push_str(home);
                rest = &after[name.len()..];
            }
            None => {
                expanded.push('$');
                rest = &after[1..];
            }
        }
    }
    expanded.push_str(rest);
    Cow::Owned(expanded)
}

/// The real form of `path`: the longest existing prefix with its symlinks
/// resolved, the rest appended.
pub fn real_form(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(normalize_lexically(&out));
        }
        rest.push(existing.file_name()?.to_os_string());
        if !existing.pop() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn paths() -> ProtectedPaths {
        let mut p = ProtectedPaths::new();
        p.add(ProtectedKind::SettingsFile, Path::new("/w/toolhost.toml"));
        p.add(ProtectedKind::StateDir, Path::new("/home/u/.local/state/toolhost"));
        p
    }

    /// Alternating targets double the folders at each `cd`: 40 of them
    /// were 2^40 folders (a check that never ended, found by the fuzzer).
    #[test]
    fn alternating_changes_of_directory_stop_at_a_bound_and_count_as_unknown() {
        let command = format!("{}cat toolhost.toml", "cd a; cd b; ".repeat(40));
        let scan = CommandScan::new(&command, "/x", "/home/u");
        assert!(scan.dirs.len() < 2 * MAX_SCAN_DIRS, "{} folders", scan.dirs.len());
        let unknown = scan.unknown_cd.expect("the changes past the bound are unknown");
        assert!(unknown.contains(&format!("after {MAX_SCAN_DIRS} folders")), "{unknown}");
        let why = paths().named_in_input(&json!({"command": command}), "/x", "/home/u");
        assert!(why.is_some_and(|why| why.contains("toolhost.toml")), "a protected name after them is refused");
        let few = CommandScan::new("cd a; cd b; cd a; cat x", "/x", "/home/u");
        assert!(few.unknown_cd.is_none() && few.dirs.len() == 7, "{:?}", few.dirs);
    }

    /// Words that spell a protected name, after changes of directory: each
    /// is resolved from every folder (16 here), so 20 000 of them would be
    /// 320 000 resolutions; past the budget such a word is refused.
    #[test]
    fn words_spelling_a_protected_name_are_resolved_within_a_budget() {
        let words: String = (0..20_000).map(|i| format!("d{i}/toolhost.toml ")).collect();
        let command = format!("cd a; cd b; cd c; cd d; cat {words}");
        let why = paths().named_in_input(&json!({"command": command}), "/x", "/home/u").expect("refused");
        assert!(why.contains("more folders than toolhost follows: 4 MiB of paths resolved"), "{why}");
        let few: String = (0..10).map(|i| format!("d{i}/toolhost.toml ")).collect();
        let command = format!("cd a; cd b; cd c; cd d; cat {few}");
        assert!(paths().named_in_input(&json!({"command": command}), "/x", "/home/u").is_none(), "{command}");
    }

    /// Found by the `protected_input` fuzz target (11.5 s on one input): a
    /// home folder that itself spells `$HOME` was expanded again inside
    /// every expansion, so a 39-byte command grew into 210 KB of words.
    /// The shell expands once; so does the scan.
    #[test]
    fn home_is_expanded_once_as_the_shell_expands_it() {
        let home = "/h/$HOME/${HOME}";
        assert_eq!(
            expand_home("cat ${HOME}/a $HOME/b $HOM $", home),
            "cat /h/$HOME/${HOME}/a /h/$HOME/${HOME}/b $HOM $"
        );
        let scan = CommandScan::new("cat ${HOME}x", "/w", "/h/$HOME");
        assert_eq!(scan.words, ["cat", "/h/$HOMEx"]);
    }

    /// Words that spell no protected name are resolved from every
    /// protected folder the command may be in, within the same budget: a
    /// long command run in a protected folder is refused, not followed for
    /// seconds.
    #[test]
    fn plain_words_from_a_protected_folder_are_resolved_within_a_budget() {
        let cwd = "/home/u/.local/state/toolhost/a";
        let words: String = (0..100_000).map(|i| format!("../../../../../../../d{i}/n ")).collect();
        let command = format!("/bin/cat {words}");
        let why = paths().named_in_input(&json!({"command": command}), cwd, "/home/u").expect("refused");
        assert!(why.contains("more folders than toolhost follows"), "{why}");
        assert!(why.contains("/home/u/.local/state/toolhost"), "{why}");
        let command = "/bin/cat ../../../../../../../d0/n ../../../../../../../d1/n";
        assert!(paths().named_in_input(&json!({"command": command}), cwd, "/home/u").is_none(), "{command}");
    }

    /// A word that spells no protected name is still resolved from a
    /// folder that is protected or lies below an entry.
    #[test]
    fn a_plain_word_is_resolved_from_a_protected_folder() {
        for command in ["cd /home/u/.local/state/toolhost && rm -rf x", "cd a; cd /w/toolhost.toml/y; cat .."] {
            let why = paths().named_in_input(&json!({"command": command}), "/x", "/home/u");
            assert!(why.is_some(), "{command}");
        }
        assert!(paths().named_in_input(&json!({"command": "cd /w/src && rm -rf x"}), "/x", "/home/u").is_none());
    }

    #[test]
    fn a_path_field_naming_a_protected_path_is_found() {
        let p = paths();
        for input in [
            json!({"file_path": "/w/toolhost.toml"}),
            json!({"file_path": "toolhost.toml"}),
            json!({"file_path": "./sub/../toolhost.toml"}),
            json!({"path": "~/.local/state/toolhost/sessions"}),
            json!({"notebook_path": "/home/u/.local/state/toolhost/x.json"}),
        ] {
            assert!(p.named_in_input(&input, "/w", "/home/u").is_some(), "{input}");
        }
        for input in [
            json!({"file_path": "/w/toolhost.toml.bak"}),
            json!({"file_path": "/w/a.py", "content": "see toolhost.toml"}),
            json!({"path": "/home/u/.local/state"}),
        ] {
            assert!(p.named_in_input(&input, "/w", "/home/u").is_none(), "{input}");
        }
    }

    #[test]
    fn a_command_word_naming_a_protected_path_is_found() {
        let p = paths();
        for command in [
            "echo 'mode = \"bypass\"' >> toolhost.toml",
            "cat>toolhost.toml",
            "sed -i s/a/b/ \"/w/toolhost.toml\"",
            "rm -rf $HOME/.local/state/toolhost",
            "ls ${HOME}/.local/state/toolhost/sessions",
            "cp x ~/.local/state/toolhost/",
            "tool --config=toolhost.toml",
            "cat tool\\host.toml",
            "cat 'tool'host.toml",
            "cat \"toolhost\".toml",
        ] {
            let found = p.named_in_input(&json!({"command": command}), "/w", "/home/u");
            assert!(found.is_some(), "{command}");
        }
        for command in ["ls", "cat toolhost.toml.example", "echo toolhost", "git status"] {
            assert!(p.named_in_input(&json!({"command": command}), "/w", "/home/u").is_none(), "{command}");
        }
    }

    #[test]
    fn the_cheap_test_never_misses_what_the_full_scan_finds() {
        let p = paths();
        let words = ["toolhost.toml", "tool'host.toml", "tool\\host.toml", "\"toolhost\".toml", "./x/../toolhost.toml"];
        let dirs =
            ["~/.local/state/toolhost/sessions", "$HOME/.local/state/toolhost", "/home/u/.local/state/toolhost/x"];
        let mut inputs = Vec::new();
        for w in words.iter().chain(&dirs).chain(&["ls", "git status", "toolhost", "."]) {
            inputs.push(json!({"command": format!("cat {w}")}));
            inputs.push(json!({"file_path": w}));
            inputs.push(json!({"paths": [w]}));
        }
        for (cwd, home) in [("/w", "/home/u"), ("/home/u/.local/state/toolhost", "/home/u"), ("/x", "/w")] {
            for input in &inputs {
                let text = input.to_string();
                if p.named_in_input(input, cwd, home).is_some() {
                    assert!(p.may_be_named_in(&text, cwd, home), "{text} in {cwd}");
                }
            }
        }
        assert!(!p.may_be_named_in(&json!({"command": "git status"}).to_string(), "/w", "/home/u"));
        assert!(!p.may_be_named_in(&json!({"file_path": "/w/a.py"}).to_string(), "/w", "/home/u"));
    }

    /// Found by the `protected_input` fuzz target: the command scan
    /// expands `$HOME` before it splits words, so a home holding a blank
    /// brought a whole protected path into the command that the input's
    /// text never spelled, and the cheap test let the call skip the denial.
    /// Joining works too: `${HOME}host.toml` with home `/w/tool`.
    #[test]
    fn the_cheap_test_reads_home_as_the_command_scan_expands_it() {
        let mut p = paths();
        p.add(ProtectedKind::LockFile, Path::new("/w/toolhost.lock"));
        let fuzzed_home = "/w/toolhost.lock \0\0\0\0-|e/u";
        let fuzzed = json!({"command": "rm||||||||||||||||||||||||s||| -|f ${HOME}/.localost"});
        let joined = json!({"command": "cat ${HOME}host.toml"});
        for (input, home) in
            [(&fuzzed, fuzzed_home), (&joined, "/w/tool"), (&json!({"command": "cat $HOME"}), fuzzed_home)]
        {
            let found = p.named_in_input(input, "/w", home);
            assert!(found.is_some(), "{input} with home {home:?}");
            assert!(p.may_be_named_in(&input.to_string(), "/w", home), "{input} with home {home:?}: {found:?}");
        }
        assert!(!p.may_be_named_in(&json!({"command": "cat $HOME/notes"}).to_string(), "/w", "/home/u"));
    }

    /// Found while writing the `protected_input` fuzz target (which then
    /// failed on it): a `cwd` below a protected *file* (`/w/toolhost.toml/x`,
    /// a path's text if not a folder on disk) or a relative `home` taken
    /// against `cwd` reaches the file with `..` alone, and the cheap test
    /// looked only for `cwd` and `home` inside protected folders.
    #[test]
    fn the_cheap_test_sees_cwd_and_home_below_any_entry() {
        let p = paths();
        for (cwd, home, input) in [
            ("/w/toolhost.toml/x", "/home/u", json!({"path": ".."})),
            ("/w/toolhost.toml/x", "/home/u", json!({"command": "cat .."})),
            ("/w", "toolhost.toml/x", json!({"path": "~/.."})),
            ("/w", "/w/toolhost.toml/x", json!({"file_path": "~/.."})),
        ] {
            let found = p.named_in_input(&input, cwd, home);
            assert!(found.is_some(), "{input} in {cwd} with home {home}");
            assert!(p.may_be_named_in(&input.to_string(), cwd, home), "{input} in {cwd} with home {home}: {found:?}");
        }
        assert!(!p.may_be_named_in(&json!({"path": ".."}).to_string(), "/w/src", "/home/u"));
    }

    /// Issue 29 item 10: `cd LOGDIR && cat ./audit.jsonl` read the log that
    /// `cat LOGDIR/audit.jsonl` could not.
    #[test]
    fn a_relative_word_is_taken_from_every_folder_the_command_may_cd_to() {
        let mut p = paths();
        p.add(ProtectedKind::AuditLog, Path::new("/logs/audit.jsonl"));
        let denied = [
            "cd /logs && cat ./audit.jsonl",
            "cd /logs; echo '{}' >> ./audit.jsonl",
            "cd /logs\nrm -f audit.jsonl",
            "pushd /logs >/dev/null && rm -f audit.jsonl",
            "cd / && cd logs && cat audit.jsonl",
            "cd /logs/sub && cat ../audit.jsonl",
            "cd /x/y && cd ../../logs && cat audit.jsonl",
            "builtin cd -L /logs && cat audit.jsonl",
            "sh -c 'cd /logs; cat audit.jsonl'",
            "Set-Location -Path /logs; Get-Content ./audit.jsonl",
            "cat audit.jsonl; cd /logs",
            "for i in 1 2; do cat audit.jsonl; cd /logs; done",
            // `cd` alone goes home; `cd ..` climbs.
            "cd && cat .local/state/toolhost/x",
            "cd .. && cat w/toolhost.toml",
            // Targets the text does not give.
            "cd \"$LOGDIR\" && cat ./audit.jsonl",
            "cd $(dirname $F) && cat audit.jsonl",
            "cd - && cat audit.jsonl",
            "cd ~root && cat audit.jsonl",
            "CDPATH=/ cd logs && cat audit.jsonl",
            "cd -P /x/link/.. && cat audit.jsonl",
            "cd /l* && cat audit.jsonl",
        ];
        for command in denied {
            let input = json!({"command": command});
            let found = p.named_in_input(&input, "/w", "/home/u");
            assert!(found.is_some(), "{command}");
            assert!(p.may_be_named_in(&input.to_string(), "/w", "/home/u"), "the cheap test misses {command}");
        }
        let text = p.named_in_input(&json!({"command": "cd \"$D\" && cat audit.jsonl"}), "/w", "/h").unwrap();
        assert!(text.contains("cd $D") && text.contains("toolhost's audit log /logs/audit.jsonl"), "{text}");
        for command in [
            "cd /logs && ls",
            "cd /other && cat audit.jsonl",
            "cd \"$D\" && make",
            "cd - && git status",
            "cat ./audit.jsonl",
            "echo cd",
        ] {
            let found = p.named_in_input(&json!({"command": command}), "/w", "/home/u");
            assert!(found.is_none(), "{command}: {found:?}");
        }
    }

    #[test]
    fn refusals_name_what_the_path_is() {
        let p = paths();
        let text = p.named_in_input(&json!({"file_path": "toolhost.toml"}), "/w", "/h").unwrap();
        assert_eq!(text, "/w/toolhost.toml is toolhost's own settings file; no tool may touch it");
        let e = p.below(Path::new("/home/u/.local")).unwrap();
        assert!(e.refusal(Path::new("/home/u/.local")).contains("contains toolhost's session state folder"));
    }
}
