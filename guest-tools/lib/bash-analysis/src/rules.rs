//! Bash rule syntax (spec §5.6) applied to one text, and per-part matching.

use crate::model::Part;
use crate::readonly::assigns_harmless;

/// The text an allow rule is matched against for a part, through its first
/// `words` words: the words joined by one space, after the leading
/// assignments unless they are all harmless (`LANG=C make` is `make`).
/// Suggested rules are prefixes of this text, so they match their part.
pub(crate) fn allow_text(p: &Part, words: usize) -> String {
    let mut out: Vec<&str> = Vec::new();
    if !assigns_harmless(p) {
        out.extend(p.assigns.iter().map(|(_, raw)| raw.as_str()));
    }
    out.extend(p.words.iter().take(words).map(|w| w.raw.as_str()));
    out.join(" ")
}

/// Reference `match_rule` on one text: `prefix:*`, substring (with `\*` and
/// `\\` escapes) or wildcard (`*` = any run of characters except newline,
/// full match; a trailing ` *` also matches the bare prefix).
pub fn match_rule_text(content: &str, text: &str) -> bool {
    if content.is_empty() {
        return true;
    }
    if let Some(prefix) = content.strip_suffix(":*") {
        let prefix = prefix.trim();
        return text == prefix || text.starts_with(&format!("{prefix} "));
    }
    let toks = tokens(content);
    if !toks.iter().any(|t| matches!(t, Tok::Star)) {
        let lit: String = toks
            .iter()
            .map(|t| match t {
                Tok::Lit(c) => *c,
                Tok::Star => '*',
            })
            .collect();
        return text.contains(&lit);
    }
    if matches!(toks.last(), Some(Tok::Star)) {
        // Try the pattern without its trailing `.*` and trailing spaces.
        let mut head = &toks[..toks.len() - 1];
        while let Some((Tok::Lit(c), rest)) = head.split_last() {
            if c.is_whitespace() {
                head = rest;
            } else {
                break;
            }
        }
        if glob_full(head, text) {
            return true;
        }
    }
    glob_full(&toks, text)
}

#[derive(Clone, Copy, Debug)]
enum Tok {
    Lit(char),
    Star,
}

/// Splits a rule into literal characters and unescaped stars (`\*` is a
/// literal star, `\\` a literal backslash, any other `\` literal).
fn tokens(content: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = content.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('*') => {
                    chars.next();
                    out.push(Tok::Lit('*'));
                }
                Some('\\') => {
                    chars.next();
                    out.push(Tok::Lit('\\'));
                }
                _ => out.push(Tok::Lit('\\')),
            },
            '*' => out.push(Tok::Star),
            other => out.push(Tok::Lit(other)),
        }
    }
    out
}

/// Full match where `Star` matches any run of non-newline characters
/// (Python `re.fullmatch` with `.*`, no DOTALL). Linear-time backtracking.
fn glob_full(toks: &[Tok], text: &str) -> bool {
    let t: Vec<char> = text.chars().collect();
    // Dynamic programming over positions to stay polynomial with the
    // newline restriction: reachable[j] = pattern prefix matches t[..j].
    let mut reach = vec![false; t.len() + 1];
    reach[0] = true;
    for tok in toks {
        let mut next = vec![false; t.len() + 1];
        match tok {
            Tok::Star => {
                let mut on = false;
                for j in 0..=t.len() {
                    if reach[j] {
                        on = true;
                    }
                    if on {
                        next[j] = true;
                    }
                    if j < t.len() && t[j] == '\n' {
                        on = false;
                    }
                }
            }
            Tok::Lit(c) => {
                for j in 0..t.len() {
                    if reach[j] && t[j] == *c {
                        next[j + 1] = true;
                    }
                }
            }
        }
        reach = next;
    }
    reach[t.len()]
}
