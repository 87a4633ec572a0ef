//! Showing text a guest supplied (names, descriptions, messages, output) on
//! a terminal without letting it drive the terminal: a description must not
//! be able to erase or redraw the capability lines a user is reviewing.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character escaped: C0 controls (`\x1b` for
/// ESC; newline and tab kept when `keep_layout`), DEL, the C1 controls and
/// the Unicode bidirectional overrides (`\u{202e}`), which can make text
/// read differently from what it is. Text without any is returned as is.
pub fn shown(text: &str, keep_layout: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| needs_escape(c, keep_layout)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c, keep_layout) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// Guest text on a line of its own: newlines and tabs escaped too.
pub fn line(text: &str) -> Cow<'_, str> {
    shown(text, false)
}

/// Guest text that may span lines (a description, a tool's output).
pub fn block(text: &str) -> Cow<'_, str> {
    shown(text, true)
}

fn needs_escape(c: char, keep_layout: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_layout,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls_and_keeps_layout_when_asked() {
        assert_eq!(block("ok\n\tline"), "ok\n\tline");
        assert!(matches!(block("plain"), Cow::Borrowed(_)));
        assert_eq!(block("a\x1b[2K\rb"), "a\\x1b[2K\\x0db");
        assert_eq!(line("a\nb\x7f"), "a\\x0ab\\x7f");
        assert_eq!(block("\u{9b}31m \u{202e}txt"), "\\u{009b}31m \\u{202e}txt");
    }
}
