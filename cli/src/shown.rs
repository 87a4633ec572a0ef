//! Showing text a guest, the model or an upstream server supplied (names,
//! descriptions, messages, output) on a terminal without letting it drive
//! the terminal or hide what it says: a description must not be able to
//! erase or redraw the capability lines a user is reviewing. The escaper is
//! the library's one ([`toolhost::escape`]).

pub use toolhost::escape::{block, line};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_escapes_newlines_and_block_keeps_them() {
        assert_eq!(block("ok\n\tline\x1b"), "ok\n\tline\\x1b");
        assert_eq!(line("a\nb\u{202e}\u{200b}"), "a\\x0ab\\u{202e}\\u{200b}");
    }
}
