//! Paths a part writes or names: extraction, resolution, dangerous tests.

use crate::model::{Part, Place, Word};
use crate::normalize::{has_wrapper, program_name, strip_wrappers, trusted_program};
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
    /// An unquoted `{` occurs: the shell may expand it into several words.
    pub brace: bool,
}

/// Resolves a word to a [`Target`] relative to the part's directory when
/// the command runs at `at`.
pub(crate) fn target(w: &Word, part: &Part, at: &Place) -> Target {
    let abs = match (w.path(), part.dir(at)) {
        (Some(p), Some(cwd)) => Some(normalize(&p, &cwd, at.home)),
        (Some(p), None) if p.starts_with('/') || (w.tilde && p.starts_with('~')) => Some(normalize(&p, "/", at.home)),
        _ => None,
    };
    Target { display: w.text().to_string(), abs, glob: w.glob, raw: w.raw.clone(), brace: w.brace }
}

/// The path arguments of a file command: non-flag words (all words after
/// `--`), values of `--opt=value`; for `chmod`/`chown`/`chgrp` the mode or
/// owner is skipped; for `sed` the input files as GNU sed reads its
/// arguments ([`crate::sed::parse_sed_args`]).
pub(crate) fn path_args(program: &str, args: &[Word]) -> Vec<Word> {
    if program == "sed" {
        let vals: Vec<&str> = args.iter().map(Word::text).collect();
        return crate::sed::parse_sed_args(&vals).files.iter().map(|&k| args[k].clone()).collect();
    }
    let mut out = Vec::new();
    let mut after_dashdash = false;
    let mut skip_first = matches!(program, "chmod" | "chown" | "chgrp");
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
            if t.starts_with("--reference") {
                skip_first = false;
            }
            if let Some((_, v)) = t.split_once('=')
                && t.starts_with("--")
                && !v.is_empty()
                && !t.starts_with("--reference")
            {
                // `--target-directory=DIR`: judge DIR (unknown if dynamic).
                out.push(piece_of(w, v));
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
        && FILE_COMMANDS.contains(&name)
    {
        for w in path_args(name, args) {
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
/// text with quotes removed (`"$D/.bashrc"` is still caught). `needles`
/// are those of `lists`.
pub(crate) fn target_is_dangerous(t: &Target, home: &str, lists: &DangerLists, needles: &Needles) -> bool {
    if t.brace {
        // `cp x ~/.bash{rc,}`: every word the braces expand to is judged;
        // too many of them to judge is judged dangerous.
        let crude: String = t.raw.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
        let Some(words) = brace_expand(&crude) else { return true };
        return words.iter().any(|w| {
            let abs = normalize(w, "/", home);
            let one = Target { display: w.clone(), abs: Some(abs), glob: t.glob, raw: w.clone(), brace: false };
            target_is_dangerous(&one, home, lists, needles)
        });
    }
    let Some(abs) = &t.abs else {
        let crude: String = t.raw.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
        return normal_path_is_dangerous(&normalize(&crude, "/", home), home, lists, needles);
    };
    if !t.glob {
        return normal_path_is_dangerous(abs, home, lists, needles);
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

/// [`is_dangerous_path`] of an absolute, lexically normal path (as
/// [`normalize`] gives). The list scan is costly and only ever matches a
/// name the path's text contains (normalising it again changes nothing),
/// so a path without any of the `needles` of `lists` is not scanned.
fn normal_path_is_dangerous(abs: &str, home: &str, lists: &DangerLists, needles: &Needles) -> bool {
    needles.may_match(abs) && is_dangerous_path(abs, "/", home, lists)
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

/// A piece of a word's text (an option's value, one side of `:`) as a word
/// of its own: dynamic when the word is, a `~` at its start expanded.
fn piece_of(w: &Word, piece: &str) -> Word {
    let value = w.value.as_ref().map(|_| piece.to_string());
    Word { raw: piece.to_string(), value, tilde: piece.starts_with('~'), glob: w.glob, brace: w.brace }
}

/// True for a URL (`scheme://...`): names something remote, not a path.
fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        let mut c = scheme.chars();
        c.next().is_some_and(|f| f.is_ascii_alphabetic())
            && c.all(|x| x.is_ascii_alphanumeric() || matches!(x, '+' | '-' | '.'))
    })
}

/// Every string a word may hand a program as a path: the word itself; the
/// value of `--opt=VALUE`, `key=VALUE` (`of=FILE`) and of a glued short
/// option (`-oFILE`); and each `:`-separated piece of those (`host:path`,
/// `SRC:DST` volume specs, `PATH`-like lists). URLs are not paths.
fn path_pieces(text: &str) -> Vec<&str> {
    if is_url(text) {
        return Vec::new();
    }
    let mut out = vec![text];
    if let Some(rest) = text.strip_prefix('-').filter(|r| !r.starts_with('-')) {
        // The option letter may be any character (`-Ӛx` is model input too).
        let mut glued = rest.chars();
        if glued.next().is_some() && !glued.as_str().is_empty() {
            out.push(glued.as_str());
        }
    }
    if let Some((_, v)) = text.split_once('=') {
        out.push(v);
    }
    let n = out.len();
    for k in 0..n {
        let t = out[k];
        if t.contains(':') && !is_url(t) {
            out.extend(t.split(':').filter(|p| !p.is_empty()));
        }
    }
    out.retain(|p| !p.is_empty() && !is_url(p));
    out
}

/// Programs whose words never name a file they write: their patterns
/// (regexes) are not paths. Their redirections are judged all the same.
const PATTERN_PROGRAMS: &[&str] = &["grep", "egrep", "fgrep", "rg", "ag", "ack"];

/// The words of a part that are scripts or patterns for the program that
/// receives them (not paths): a `sed` script, an `awk` program, every
/// argument of a grep-like program. Indices into `words`.
fn script_words(words: &[Word]) -> Vec<usize> {
    let inner = strip_wrappers(words);
    let offset = words.len() - inner.len();
    let Some((first, args)) = inner.split_first() else {
        return Vec::new();
    };
    let Some(name) = program_name(first) else {
        return Vec::new();
    };
    let at = |k: usize| offset + 1 + k;
    match name {
        "sed" => {
            let vals: Vec<&str> = args.iter().map(Word::text).collect();
            crate::sed::parse_sed_args(&vals).script_words.into_iter().map(at).collect()
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            let explicit = args.iter().any(|w| matches!(w.text(), "-f" | "--file" | "-e" | "--source"));
            let mut skip_value = false;
            for (k, w) in args.iter().enumerate() {
                let t = w.text();
                if skip_value {
                    skip_value = false;
                } else if matches!(t, "-v" | "-F" | "--assign" | "--field-separator") {
                    skip_value = true;
                } else if matches!(t, "-e" | "--source") {
                    return vec![at(k + 1)];
                } else if !t.starts_with('-') && !explicit {
                    return vec![at(k)];
                }
            }
            Vec::new()
        }
        n if PATTERN_PROGRAMS.contains(&n) => (0..args.len()).map(at).collect(),
        _ => Vec::new(),
    }
}

/// Every path a part names in any word (issue 12): each word's
/// [`path_pieces`] except the words that are scripts or patterns
/// ([`script_words`]), and the values of its leading assignments. Resolved
/// like every other target (`~`, `$HOME`, quotes, `..`, the part's
/// directory).
pub(crate) fn named_paths(part: &Part, at: &Place, needles: &Needles) -> Vec<Target> {
    // Where relative words land cannot make them dangerous: a word that
    // does not contain a dangerous name cannot be one.
    let plain_base = !needles.may_match(at.cwd)
        && !needles.may_match(at.home)
        && part.cd_trail.as_ref().is_none_or(|t| t.iter().all(|s| !needles.may_match(s)));
    let may_name = |w: &Word| !plain_base || w.glob || w.brace || needles.may_match(w.text());
    let mut out = Vec::new();
    if !part.words.iter().chain(&part.assign_values).any(may_name) {
        return out;
    }
    let skip = script_words(&part.words);
    for (k, w) in part.words.iter().enumerate() {
        if skip.contains(&k) || !may_name(w) {
            continue;
        }
        for piece in path_pieces(w.text()) {
            let word = if piece.len() == w.text().len() { w.clone() } else { piece_of(w, piece) };
            out.push(target(&word, part, at));
        }
    }
    for v in &part.assign_values {
        for piece in path_pieces(v.text()) {
            let word = if piece.len() == v.text().len() { v.clone() } else { piece_of(v, piece) };
            out.push(target(&word, part, at));
        }
    }
    out
}

/// The dangerous names of a pair of lists, for a quick test that a text
/// cannot name a dangerous path: a path is dangerous only when its text,
/// its working directory or the home directory contains one of them
/// (ignoring ASCII case; any non-ASCII text may).
pub(crate) struct Needles {
    /// The names, lower-cased.
    names: Vec<String>,
    /// The first bytes of the names, both cases: where a match may start.
    starts: [bool; 256],
    /// Some name is not ASCII: every text may match.
    any_non_ascii: bool,
}

impl Needles {
    /// The names of `lists`.
    pub(crate) fn new(lists: &DangerLists) -> Self {
        let names: Vec<String> = lists
            .files
            .iter()
            .chain(&lists.directories)
            .map(|e| e.trim_matches('/'))
            .filter(|e| !e.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        let mut starts = [false; 256];
        for n in &names {
            let b = n.as_bytes()[0];
            starts[usize::from(b.to_ascii_lowercase())] = true;
            starts[usize::from(b.to_ascii_uppercase())] = true;
        }
        let any_non_ascii = names.iter().any(|n| !n.is_ascii());
        Needles { names, starts, any_non_ascii }
    }

    /// Runs `f` with the needles of `lists`, built once per thread for the
    /// lists last seen (a decision's lists are the tool's settings).
    pub(crate) fn with<R>(lists: &DangerLists, f: impl FnOnce(&Needles) -> R) -> R {
        thread_local! {
            static LAST: std::cell::RefCell<Option<(DangerLists, std::rc::Rc<Needles>)>> =
                const { std::cell::RefCell::new(None) };
        }
        let hit = LAST.with_borrow(|c| c.as_ref().filter(|(l, _)| l == lists).map(|(_, n)| n.clone()));
        let needles = hit.unwrap_or_else(|| {
            let n = std::rc::Rc::new(Needles::new(lists));
            LAST.set(Some((lists.clone(), n.clone())));
            n
        });
        f(&needles)
    }

    /// False only when `text` certainly contains none of the names.
    pub(crate) fn may_match(&self, text: &str) -> bool {
        if self.any_non_ascii || !text.is_ascii() {
            return true;
        }
        let hay = text.as_bytes();
        (0..hay.len()).any(|i| {
            self.starts[usize::from(hay[i])]
                && self.names.iter().any(|n| {
                    let n = n.as_bytes();
                    hay.len() - i >= n.len() && hay[i..i + n.len()].eq_ignore_ascii_case(n)
                })
        })
    }
}

/// The default dangerous lists, built once.
fn default_lists() -> &'static DangerLists {
    static LISTS: std::sync::OnceLock<DangerLists> = std::sync::OnceLock::new();
    LISTS.get_or_init(DangerLists::default)
}

/// True when `text` (an assignment's value as written) names a path that
/// the default dangerous lists cover, on its text alone (quotes dropped,
/// `~`/`$HOME` as a directory): for the read-only test, which has no
/// settings, working directory or home.
pub(crate) fn text_names_default_danger(text: &str) -> bool {
    thread_local! {
        static NEEDLES: Needles = Needles::new(default_lists());
    }
    if !NEEDLES.with(|n| n.may_match(text)) {
        return false;
    }
    let crude: String = text.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
    path_pieces(&crude).iter().any(|p| is_dangerous_path(p, "/", "/", default_lists()))
}

/// Most words a brace expression may expand to before it is judged
/// dangerous unseen.
const MAX_BRACE_WORDS: usize = 1024;

/// Bash brace expansion of `s` (`a{b,c}d`, nested, `{x..y}` sequences of
/// numbers or single characters); `None` when it would give more than
/// [`MAX_BRACE_WORDS`] words.
pub(crate) fn brace_expand(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand_into(s, &mut out)?;
    Some(out)
}

fn expand_into(s: &str, out: &mut Vec<String>) -> Option<()> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == b'{'
            && let Some((close, alts)) = brace_group(s, i)
        {
            for alt in alts {
                let word = format!("{}{alt}{}", &s[..i], &s[close + 1..]);
                expand_into(&word, out)?;
                if out.len() > MAX_BRACE_WORDS {
                    return None;
                }
            }
            return Some(());
        }
        i += 1;
    }
    out.push(s.to_string());
    (out.len() <= MAX_BRACE_WORDS).then_some(())
}

/// The group opening at `open`: its closing index and its alternatives
/// (top-level `,`-separated parts, or the terms of a `{x..y}` sequence);
/// `None` when it is not an expansion (no comma, unbalanced, `{}`).
fn brace_group(s: &str, open: usize) -> Option<(usize, Vec<String>)> {
    let b = s.as_bytes();
    let (mut depth, mut i, mut commas) = (0usize, open, vec![]);
    let close = loop {
        match b.get(i)? {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    break i;
                }
            }
            b',' if depth == 1 => commas.push(i),
            _ => {}
        }
        i += 1;
    };
    let inner = &s[open + 1..close];
    if commas.is_empty() {
        return sequence(inner).map(|v| (close, v));
    }
    let mut alts = Vec::with_capacity(commas.len() + 1);
    let mut start = open + 1;
    for c in commas.into_iter().chain([close]) {
        alts.push(s[start..c].to_string());
        start = c + 1;
    }
    Some((close, alts))
}

