//! The secret-redaction rules of toolhost, one piece of code for the
//! `redact` example middleware (tool output) and the audit log (tool
//! input), in two passes: first AWS access key ids (`AKIA` followed by 16
//! of `0-9A-Z`, not part of a longer word) become `[REDACTED]`, then the
//! value of `password=`, `passwd=`, `secret=`, `token=` and `api_key=` (any
//! letter case, not preceded by a letter or digit) up to the next
//! whitespace, `&`, `;`, `,` or quote becomes `[REDACTED]`.
//!
//! Redaction is idempotent: a value that is already exactly `[REDACTED]`
//! is left as it is and not counted, so text passed through two redactors
//! (two redact middlewares, or a redacted input logged again) is masked
//! and counted once. The Python and JavaScript twins of the middleware
//! (`examples/python/redact`, `examples/js/redact`) apply the same two
//! passes with regular expressions.

/// What a secret is replaced with.
pub const MASK: &str = "[REDACTED]";
const KEYS: &[&str] = &["password=", "passwd=", "secret=", "token=", "api_key="];

fn is_key_char(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn ends_value(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'&' | b';' | b',' | b'"' | b'\'')
}

/// `text` with secrets replaced, and how many were (a value that was
/// already `[REDACTED]` does not count).
pub fn redact(text: &str) -> (String, usize) {
    let (text, key_ids) = mask_key_ids(text);
    let (text, values) = mask_values(&text);
    (text, key_ids + values)
}

/// The first pass: `AKIA` + 16 key characters, not part of a longer word.
fn mask_key_ids(text: &str) -> (String, usize) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut count, mut i, mut copied) = (0, 0, 0);
    while i < bytes.len() {
        if bytes[i..].starts_with(b"AKIA")
            && bytes.len() >= i + 20
            && bytes[i + 4..i + 20].iter().all(|&b| is_key_char(b))
            && (i == 0 || !is_key_char(bytes[i - 1]))
            && bytes.get(i + 20).is_none_or(|&b| !is_key_char(b))
        {
            out.push_str(&text[copied..i]);
            out.push_str(MASK);
            count += 1;
            i += 20;
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, count)
}

/// The second pass: the value after a key, unless it is already the mask.
fn mask_values(text: &str) -> (String, usize) {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let (mut count, mut i, mut copied) = (0, 0, 0);
    while i < bytes.len() {
        if let Some(key) = KEYS.iter().find(|k| lower.as_bytes()[i..].starts_with(k.as_bytes()))
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        {
            let start = i + key.len();
            let mut end = start;
            while end < bytes.len() && !ends_value(bytes[end]) {
                end += 1;
            }
            if end > start {
                if &text[start..end] != MASK {
                    out.push_str(&text[copied..start]);
                    out.push_str(MASK);
                    copied = end;
                    count += 1;
                }
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::redact;
    use proptest::prelude::*;

    #[test]
    fn redacts_keys_and_passwords() {
        let (text, n) = redact("key AKIAABCDEFGHIJKLMNOP, url?user=a&password=hunter2&x=1 Secret=s3 tokens=ok");
        assert_eq!(text, "key [REDACTED], url?user=a&password=[REDACTED]&x=1 Secret=[REDACTED] tokens=ok");
        assert_eq!(n, 3);
        assert_eq!(redact("AKIA1234 short, XAKIAABCDEFGHIJKLMNOP").1, 0);
    }

    #[test]
    fn a_masked_value_is_not_masked_again() {
        let once = "key [REDACTED], url?user=a&password=[REDACTED]&x=1 Secret=[REDACTED] tokens=ok";
        assert_eq!(redact(once), (once.to_string(), 0));
        // A key id as a value is one secret, masked by the first pass.
        assert_eq!(redact("token=AKIAABCDEFGHIJKLMNOP"), ("token=[REDACTED]".to_string(), 1));
        // A value that only starts with the mask is still a secret.
        assert_eq!(redact("token=[REDACTED]x y"), ("token=[REDACTED] y".to_string(), 1));
        // A key right after a masked key id is a key (as in the Python and JS twins).
        assert_eq!(redact("AKIAABCDEFGHIJKLMNOPpassword=x"), ("[REDACTED]password=[REDACTED]".to_string(), 2));
    }

    /// Text made of the pieces the rules look at.
    fn text() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "AKIA",
            "ABCDEFGH",
            "12345678",
            "password=",
            "PassWd=",
            "token=",
            "api_key=",
            "secret=",
            "[REDACTED]",
            "x",
            "Z",
            "9",
            " ",
            "&",
            ";",
            ",",
            "\"",
            "'",
            "=",
            "é",
            "\n",
        ]);
        prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        /// Redacting redacted text changes nothing and counts nothing.
        #[test]
        fn redaction_is_idempotent(input in text()) {
            let (once, _) = redact(&input);
            prop_assert_eq!(redact(&once), (once.clone(), 0));
        }
    }
}
