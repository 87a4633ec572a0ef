//! Paths a part writes or names: extraction, resolution, dangerous tests.

use crate::normalize::{has_wrapper, program_name, strip_wrappers, trusted_program};
use crate::parse::{Part, Place, Word};
use toolhost_policy::{DangerLists, fnmatch, is_dangerous_path, normalize};

/// Commands whose non-flag arguments are paths for the sensitive-path check
/// (reference AST list plus `tee`, `truncate`, `install`, `shred`, `unlink`).
pub const FILE_COMMANDS: &[&str] = &[
    "rm", "mv", "cp", "chmod", "chown", "chgrp", "touch", "ln", "sed", "mkdir", "rmdir", "tee", "truncate", "install",
    "shred", "unlink",
];

/// Filesystem commands auto-allowed in accept-edits / dont-ask (§5.7).
pub const FS_EDIT_COMMANDS: &[&str] = &["mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"];

/// A path named by a command: its display text and absolute form.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The word as the user wrote it, quotes removed when static.
    pub display: String,
    /// Absolute, lexically normal path; `None` when not knowable.
    pub abs: Option<String>,
    /// Unquoted glob characters occur.
    pub glob: bool,
    /// The raw source text.
    pub raw: String,
}

/// Resolves a word to a [`Target`] relative to the part's directory when
/// the command runs at `at`.
pub(crate) fn target(w: &Word, part: &Part, at: &Place) -> Target {
    let abs = match (w.path(), part.dir(at)) {
        (Some(p), Some(cwd)) => Some(normalize(&p, &cwd, at.home)),
        (Some(p), None) if p.starts_with('/') || (w.tilde && p.starts_with('~')) => Some(normalize(&p, "/", at.home)),
        _ => None,
    };
    Target { display: w.text().to_string(), abs, glob: w.glob, raw: w.raw.clone() }
}

