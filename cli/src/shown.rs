//! Showing text a guest supplied (names, descriptions, messages, output) on
//! a terminal without letting it drive the terminal: a description must not
//! be able to erase or redraw the capability lines a user is reviewing.

use std::borrow::Cow;

use toolhost::escape::escaped;

/// Guest text on a line of its own: newlines and tabs escaped too.
pub fn line(text: &str) -> Cow<'_, str> {
    escaped(text, false)
}

/// Guest text that may span lines (a description, a tool's output).
pub fn block(text: &str) -> Cow<'_, str> {
    escaped(text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_escapes_newlines_and_block_keeps_them() {
        assert_eq!(block("ok\n\tline\x1b"), "ok\n\tline\\x1b");
        assert_eq!(line("a\nb\u{202e}"), "a\\x0ab\\u{202e}");
    }
}
