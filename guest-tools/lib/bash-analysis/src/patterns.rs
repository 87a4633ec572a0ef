//! Dangerous command patterns (spec §5.4.6), checked per part as well.

use crate::model::Part;
use crate::normalize::{normalized_text, program_name, strip_wrappers};

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

/// Whether the reference matches `pattern` only as a whole word: short
/// single words (`dd`, `mkfs`) need word boundaries, others are substrings.
fn needs_word_boundaries(pattern: &str) -> bool {
    !pattern.contains(' ') && pattern.chars().count() <= 4
}

/// For each byte, the set (bit `i` for pattern `i`) of the
/// [`DANGEROUS_COMMANDS`] that start with it.
const STARTS: [u16; 256] = {
    assert!(DANGEROUS_COMMANDS.len() <= 16);
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < DANGEROUS_COMMANDS.len() {
        table[DANGEROUS_COMMANDS[i].as_bytes()[0] as usize] |= 1 << i;
        i += 1;
    }
    table
};

/// The index in [`DANGEROUS_COMMANDS`] of the first pattern (in list order)
/// that hits `text`, following the reference test per pattern (see
/// [`needs_word_boundaries`]). One pass over `text`: at each position only
/// the patterns starting with that byte are compared.
fn first_pattern_hit(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    // Bit `i` set: pattern `i` may still be the answer.
    let mut open: u32 = (1 << DANGEROUS_COMMANDS.len()) - 1;
    for (at, &b) in bytes.iter().enumerate() {
        let mut candidates = u32::from(STARTS[usize::from(b)]) & open;
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let pat = DANGEROUS_COMMANDS[i];
            if !bytes[at..].starts_with(pat.as_bytes()) {
                continue;
            }
            if needs_word_boundaries(pat) {
                let end = at + pat.len();
                let before_ok = text[..at].chars().next_back().is_none_or(|c| !is_word_char(c));
                let after_ok = text[end..].chars().next().is_none_or(|c| !is_word_char(c));
                if !(before_ok && after_ok) {
                    continue;
                }
            }
            // Pattern `i` hits: only earlier patterns can still win.
            open = (1 << i) - 1;
            break;
        }
    }
    (open != (1 << DANGEROUS_COMMANDS.len()) - 1).then(|| open.trailing_ones() as usize)
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
    if program_name(first) != Some("rm") {
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
    // `rm -rf` comes first in the list: its per-part spelling check first.
    if parts.iter().any(is_rm_rf) {
        return Some(DANGEROUS_COMMANDS[0]);
    }
    first_pattern_hit(&texts).map(|i| DANGEROUS_COMMANDS[i])
}
