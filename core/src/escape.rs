//! Text from a guest or the model, made safe to show or to write into a
//! line-based file: every character that can drive a terminal, end a line or
//! make text read differently from what it is, written as an escape.
//!
//! The CLI shows all untrusted text through this (its `cli::shown`); the
//! permission engine drops suggested rules containing such characters, and
//! the settings writer escapes them in the comments it writes.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a character that must not reach a terminal or a comment
/// as is: a C0 control (newline and tab included), DEL, a C1 control (such
/// as U+009B, a one-byte CSI), or a Unicode bidirectional control (U+202E
/// and friends), which make text read differently from what it is.
pub fn is_disguising(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// `text` with every [`is_disguising`] character escaped (`\x1b`,
/// `\u{202e}`), except newline and tab when `keep_layout`. Text without any
/// is returned as is.
pub fn escaped(text: &str, keep_layout: bool) -> Cow<'_, str> {
    let escape = |c: char| is_disguising(c) && !(keep_layout && matches!(c, '\n' | '\t'));
    if !text.chars().any(escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !escape(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls_and_keeps_layout_when_asked() {
        assert_eq!(escaped("ok\n\tline", true), "ok\n\tline");
        assert!(matches!(escaped("plain", true), Cow::Borrowed(_)));
        assert_eq!(escaped("a\x1b[2K\rb", true), "a\\x1b[2K\\x0db");
        assert_eq!(escaped("a\nb\x7f", false), "a\\x0ab\\x7f");
        assert_eq!(escaped("\u{9b}31m \u{202e}txt", true), "\\u{009b}31m \\u{202e}txt");
    }
}
