//! Binding of the streaming loop to the SDK: `backend::spawn` and [`Output`].

use toolhost_sdk::backend::{self, ExecRequest, OutputPiece, Process};
use toolhost_sdk::{Output, ResultState, ToolError, text_chunk};

use crate::stream::{Piece, ProcessSource, Sink, Status, StreamOptions, stream};

struct Backend(Process);

impl ProcessSource for Backend {
    fn next_piece(&mut self) -> Option<Piece> {
        self.0.next_output().map(|p| match p {
            OutputPiece::Stdout(b) => Piece::Stdout(b),
            OutputPiece::Stderr(b) => Piece::Stderr(b),
        })
    }

    fn wait(&mut self) -> Status {
        let s = self.0.wait();
        Status { code: s.code, timed_out: s.timed_out, truncated: s.truncated }
    }
}

struct Chunks<'a>(&'a mut Output);

impl Sink for Chunks<'_> {
    fn text(&mut self, text: &str) -> bool {
        self.0.text(text)
    }

    fn finish(&mut self, text: &str, error: bool, metadata: &serde_json::Value) {
        let state = if error { ResultState::Error } else { ResultState::Running };
        self.0.emit(text_chunk(text, state, Some(metadata)));
    }
}

/// Runs `argv` on the backend (in the backend's working directory, with the
/// timeout of `opts`) and streams its output to `out`.
///
/// A refused `process-exec` capability is returned as
/// [`ToolError::Denied`]; any other failure to start (the program missing,
/// the working directory gone) is reported to the model as an error chunk
/// `Command failed: {command}\nError: {cause}`, as the reference does.
pub fn run(argv: Vec<String>, opts: &StreamOptions<'_>, out: &mut Output) -> Result<(), ToolError> {
    let request = ExecRequest {
        argv,
        cwd: None,
        env: Vec::new(),
        timeout_ms: opts.timeout_ms,
        max_output_bytes: opts.max_output_bytes(),
    };
    match backend::spawn(&request) {
        Ok(process) => {
            stream(&mut Backend(process), &mut Chunks(out), opts);
            Ok(())
        }
        Err(ToolError::Denied(m)) => Err(ToolError::Denied(m)),
        Err(e) => {
            out.emit(text_chunk(
                &format!("Command failed: {}\nError: {}", opts.command, describe_error(&e)),
                ResultState::Error,
                None,
            ));
            Ok(())
        }
    }
}

/// A one-line description of a backend error, naming its kind.
pub fn describe_error(e: &ToolError) -> String {
    match e {
        ToolError::InvalidInput(m) => format!("invalid input: {m}"),
        ToolError::Denied(m) => format!("denied: {m}"),
        ToolError::NotFound(m) => format!("not found: {m}"),
        ToolError::Timeout(m) => format!("timed out: {m}"),
        ToolError::Io(m) => format!("I/O error: {m}"),
        ToolError::Unsupported(m) => format!("unsupported: {m}"),
        ToolError::Internal(m) => format!("internal error: {m}"),
    }
}
