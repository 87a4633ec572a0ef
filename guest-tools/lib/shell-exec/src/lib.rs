//! Running a shell command for toolhost's shell tools (Bash, PowerShell) and
//! streaming its output to the caller.
//!
//! The reference (`shared/spec/agentscope-tools.md` §5.9) collects the whole
//! output and returns one chunk. toolhost streams instead: every piece of
//! stdout or stderr becomes a text chunk the moment the backend delivers it,
//! in arrival order, while the reference's formatting rules still hold for
//! the text as a whole:
//!
//! * bytes are decoded as UTF-8 with replacement (a character split across
//!   two pieces is decoded whole, see [`decode::StreamDecoder`]);
//! * `\r\n` becomes `\n` (PowerShell: lone `\r` too, [`LineEndings`]);
//! * past 30,000 characters the output stops with `\n... (output truncated)`
//!   ([`collect::Collector`]);
//! * a timeout or a non-zero exit ends the response with an error chunk, and
//!   the final chunk carries `{"exit_code", "timed_out", "truncated"}`
//!   ([`stream::finish`]).
//!
//! The logic lives in plain functions over two small traits
//! ([`stream::ProcessSource`], [`stream::Sink`]) so it is unit-tested
//! natively; [`run`] binds them to the SDK's `backend::process` and
//! [`toolhost_sdk::Output`].

#![warn(missing_docs)]

pub mod collect;
pub mod decode;
mod run;
pub mod stream;

pub use decode::LineEndings;
pub use run::{describe_error, run};
pub use stream::{Piece, Status, StreamOptions};

/// The reference's output cap, in characters (§5.9 step 5).
pub const MAX_OUTPUT_CHARS: usize = 30_000;

/// Appended when the output is cut at [`MAX_OUTPUT_CHARS`].
pub const TRUNCATION_NOTE: &str = "\n... (output truncated)";

/// The default timeout of a shell command, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// The largest timeout a call may ask for, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// Checks a `timeout` input value (milliseconds): absent means
/// [`DEFAULT_TIMEOUT_MS`]; it must be a whole number in
/// `0..=`[`MAX_TIMEOUT_MS`]. The host's schema validation already refuses
/// other values; this guard keeps the tool safe on its own.
pub fn timeout_ms(value: Option<&serde_json::Number>) -> Result<u64, String> {
    let Some(n) = value else {
        return Ok(DEFAULT_TIMEOUT_MS);
    };
    let ms = n.as_u64().or_else(|| {
        n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= MAX_TIMEOUT_MS as f64).map(|f| f as u64)
    });
    match ms {
        Some(ms) if ms <= MAX_TIMEOUT_MS => Ok(ms),
        _ => Err(format!(
            "`timeout` must be a whole number of milliseconds from 0 to {MAX_TIMEOUT_MS} (got {n}); omit it for the default of {DEFAULT_TIMEOUT_MS}"
        )),
    }
}

#[cfg(test)]
mod tests;
