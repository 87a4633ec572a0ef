//! Text from a guest, the model or an upstream server, made safe to show to
//! a person or to write into a line-based file: every character that can
//! drive a terminal, end a line, hide itself or make text read differently
//! from what it is, written as an escape.
//!
//! This is the one escaper: the CLI shows all untrusted text through it
//! ([`line`] and [`block`], its `cli::shown`), and so do the MCP front's
//! permission and AskUser forms, its log messages and progress messages,
//! `toolhost status` and `toolhost audit replay`; the Skill tool's listing
//! quotes with it ([`quoted`], [`attribute`]). The permission engine drops
//! suggested rules containing such characters, and the settings writer
//! escapes them in the comments it writes.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a character that must not reach a person or a comment as
/// is:
///
/// - a C0 control (newline and tab included), DEL, or a C1 control (such as
///   U+009B, a one-byte CSI), which drive a terminal or end a line;
/// - U+2028 and U+2029, which end a line where Unicode line breaking is
///   honoured;
/// - a bidirectional control (U+202A–U+202E, U+2066–U+2069, U+061C,
///   U+200E, U+200F), which makes text read in another order than it runs;
/// - a character that is invisible by definition: the other format
///   characters of Unicode's `Default_Ignorable_Code_Point` (U+00AD soft
///   hyphen, U+034F, U+115F/U+1160, U+17B4/U+17B5, U+180B–U+180F,
///   U+200B–U+200D zero-width space and joiners, U+2060–U+206F word joiner,
///   invisible operators and deprecated formats, U+3164, U+FEFF, U+FFA0,
///   U+FFF0–U+FFF8, U+1BCA0–U+1BCA3, U+1D173–U+1D17A), the interlinear
///   annotation marks U+FFF9–U+FFFB, which hide the text between them, the
///   variation selectors U+FE00–U+FE0F and U+E0100–U+E01EF and the tag
///   characters U+E0000–U+E007F (with the rest of plane 14), which can
///   carry a hidden message beside visible text.
///
/// U+FE0E and U+FE0F (text and emoji presentation) are kept by
/// [`escaped`] right after a character that takes them (see there); this
/// predicate counts them always, so a rule holding one is never "plain".
pub fn is_disguising(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// Whether a presentation selector (U+FE0E, U+FE0F) after `before` is the
/// ordinary part of an emoji or a symbol (`⚠️`, `❤️`, a keycap `1️⃣`):
/// after a character beyond ASCII or a keycap base. After an ASCII letter,
/// or after another selector, it only hides.
fn takes_presentation(before: Option<char>) -> bool {
    before.is_some_and(|b| !b.is_ascii() || b.is_ascii_digit() || b == '#' || b == '*')
}

/// Which characters of a text, read from its start, are escaped.
struct Hidden {
    keep_layout: bool,
    before: Option<char>,
    kept_selector: bool,
}

impl Hidden {
    fn new(keep_layout: bool) -> Self {
        Self { keep_layout, before: None, kept_selector: false }
    }

    /// Whether the next character, `c`, is escaped.
    fn next(&mut self, c: char) -> bool {
        let selector = matches!(c, '\u{fe0e}' | '\u{fe0f}');
        let hide = is_disguising(c)
            && !(self.keep_layout && matches!(c, '\n' | '\t'))
            && !(selector && !self.kept_selector && takes_presentation(self.before));
        self.kept_selector = selector && !hide;
        self.before = Some(c);
        hide
    }
}

/// `text` with the characters [`Hidden`] picks escaped and every other
/// character written by `plain`.
fn shown_with(text: &str, keep_layout: bool, mut plain: impl FnMut(char, &mut String)) -> String {
    let mut hidden = Hidden::new(keep_layout);
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !hidden.next(c) {
            plain(c, &mut out);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
    out
}

/// `text` with every [`is_disguising`] character escaped (`\x1b`,
/// `\u{202e}`), except newline and tab when `keep_layout`, and U+FE0E or
/// U+FE0F once right after a character that takes a presentation (a
/// character beyond ASCII, or a keycap base `0-9 # *`): they are part of
/// most emoji, and one such selector carries no hidden text. Text without
/// any is returned as is. The escapes are printable ASCII, so escaping
/// twice changes nothing.
pub fn escaped(text: &str, keep_layout: bool) -> Cow<'_, str> {
    let mut hidden = Hidden::new(keep_layout);
    if !text.chars().any(|c| hidden.next(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(shown_with(text, keep_layout, |c, out| out.push(c)))
}

/// Untrusted text on a line of its own: newlines and tabs escaped too.
pub fn line(text: &str) -> Cow<'_, str> {
    escaped(text, false)
}

/// Untrusted text that may span lines (a description, a tool's output).
pub fn block(text: &str) -> Cow<'_, str> {
    escaped(text, true)
}

/// `text` as one double-quoted string that nothing in it can end early or
/// carry onto another line: `"` and `\` written `\"` and `\\`, and every
/// character [`line`] escapes escaped as it does.
pub fn quoted(text: &str) -> String {
    let inner = shown_with(text, false, |c, out| match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        c => out.push(c),
    });
    format!("\"{inner}\"")
}

