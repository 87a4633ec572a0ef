//! Incremental decoding of one output stream: UTF-8 with replacement and
//! line-ending normalisation, correct when a character or a `\r\n` pair is
//! split between two pieces.

/// How line endings are normalised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEndings {
    /// `\r\n` becomes `\n`; a lone `\r` is kept (Bash, spec §5.9 step 3).
    CrLf,
    /// `\r\n` and a lone `\r` both become `\n` (PowerShell, spec §5.10).
    All,
}

/// Decodes the pieces of one stream (stdout or stderr) as they arrive.
///
/// The text returned by the successive [`StreamDecoder::push`] calls and the
/// final [`StreamDecoder::finish`] equals decoding the concatenated bytes at
/// once with `String::from_utf8_lossy` and then normalising line endings.
#[derive(Debug)]
pub struct StreamDecoder {
    endings: LineEndings,
    /// An incomplete UTF-8 sequence at the end of the last piece.
    partial: Vec<u8>,
    /// The last character seen was `\r`. With [`LineEndings::CrLf`] it has
    /// not been emitted yet (it depends on the next character); with
    /// [`LineEndings::All`] it was emitted as `\n` and a following `\n` is
    /// swallowed.
    cr_pending: bool,
}

impl StreamDecoder {
    /// A decoder with nothing pending.
    pub fn new(endings: LineEndings) -> Self {
        Self { endings, partial: Vec::new(), cr_pending: false }
    }

    /// Decodes the next piece; returns the text that is final so far.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        let joined;
        let buf: &[u8] = if self.partial.is_empty() {
            bytes
        } else {
            let mut b = std::mem::take(&mut self.partial);
            b.extend_from_slice(bytes);
            joined = b;
            &joined
        };
        let text = self.decode_utf8(buf);
        self.normalise(&text)
    }

    /// Ends the stream: a held `\r` is emitted and an incomplete UTF-8
    /// sequence becomes U+FFFD, as `from_utf8_lossy` would.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if self.cr_pending && self.endings == LineEndings::CrLf {
            out.push('\r');
        }
        self.cr_pending = false;
        if !self.partial.is_empty() {
            self.partial.clear();
            out.push(char::REPLACEMENT_CHARACTER);
        }
        out
    }

    /// Lossy UTF-8 decoding that keeps an incomplete trailing sequence in
    /// `self.partial` instead of replacing it.
    fn decode_utf8(&mut self, mut rest: &[u8]) -> String {
        let mut text = String::with_capacity(rest.len());
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    text.push_str(s);
                    return text;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // `valid_up_to` guarantees this prefix is valid UTF-8.
                    text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[n..];
                        }
                        None => {
                            self.partial = after.to_vec();
                            return text;
                        }
                    }
                }
            }
        }
    }

    fn normalise(&mut self, text: &str) -> String {
        if !self.cr_pending && !text.contains('\r') {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len() + 1);
        for c in text.chars() {
            match self.endings {
                LineEndings::CrLf => {
                    if self.cr_pending {
                        self.cr_pending = false;
                        if c == '\n' {
                            out.push('\n');
                            continue;
                        }
                        out.push('\r');
                    }
                    if c == '\r' {
                        self.cr_pending = true;
                    } else {
                        out.push(c);
                    }
                }
                LineEndings::All => {
                    let after_cr = std::mem::replace(&mut self.cr_pending, c == '\r');
                    match c {
                        '\n' if after_cr => {}
                        '\r' => out.push('\n'),
                        _ => out.push(c),
                    }
                }
            }
        }
        out
    }
}
