//! Python's `repr()` of JSON values, as AgentScope's TaskGet prints task
//! metadata (`Metadata: {'priority': 'high', 'done': True, 'owner': None}`).
//!
//! Mapping: `null` → `None`, `true`/`false` → `True`/`False`, integers as
//! they are, floats as Python's shortest round-trip repr (`1.0`, `0.1`,
//! `1e+16`, `1e-05`), strings in Python's quoting (single quotes unless the
//! text contains a single quote and no double quote), arrays as lists
//! (`[1, 2]`), objects as dicts (`{'a': 1}`) in their stored key order.
//!
//! Strings: `\\`, `\n`, `\r`, `\t` and the delimiting quote are escaped as
//! Python does; other non-printable characters become `\xNN`, `\uNNNN` or
//! `\UNNNNNNNN`. "Non-printable" follows Python's `str.isprintable` for the
//! control, separator and common format characters (C0/C1 controls, DEL,
//! no-break and other non-ASCII spaces, line/paragraph separators, soft
//! hyphen, zero-width and bidirectional marks, BOM, surrogates, private use,
//! and noncharacters); Python's full Unicode tables are not reproduced, so a
//! rare unassigned code point may print literally where Python escapes it.

use serde_json::Value;

/// `repr()` of `value` as Python would print the value `json.loads` gives.
pub fn py_repr(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(f) = n.as_f64() {
                out.push_str(&py_float(f));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => out.push_str(&py_str(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&py_str(key));
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Python's `repr(float)`: the shortest round-trip digits, scientific
/// notation below 1e-4 and from 1e16 on, with a signed two-digit exponent.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Rust's `{:?}` already picks the shortest round-trip digits and the same
    // thresholds for scientific notation; only the exponent spelling differs
    // (`1e16` vs `1e+16`, `1e-5` vs `1e-05`).
    let debug = format!("{f:?}");
    match debug.split_once('e') {
        None => debug,
        Some((mantissa, exponent)) => {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exponent),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
    }
}

/// Python's `repr(str)`.
pub fn py_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !is_printable(c) => {
                let n = c as u32;
                if n <= 0xff {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// An approximation of Python's `str.isprintable` for one character (see
/// the module documentation for what is covered).
fn is_printable(c: char) -> bool {
    let n = c as u32;
    !matches!(n,
        0x00..=0x1f | 0x7f..=0xa0 // C0, DEL, C1, no-break space
        | 0xad                     // soft hyphen (Cf)
        | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e
        | 0x1680                   // ogham space mark (Zs)
        | 0x2000..=0x200f          // spaces (Zs), zero-width and direction marks (Cf)
        | 0x2028..=0x202f          // line/paragraph separators, bidi embeddings, narrow nbsp
        | 0x205f..=0x206f          // medium math space, word joiner, invisible operators
        | 0x3000                   // ideographic space
        | 0xd800..=0xdfff          // surrogates (cannot occur in a Rust char; kept for clarity)
        | 0xe000..=0xf8ff          // private use
        | 0xfdd0..=0xfdef          // noncharacters
        | 0xfeff                   // BOM / zero-width no-break space
        | 0xfff0..=0xfffb          // unassigned specials, interlinear annotations
        | 0xfffe..=0xffff
        | 0xe0000..=0xe007f        // language tags (Cf)
        | 0xf0000..=0x10ffff       // supplementary private use
    ) && (n & 0xfffe) != 0xfffe
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars() {
        assert_eq!(py_repr(&json!(null)), "None");
        assert_eq!(py_repr(&json!(true)), "True");
        assert_eq!(py_repr(&json!(false)), "False");
        assert_eq!(py_repr(&json!(42)), "42");
        assert_eq!(py_repr(&json!(-7)), "-7");
        assert_eq!(py_repr(&json!(18446744073709551615u64)), "18446744073709551615");
    }

    #[test]
    fn floats_like_python() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(0.1), "0.1");
        assert_eq!(py_float(-2.5), "-2.5");
        assert_eq!(py_float(1e15), "1000000000000000.0");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(1.5e16), "1.5e+16");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(0.00001), "1e-05");
        assert_eq!(py_float(1.25e-100), "1.25e-100");
        assert_eq!(py_float(1e300), "1e+300");
        assert_eq!(py_repr(&serde_json::from_str("3.0").unwrap()), "3.0");
    }

    #[test]
    fn strings_like_python() {
        assert_eq!(py_str("high"), "'high'");
        assert_eq!(py_str("it's"), "\"it's\"");
        assert_eq!(py_str("say \"hi\""), "'say \"hi\"'");
        assert_eq!(py_str("both ' and \""), "'both \\' and \"'");
        assert_eq!(py_str("a\\b"), "'a\\\\b'");
        assert_eq!(py_str("l1\nl2\r\t"), "'l1\\nl2\\r\\t'");
        assert_eq!(py_str("\u{1}\u{7f}\u{85}\u{a0}"), "'\\x01\\x7f\\x85\\xa0'");
        assert_eq!(py_str("\u{200b}\u{2028}\u{feff}"), "'\\u200b\\u2028\\ufeff'");
        assert_eq!(py_str("\u{f0000}"), "'\\U000f0000'");
        assert_eq!(py_str("héllo 日本 🎉"), "'héllo 日本 🎉'");
        assert_eq!(py_str(""), "''");
    }

    #[test]
    fn containers_keep_order_and_spacing() {
        let v: Value = serde_json::from_str(
            r#"{"priority": "high", "n": 3, "tags": ["a", "b"], "x": null, "ok": true, "nested": {"k": []}, "e": {}}"#,
        )
        .unwrap();
        assert_eq!(
            py_repr(&v),
            "{'priority': 'high', 'n': 3, 'tags': ['a', 'b'], 'x': None, 'ok': True, 'nested': {'k': []}, 'e': {}}"
        );
    }
}