/// The path arguments of a file command: non-flag words (all words after
/// `--`), values of `--opt=value`; for `chmod`/`chown`/`chgrp` the mode or
/// owner is skipped; for `sed` the script is skipped.
pub(crate) fn path_args(program: &str, args: &[Word]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut after_dashdash = false;
    let mut skip_first = matches!(program, "chmod" | "chown" | "chgrp" | "sed");
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text();
        i += 1;
        if !after_dashdash && t == "--" {
            after_dashdash = true;
            continue;
        }
        if !after_dashdash && t.starts_with('-') && t.len() > 1 {
            if program == "sed" {
                if t == "-e" || t == "-f" || t == "--expression" || t == "--file" {
                    skip_first = false;
                    i += 1; // the script (or script file) is not a target
                    continue;
                }
                if t.starts_with("--expression=") || t.starts_with("--file=") {
                    skip_first = false;
                    continue;
                }
                if !t.starts_with("--") && (t.contains('e') || t.contains('f')) {
                    skip_first = false;
                    i += 1;
                    continue;
                }
            }
            if t.starts_with("--reference") {
                skip_first = false;
            }
            if let Some((_, v)) = t.split_once('=')
                && t.starts_with("--")
                && !v.is_empty()
                && !t.starts_with("--reference")
            {
                // `--target-directory=DIR`: judge DIR (unknown if dynamic).
                let value = w.value.as_ref().map(|_| v.to_string());
                out.push(Word { raw: v.to_string(), value, tilde: v.starts_with('~'), glob: w.glob, brace: w.brace });
            }
            continue;
        }
        if skip_first {
            skip_first = false;
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// Every target of one part for the sensitive-path check: path arguments of
/// a file command (wrappers seen through) and every redirection target
/// except `/dev/null`.
pub(crate) fn part_targets(part: &Part, at: &Place) -> Vec<Target> {
    let mut out = Vec::new();
    let words = strip_wrappers(&part.words);
    if let Some((first, args)) = words.split_first()
        && let Some(name) = program_name(first)
        && FILE_COMMANDS.contains(&name.as_str())
    {
        for w in path_args(&name, args) {
            out.push(target(&w, part, at));
        }
    }
    for r in &part.redirects {
        if !r.is_dev_null() {
            out.push(target(&r.target, part, at));
        }
    }
    out
}

/// True when a segment pattern can match `name` (a glob `*` does not match
/// a leading dot, as in the shell).
fn seg_matches(pat: &str, name: &str, glob: bool) -> bool {
    if !glob {
        return pat == name;
    }
    if name.starts_with('.') && !pat.starts_with('.') {
        return false;
    }
    fnmatch(pat, name)
}

/// Sensitive-path test (spec §2.5) on a target, glob-aware: `rm .b*`
/// matches `.bashrc`. A target whose value is unknown is tested on its raw
/// text with quotes removed (`"$D/.bashrc"` is still caught).
pub(crate) fn target_is_dangerous(t: &Target, home: &str, lists: &DangerLists) -> bool {
    let Some(abs) = &t.abs else {
        let crude: String = t.raw.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
        return is_dangerous_path(&crude, "/", home, lists);
    };
    if !t.glob {
        return is_dangerous_path(abs, "/", home, lists);
    }
    let lower = abs.to_lowercase();
    let segs: Vec<&str> = lower.split('/').filter(|s| !s.is_empty()).collect();
    for d in &lists.directories {
        let d = d.trim_matches('/').to_lowercase();
        if !d.is_empty() && !d.contains('/') && segs.iter().any(|s| seg_matches(s, &d, true)) {
            return true;
        }
    }
    for f in &lists.files {
        let f = f.trim_matches('/').to_lowercase();
        if f.is_empty() {
            continue;
        }
        let fsegs: Vec<&str> = f.split('/').collect();
        if fsegs.len() == 1 {
            if segs.last().is_some_and(|b| seg_matches(b, &f, true)) {
                return true;
            }
        } else if segs.len() >= fsegs.len() {
            let tail = &segs[segs.len() - fsegs.len()..];
            if tail.iter().zip(&fsegs).all(|(p, n)| seg_matches(p, n, true)) {
                return true;
            }
        }
    }
    false
}

/// Dangerous removal (spec §5.5) for one part whose program, wrappers seen
/// through, is `rm` or `rmdir` (also `/bin/rm`, `sudo rm`): returns the
/// first critical path named.
pub(crate) fn dangerous_removal(part: &Part, at: &Place) -> Option<String> {
    let words = strip_wrappers(&part.words);
    let (first, args) = words.split_first()?;
    let name = program_name(first)?;
    if name != "rm" && name != "rmdir" {
        return None;
    }
    let home_abs = normalize("~", "/", at.home);
    let dir = part.dir(at);
    let mut after_dashdash = false;
    for w in args {
        let t = w.text();
        if !after_dashdash && t == "--" {
            after_dashdash = true;
            continue;
        }
        if !after_dashdash && t.starts_with('-') && t.len() > 1 {
            continue;
        }
        let Some(v) = w.value.as_deref() else {
            continue;
        };
        if v == "*" || v == "./*" || v == "/" || v.ends_with("/*") || v.ends_with("\\*") {
            return Some(v.to_string());
        }
        let Some(p) = w.path() else { continue };
        if dir.is_none() && !(p.starts_with('/') || w.tilde) {
            continue;
        }
        let abs = normalize(&p, dir.as_deref().unwrap_or("/"), at.home);
        let depth = abs.split('/').filter(|s| !s.is_empty()).count();
        if abs == home_abs || depth <= 1 || (w.glob && abs.ends_with("/*")) {
            return Some(v.to_string());
        }
    }
    None
}

/// The accept-edits targets of a part that is a direct filesystem command
/// (no wrapper, harmless assignments, bare or system-path program in
/// [`FS_EDIT_COMMANDS`]): `Some((program, targets))`, else `None`.
pub(crate) fn fs_edit_targets(part: &Part, at: &Place) -> Option<(String, Vec<Target>)> {
    if has_wrapper(&part.words) || !crate::readonly::assigns_harmless(part) {
        return None;
    }
    let (first, args) = part.words.split_first()?;
    let name = trusted_program(first)?;
    if !FS_EDIT_COMMANDS.contains(&name.as_str()) {
        return None;
    }
    let mut out: Vec<Target> = path_args(&name, args).iter().map(|w| target(w, part, at)).collect();
    for r in &part.redirects {
        if !r.is_dev_null() {
            out.push(target(&r.target, part, at));
        }
    }
    Some((name, out))
}
