//! Dangerous command patterns (spec §5.4.6), checked per part as well.

use crate::normalize::{normalized_text, program_name, strip_wrappers};
use crate::parse::Part;

/// Reference `DANGEROUS_COMMANDS`, in order (the first hit is reported).
pub const DANGEROUS_COMMANDS: &[&str] = &[
    "rm -rf",
    "sudo rm",
    "dd",
    "mkfs",
    "fdisk",
    "format",
    "chmod 777",
    "chmod -R 777",
    "chown -R",
    "kill -9",
    "> /dev/",
];

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Reference test of one pattern on one whitespace-normalised text: short
/// single words (`dd`, `mkfs`) need word boundaries, others are substrings.
fn pattern_hits(pattern: &str, text: &str) -> bool {
    if !pattern.contains(' ') && pattern.chars().count() <= 4 {
        let mut start = 0;
        while let Some(pos) = text[start..].find(pattern) {
            let at = start + pos;
            let end = at + pattern.len();
            let before_ok = text[..at].chars().next_back().is_none_or(|c| !is_word_char(c));
            let after_ok = text[end..].chars().next().is_none_or(|c| !is_word_char(c));
            if before_ok && after_ok {
                return true;
            }
            start = at + pattern.len().max(1);
            if start >= text.len() {
                break;
            }
        }
        false
    } else {
        text.contains(pattern)
    }
}

/// Appends `s` with its whitespace runs squashed to one space and trimmed
/// (`"a  b "` → `"a b"`).
fn push_squashed(out: &mut String, s: &str) {
    for (i, w) in s.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(w);
    }
}

/// True when the part is an `rm` (wrappers and paths seen through) with
/// both a recursive and a force option in any spelling (`-fr`, `-r -f`,
/// `-Rf`, `--recursive --force`): treated as the `rm -rf` pattern.
fn is_rm_rf(part: &Part) -> bool {
    let words = strip_wrappers(&part.words);
    let Some((first, args)) = words.split_first() else {
        return false;
    };
    if program_name(first).as_deref() != Some("rm") {
        return false;
    }
    let (mut r, mut f) = (false, false);
    for a in args {
        let t = a.text();
        if t == "--" {
            break;
        }
        if t == "--recursive" {
            r = true;
        } else if t == "--force" {
            f = true;
        } else if t.starts_with('-') && !t.starts_with("--") {
            r |= t.contains('r') || t.contains('R');
            f |= t.contains('f');
        }
    }
    r && f
}

/// The first dangerous pattern found in the whole command (reference) or in
/// any part's text, raw or normalised (`/bin/rm -rf`, `command rm -rf`).
pub(crate) fn dangerous_pattern(command: &str, parts: &[Part]) -> Option<&'static str> {
    // The squashed texts joined by newlines, searched once per pattern: a
    // squashed text has no newline and no pattern contains one, so a pattern
    // hits the joined text exactly when it hits one of the texts (a newline
    // is a word boundary, like the start or end of a text).
    let mut texts = String::with_capacity(command.len() * 3 + 8);
    push_squashed(&mut texts, command);
    for p in parts {
        texts.push('\n');
        push_squashed(&mut texts, &p.text());
        texts.push('\n');
        push_squashed(&mut texts, &normalized_text(&p.words));
    }
    for pat in DANGEROUS_COMMANDS {
        if pattern_hits(pat, &texts) {
            return Some(pat);
        }
        if *pat == "rm -rf" && parts.iter().any(is_rm_rf) {
            return Some(pat);
        }
    }
    None
}
