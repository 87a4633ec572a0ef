//! The output cap: what of the decoded text is passed on, and when the
//! truncation note is added.

use crate::TRUNCATION_NOTE;

/// Counts the characters passed on and cuts the output at a limit.
///
/// Matches the reference's rule (§5.9 step 5) on the whole output: at most
/// `limit` characters (Unicode scalar values, as Python's `len`) are kept,
/// and [`TRUNCATION_NOTE`] is appended only when something was cut.
#[derive(Debug)]
pub struct Collector {
    limit: usize,
    chars: usize,
    truncated: bool,
    last: Option<char>,
}

impl Collector {
    /// A collector keeping at most `limit` characters.
    pub fn new(limit: usize) -> Self {
        Self { limit, chars: 0, truncated: false, last: None }
    }

    /// The part of `text` to pass on: all of it while under the limit; at
    /// the crossing, the characters up to the limit followed by the note;
    /// afterwards, nothing.
    pub fn accept(&mut self, text: &str) -> String {
        if self.truncated || text.is_empty() {
            return String::new();
        }
        let room = self.limit - self.chars;
        let cut = text.char_indices().nth(room).map(|(i, _)| i);
        let out = match cut {
            None => {
                self.chars += text.chars().count();
                text.to_string()
            }
            Some(i) => {
                self.chars = self.limit;
                self.truncated = true;
                format!("{}{TRUNCATION_NOTE}", &text[..i])
            }
        };
        if let Some(c) = out.chars().next_back() {
            self.last = Some(c);
        }
        out
    }

    /// Whether the output was cut.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Whether a status line added now needs a newline before it (some
    /// output was passed on and it does not end with one).
    pub fn needs_separator(&self) -> bool {
        self.last.is_some_and(|c| c != '\n')
    }
}
