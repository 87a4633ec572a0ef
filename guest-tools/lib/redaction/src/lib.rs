//! The secret-redaction rules of toolhost, one piece of code for the
//! `redact` example middleware (tool output) and the audit log (tool
//! input): AWS access key ids (`AKIA` followed by 16 of `0-9A-Z`, not part
//! of a longer word) become `[REDACTED]`, and the value of `password=`,
//! `passwd=`, `secret=`, `token=` and `api_key=` (any letter case, not
//! preceded by a letter or digit) up to the next whitespace, `&`, `;`, `,`
//! or quote becomes `[REDACTED]`.

/// What a secret is replaced with.
pub const MASK: &str = "[REDACTED]";
const KEYS: &[&str] = &["password=", "passwd=", "secret=", "token=", "api_key="];

fn is_key_char(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn ends_value(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'&' | b';' | b',' | b'"' | b'\'')
}

/// `text` with secrets replaced, and how many were.
pub fn redact(text: &str) -> (String, usize) {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        // AKIA + 16 key characters, not part of a longer word.
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
            continue;
        }
        if let Some(key) = KEYS.iter().find(|k| lower.as_bytes()[i..].starts_with(k.as_bytes()))
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        {
            let start = i + key.len();
            let mut end = start;
            while end < bytes.len() && !ends_value(bytes[end]) {
                end += 1;
            }
            if end > start {
                out.push_str(&text[copied..start]);
                out.push_str(MASK);
                count += 1;
                i = end;
                copied = end;
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

    #[test]
    fn redacts_keys_and_passwords() {
        let (text, n) = redact("key AKIAABCDEFGHIJKLMNOP, url?user=a&password=hunter2&x=1 Secret=s3 tokens=ok");
        assert_eq!(text, "key [REDACTED], url?user=a&password=[REDACTED]&x=1 Secret=[REDACTED] tokens=ok");
        assert_eq!(n, 3);
        assert_eq!(redact("AKIA1234 short, XAKIAABCDEFGHIJKLMNOP").1, 0);
    }
}
