//! The one hostile string of the tests of text a person reads (issue 29,
//! item 8): each surface (a terminal prompt, an MCP form, a log message,
//! `toolhost status`, `toolhost audit replay`) gets it and must show it
//! escaped.

/// A right-to-left override (U+202E), a first-strong isolate (U+2066), a
/// one-byte CSI (U+009B), DEL, an ESC sequence and a zero-width space.
pub const HOSTILE: &str = "\u{202e}\u{2066}\u{9b}\u{7f}\x1b[31m\u{200b}";

/// [`HOSTILE`] as the escaper shows it.
pub const HOSTILE_SHOWN: &str = "\\u{202e}\\u{2066}\\u{009b}\\x7f\\x1b[31m\\u{200b}";

/// [`HOSTILE`] inside a JSON text (a call's input, where the encoder
/// already wrote ESC as `\u001b`) as the escaper shows it.
pub const HOSTILE_IN_JSON_SHOWN: &str = "\\u{202e}\\u{2066}\\u{009b}\\x7f\\u001b[31m\\u{200b}";

/// The raw characters of [`HOSTILE`] that must never be shown.
pub const RAW: [char; 6] = ['\u{202e}', '\u{2066}', '\u{9b}', '\u{7f}', '\x1b', '\u{200b}'];

/// Asserts that `shown` (what a person is shown of `what`) holds none of
/// the raw characters of [`HOSTILE`] and holds its escaped form.
pub fn assert_escaped(shown: &str, what: &str) {
    assert_escaped_as(shown, HOSTILE_SHOWN, what);
}

/// As [`assert_escaped`], with the escaped form `escaped` expected.
pub fn assert_escaped_as(shown: &str, escaped: &str, what: &str) {
    let raw: Vec<String> = RAW.iter().filter(|c| shown.contains(**c)).map(|c| format!("U+{:04X}", *c as u32)).collect();
    assert!(raw.is_empty(), "{what}: raw {raw:?} shown: {shown:?}");
    assert!(shown.contains(escaped), "{what}: the escaped form {escaped} is not shown: {shown:?}");
}

/// Every string in `value` (keys too), one a line: what a client may show
/// of a JSON form.
pub fn strings(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => format!("{s}\n"),
        serde_json::Value::Array(items) => items.iter().map(strings).collect(),
        serde_json::Value::Object(map) => map.iter().map(|(k, v)| format!("{k}\n{}", strings(v))).collect(),
        _ => String::new(),
    }
}

/// `HOSTILE` as octal escapes for `printf`, so a shell command that writes
/// it holds no control character itself.
pub fn hostile_printf() -> String {
    HOSTILE.bytes().map(|b| format!("\\{b:03o}")).collect()
}
