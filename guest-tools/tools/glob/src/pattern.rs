//! Glob patterns over paths relative to the search base.
//!
//! The reference's helper semantics, extended: the pattern is split on runs
//! of `/` or `\` (empty parts dropped); a `**` part matches zero or more
//! directories; other parts match one path segment, where `*` is any run of
//! characters, `?` one character, and everything else literal. toolhost
//! adds `[abc]`, `[a-z]`, `[!abc]`/`[^abc]` classes, `{a,b}` alternatives
//! (nestable, at most [`MAX_ALTERNATIVES`]), and drops `.` parts (the
//! reference matches nothing for `./x`). Matching is case-sensitive, and `*`
//! matches names starting with a dot.

use toolhost_policy::Wildcard;

/// Brace expansion stops after this many alternatives (the rest of the
/// braces are taken literally).
pub const MAX_ALTERNATIVES: usize = 256;

#[derive(Debug, Clone)]
enum Seg {
    /// `**`: zero or more segments.
    Deep,
    /// One segment.
    Name(Wildcard),
}

/// A compiled pattern: one or more alternatives (from `{a,b}`), each a list
/// of segments.
#[derive(Debug, Clone)]
pub struct GlobPattern {
    alts: Vec<Vec<Seg>>,
    literal_prefix: Vec<String>,
    source: String,
}

/// Whether a part has no wildcard at all.
fn is_literal(part: &str) -> bool {
    !part.contains(['*', '?', '[', '{', '}'])
}

/// Splits on runs of `/` or `\`, dropping empty and `.` parts.
pub fn split_parts(pattern: &str) -> Vec<&str> {
    pattern.split(['/', '\\']).filter(|p| !p.is_empty() && *p != ".").collect()
}

/// Expands `{a,b}` alternatives (nested, left to right). A brace without a
/// top-level comma or without its closing brace is literal.
pub fn expand_braces(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(pattern, &mut out);
    out
}

fn expand_into(p: &str, out: &mut Vec<String>) {
    if out.len() >= MAX_ALTERNATIVES {
        out.push(p.to_string());
        return;
    }
    let chars: Vec<(usize, char)> = p.char_indices().collect();
    for (k, &(open, c)) in chars.iter().enumerate() {
        if c != '{' {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut close = None;
        for &(i, d) in &chars[k..] {
            match d {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                ',' if depth == 1 => commas.push(i),
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        if commas.is_empty() {
            continue;
        }
        let (head, tail) = (&p[..open], &p[close + 1..]);
        let mut start = open + 1;
        for end in commas.into_iter().chain(std::iter::once(close)) {
            expand_into(&format!("{head}{}{tail}", &p[start..end]), out);
            start = end + 1;
        }
        return;
    }
    out.push(p.to_string());
}

/// Matches segments against path parts (`**` = zero or more parts).
fn segs_match(segs: &[Seg], parts: &[&str]) -> bool {
    // reach[j]: the first i segments can consume exactly j parts.
    let mut reach = vec![false; parts.len() + 1];
    reach[0] = true;
    for seg in segs {
        let mut next = vec![false; parts.len() + 1];
        match seg {
            Seg::Deep => {
                let mut on = false;
                for j in 0..=parts.len() {
                    on |= reach[j];
                    next[j] = on;
                }
            }
            Seg::Name(toks) => {
                for j in 0..parts.len() {
                    if reach[j] && toks.matches(parts[j]) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        if !next.iter().any(|b| *b) {
            return false;
        }
        reach = next;
    }
    reach[parts.len()]
}

impl GlobPattern {
    /// Compiles a relative pattern.
    pub fn new(pattern: &str) -> Self {
        let mut alts = Vec::new();
        let mut prefixes: Vec<Vec<String>> = Vec::new();
        for alt in expand_braces(pattern) {
            let parts = split_parts(&alt);
            let lit: Vec<String> = parts
                .iter()
                .take(parts.len().saturating_sub(1))
                .take_while(|p| is_literal(p) && **p != "..")
                .map(|p| p.to_string())
                .collect();
            prefixes.push(lit);
            alts.push(
                parts
                    .iter()
                    .map(|p| if *p == "**" { Seg::Deep } else { Seg::Name(Wildcard::with_caret_negation(p)) })
                    .collect(),
            );
        }
        // The directory parts every alternative starts with.
        let mut literal_prefix = prefixes.first().cloned().unwrap_or_default();
        for p in &prefixes[1.min(prefixes.len())..] {
            let common = literal_prefix.iter().zip(p).take_while(|(a, b)| a == b).count();
            literal_prefix.truncate(common);
        }
        Self { alts, literal_prefix, source: pattern.to_string() }
    }

    /// Leading directory names shared by every alternative, with no
    /// wildcard: the walk can start there.
    pub fn literal_prefix(&self) -> &[String] {
        &self.literal_prefix
    }

    /// Globs for the last path component that every match satisfies (one
    /// per alternative), for the host's name filter; empty when an
    /// alternative ends in `**` (any name can match).
    pub fn name_globs(&self) -> Vec<String> {
        let mut names = Vec::new();
        for alt in expand_braces(&self.source) {
            match split_parts(&alt).last() {
                Some(&"**") | None => return Vec::new(),
                // Classes and braces have edge cases (an unclosed `[` is
                // literal here); only `*` and `?` are passed to the host.
                Some(last) if last.contains(['[', ']', '{', '}', '\\']) => return Vec::new(),
                Some(last) => {
                    let last = last.to_string();
                    if !names.contains(&last) {
                        names.push(last);
                    }
                }
            }
        }
        names
    }

    /// Whether the relative path `rel` (`/`-separated) matches. `is_link`:
    /// the entry is a symlink to a file, which (as in the reference) only a
    /// pattern ending in `**` lists.
    pub fn matches(&self, rel: &str, is_link: bool) -> bool {
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        self.alts.iter().any(|segs| {
            if segs.is_empty() || (is_link && !matches!(segs.last(), Some(Seg::Deep))) {
                return false;
            }
            segs_match(segs, &parts)
        })
    }
}

/// Where an absolute pattern searches: `(new base, relative pattern)`. A
/// pattern under `base` (absolute, normalised) is made relative to it and
/// keeps the base (`None`); any other absolute pattern searches from its
/// leading wildcard-free directories. (The reference treats every absolute
/// pattern as relative to the base and finds nothing.)
pub fn split_absolute(pattern: &str, base: &str) -> (Option<String>, String) {
    let b = base.trim_end_matches('/');
    if let Some(rest) = pattern.strip_prefix(b).and_then(|r| r.strip_prefix('/')) {
        return (None, rest.to_string());
    }
    let parts = split_parts(pattern);
    let n = parts.len().saturating_sub(1);
    let lit = parts.iter().take(n).take_while(|p| is_literal(p) && **p != "..").count();
    let new_base = format!("/{}", parts[..lit].join("/"));
    (Some(new_base), parts[lit..].join("/"))
}
