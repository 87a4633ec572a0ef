//! The streaming loop, over two small traits so it runs natively in tests.

use serde_json::{Value, json};

use crate::collect::Collector;
use crate::decode::{LineEndings, StreamDecoder};

/// A piece of process output (mirrors the WIT `output-piece`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Bytes written to standard output.
    Stdout(Vec<u8>),
    /// Bytes written to standard error.
    Stderr(Vec<u8>),
}

/// How a process ended (mirrors the WIT `exit-status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The exit code; -1 when killed by a signal or at the timeout.
    pub code: i32,
    /// The backend killed the process group at the timeout.
    pub timed_out: bool,
    /// The backend dropped output beyond its per-stream byte cap.
    pub truncated: bool,
}

/// A running process whose output is read piece by piece.
pub trait ProcessSource {
    /// The next piece, or `None` once both streams are closed.
    fn next_piece(&mut self) -> Option<Piece>;
    /// Waits for the end (discarding unread output).
    fn wait(&mut self) -> Status;
}

/// Where the call's output goes.
pub trait Sink {
    /// Sends intermediate text now; false once the caller takes no more.
    fn text(&mut self, text: &str) -> bool;
    /// Sends the last chunk: `text` (maybe empty), in state error or not,
    /// with the response metadata.
    fn finish(&mut self, text: &str, error: bool, metadata: &Value);
}

/// What the loop needs to know about the call.
#[derive(Clone, Debug)]
pub struct StreamOptions<'a> {
    /// The command as the user wrote it, quoted in status messages.
    pub command: &'a str,
    /// The timeout given to the backend, quoted in the timeout message.
    pub timeout_ms: u64,
    /// How line endings are normalised.
    pub endings: LineEndings,
    /// The output cap in characters (normally [`crate::MAX_OUTPUT_CHARS`]).
    pub limit: usize,
}

impl StreamOptions<'_> {
    /// The per-stream byte cap to ask the backend for: enough bytes for
    /// `limit` characters whatever their width (at most 4 bytes each), so
    /// the backend never cuts before the character limit does.
    pub fn max_output_bytes(&self) -> u64 {
        (self.limit as u64).saturating_mul(4).saturating_add(8)
    }
}

/// Streams a process's output into `sink` (see the crate docs) and ends
/// with the status chunk. Returns how the process ended.
pub fn stream(process: &mut impl ProcessSource, sink: &mut impl Sink, opts: &StreamOptions<'_>) -> Status {
    let mut stdout = StreamDecoder::new(opts.endings);
    let mut stderr = StreamDecoder::new(opts.endings);
    let mut kept = Collector::new(opts.limit);
    let mut open = true;
    while let Some(piece) = process.next_piece() {
        let text = match piece {
            Piece::Stdout(b) => stdout.push(&b),
            Piece::Stderr(b) => stderr.push(&b),
        };
        let pass = kept.accept(&text);
        if !pass.is_empty() {
            open = sink.text(&pass);
        }
        if kept.truncated() || !open {
            break;
        }
    }
    // After a cut the process still runs to its end (or timeout), as in the
    // reference, which collects everything before it answers.
    let status = process.wait();
    if open && !kept.truncated() {
        let mut tail = stdout.finish();
        tail.push_str(&stderr.finish());
        let pass = kept.accept(&tail);
        if !pass.is_empty() {
            sink.text(&pass);
        }
    }
    let metadata = metadata(&status, kept.truncated());
    match status_message(opts, &status) {
        Some(msg) => {
            let sep = if kept.needs_separator() { "\n" } else { "" };
            sink.finish(&format!("{sep}{msg}"), true, &metadata);
        }
        None => sink.finish("", false, &metadata),
    }
    status
}

/// The error line ending a failed call, or `None` for exit code 0.
pub fn status_message(opts: &StreamOptions<'_>, status: &Status) -> Option<String> {
    let command = opts.command;
    if status.timed_out {
        return Some(format!("Command timed out after {}ms: {command}", opts.timeout_ms));
    }
    match status.code {
        0 => None,
        -1 => Some(format!("Command failed with exit code -1 (killed by a signal): {command}")),
        code => Some(format!("Command failed with exit code {code}: {command}")),
    }
}

/// The response metadata of a call that ran.
pub fn metadata(status: &Status, truncated: bool) -> Value {
    json!({
        "exit_code": status.code,
        "timed_out": status.timed_out,
        "truncated": truncated || status.truncated,
    })
}