/// `text` as the value of an XML-like attribute (`dir="…"`) that nothing in
/// it can close or leave: `&`, `"`, `<` and `>` written as entities, and
/// every character [`line`] escapes escaped as it does.
pub fn attribute(text: &str) -> String {
    shown_with(text, false, |c, out| match c {
        '&' => out.push_str("&amp;"),
        '"' => out.push_str("&quot;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        c => out.push(c),
    })
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

    #[test]
    fn invisible_characters_are_escaped() {
        for (c, shown) in [
            ('\u{200b}', "\\u{200b}"),
            ('\u{200d}', "\\u{200d}"),
            ('\u{2028}', "\\u{2028}"),
            ('\u{2029}', "\\u{2029}"),
            ('\u{2060}', "\\u{2060}"),
            ('\u{2064}', "\\u{2064}"),
            ('\u{feff}', "\\u{feff}"),
            ('\u{ad}', "\\u{00ad}"),
            ('\u{e0041}', "\\u{e0041}"),
            ('\u{e007f}', "\\u{e007f}"),
            ('\u{e0100}', "\\u{e0100}"),
            ('\u{fe00}', "\\u{fe00}"),
            ('\u{fff9}', "\\u{fff9}"),
            ('\u{3164}', "\\u{3164}"),
        ] {
            assert_eq!(escaped(&format!("r{c}m"), true), format!("r{shown}m"), "{:x}", c as u32);
        }
        // Printable text beyond ASCII is left alone.
        assert_eq!(escaped("café — naïve 日本 ✓", false), "café — naïve 日本 ✓");
    }

    #[test]
    fn an_emoji_keeps_its_presentation_selector_and_nothing_else_does() {
        assert!(matches!(escaped("\u{26a0}\u{fe0f} careful 1\u{fe0f}\u{20e3}", false), Cow::Borrowed(_)));
        assert_eq!(escaped("ls\u{fe0f}", false), "ls\\u{fe0f}");
        assert_eq!(escaped("\u{2764}\u{fe0f}\u{fe0f}", false), "\u{2764}\u{fe0f}\\u{fe0f}");
        assert_eq!(escaped("\u{2764}\u{fe01}", false), "\u{2764}\\u{fe01}");
    }

    #[test]
    fn escaping_twice_changes_nothing() {
        let once = escaped("a\x1b\u{202e}\u{200b}\n\\x1b", false).into_owned();
        assert_eq!(escaped(&once, false), once);
    }

    #[test]
    fn quoted_and_attribute_text_stays_on_its_line_and_inside_its_quotes() {
        assert_eq!(quoted("Fill PDF forms."), "\"Fill PDF forms.\"");
        assert_eq!(quoted("a\n- admin: \"root\" \\x0a"), "\"a\\x0a- admin: \\\"root\\\" \\\\x0a\"");
        assert_eq!(attribute("x\" evil=\"1\"><y>&\n"), "x&quot; evil=&quot;1&quot;&gt;&lt;y&gt;&amp;\\x0a");
    }
}
