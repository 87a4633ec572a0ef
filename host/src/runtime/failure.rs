//! Turning what went wrong inside a guest into an error a user can read.

use wasmtime::Trap;

/// Why a guest call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuestFailure {
    /// Ran past its wall-clock deadline.
    #[error(
        "the call exceeded its time limit of {limit_ms} ms and was stopped (raise limits.timeout_ms if it needs longer)"
    )]
    Timeout {
        /// The limit in force.
        limit_ms: u64,
    },
    /// Tried to grow memory beyond the cap.
    #[error(
        "the tool exceeded its memory limit of {limit_mib} MiB and was stopped (raise limits.max_memory_bytes if it needs more)"
    )]
    OutOfMemory {
        /// The limit in force, MiB.
        limit_mib: u64,
    },
    /// Recursed too deep.
    #[error("the tool overflowed its stack (unbounded recursion?) and was stopped")]
    StackOverflow,
    /// Panicked (Rust guests print the message to stderr first).
    #[error("the tool panicked: {message}")]
    Panic {
        /// The panic message, from the guest's stderr.
        message: String,
    },
    /// Any other trap.
    #[error("the tool crashed: {message}")]
    Trap {
        /// What wasmtime reported.
        message: String,
    },
}

impl GuestFailure {
    /// Classifies a wasmtime error from a guest call. `stderr_tail` is what
    /// the guest last wrote to stderr; `timed_out` says the host deadline
    /// has passed.
    pub fn classify(
        err: &wasmtime::Error,
        stderr_tail: &str,
        timed_out: bool,
        limit_ms: u64,
        memory_bytes: u64,
    ) -> Self {
        let text = format!("{err:?}");
        match err.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => return Self::Timeout { limit_ms },
            Some(Trap::StackOverflow) => return Self::StackOverflow,
            _ => {}
        }
        if timed_out {
            return Self::Timeout { limit_ms };
        }
        if text.contains("forcing a memory growth failure") || text.contains("forcing trap when growing memory") {
            return Self::OutOfMemory { limit_mib: memory_bytes >> 20 };
        }
        if stderr_tail.contains("memory allocation of") {
            return Self::OutOfMemory { limit_mib: memory_bytes >> 20 };
        }
        if let Some(at) = stderr_tail.find("panicked at") {
            return Self::Panic { message: stderr_tail[at..].trim().to_string() };
        }
        let first = format!("{err}");
        Self::Trap { message: if stderr_tail.is_empty() { first } else { format!("{first}: {stderr_tail}") } }
    }
}