/// The terms of `x..y` (optionally `..step`) for numbers or single
/// characters; `None` for anything else or too long a sequence.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = inner.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(st) => st.parse::<i64>().ok()?.checked_abs()?.max(1),
        None => 1,
    };
    let term = |t: &str| -> Option<(i64, bool)> {
        if let Ok(n) = t.parse::<i64>() {
            return Some((n, false));
        }
        let mut c = t.chars();
        let ch = c.next()?;
        (c.next().is_none() && ch.is_ascii()).then_some((ch as i64, true))
    };
    let ((a, ca), (z, cz)) = (term(parts[0])?, term(parts[1])?);
    if ca != cz {
        return None;
    }
    let n = (a - z).unsigned_abs() / step.unsigned_abs() + 1;
    if n as usize > MAX_BRACE_WORDS {
        // More terms than may be judged: reported as an overflow.
        return Some(vec![String::new(); MAX_BRACE_WORDS + 1]);
    }
    let dir = if z >= a { step } else { -step };
    let mut out = Vec::new();
    let mut v = a;
    for _ in 0..n {
        out.push(if ca { char::from(u8::try_from(v).ok()?).to_string() } else { v.to_string() });
        v += dir;
    }
    Some(out)
}

#[cfg(test)]
mod prefilter_tests {
    use super::*;

