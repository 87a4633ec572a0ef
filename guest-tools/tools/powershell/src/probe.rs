//! Finding a PowerShell executable on the backend: `pwsh`, then
//! `powershell.exe` (spec §5.10). The reference caches the answer; a
//! toolhost tool instance lives for one call, so every call probes again
//! (one extra short process start).

use toolhost_sdk::backend::{self, ExecRequest};
use toolhost_sdk::{ToolError, log};

/// The executables tried, in order.
pub const CANDIDATES: [&str; 2] = ["pwsh", "powershell.exe"];

/// How long a probe may take, in milliseconds.
pub const PROBE_TIMEOUT_MS: u64 = 10_000;

/// What one probe says.
#[derive(Debug)]
pub enum Verdict {
    /// The executable starts: use it.
    Use,
    /// It is missing (not found, or exit code 127): try the next.
    Next,
    /// Running processes is not allowed at all: give up with this error.
    Fail(ToolError),
}

/// Judges one probe: the exit code of the probe process, or the error
/// `spawn` returned. A probe that starts but fails otherwise (even a timeout)
/// still shows the executable exists, as in the reference, which only
/// rejects exit code 127.
pub fn verdict(result: Result<i32, ToolError>) -> Verdict {
    match result {
        Ok(127) => Verdict::Next,
        Ok(_) => Verdict::Use,
        Err(ToolError::Denied(m)) => Verdict::Fail(ToolError::Denied(m)),
        Err(_) => Verdict::Next,
    }
}

/// The first candidate that works, `None` when neither does.
pub fn find() -> Result<Option<&'static str>, ToolError> {
    for exe in CANDIDATES {
        let request = ExecRequest {
            argv: crate::encode::probe_argv(exe),
            cwd: None,
            env: Vec::new(),
            timeout_ms: PROBE_TIMEOUT_MS,
            max_output_bytes: 4096,
        };
        let result = backend::spawn(&request).map(|p| p.wait().code);
        if let Err(e) = &result {
            log::debug(&format!("PowerShell probe of {exe}: {}", shell_exec::describe_error(e)));
        }
        match verdict(result) {
            Verdict::Use => return Ok(Some(exe)),
            Verdict::Next => {}
            Verdict::Fail(e) => return Err(e),
        }
    }
    Ok(None)
}