    /// The needle prefilter never changes the list scan's answer, for the
    /// default lists and for custom ones (capitals, multi-segment entries).
    #[test]
    fn prefilter_keeps_the_scan_answer() {
        let custom = DangerLists {
            files: vec!["/Secrets.TXT".into(), ".ssh/config".into(), "".into()],
            directories: vec!["keys/".into(), "a/b".into()],
        };
        let paths = [
            "/",
            "/home/u/.bashrc",
            "/home/u/.BASHRC",
            "/work/p/src/main.rs",
            "/home/u/.ssh/config",
            "/x/.SSH/Config",
            "/x/a/b",
            "/x/a/b/c",
            "/x/ab",
            "/x/KEYS/f",
            "/x/monkeys",
            "/x/secrets.txt",
            "/x/secrets.txt.bak",
            "/x/.git/hooks/pre-commit",
            "/x/.gitconfig",
            "/x/ünï/.bashrc",
            "/x/ünï",
        ];
        for lists in [DangerLists::default(), custom] {
            let needles = Needles::new(&lists);
            for p in paths {
                assert_eq!(
                    normal_path_is_dangerous(p, "/home/u", &lists, &needles),
                    is_dangerous_path(p, "/", "/home/u", &lists),
                    "{p} with {lists:?}"
                );
            }
        }
    }
}
