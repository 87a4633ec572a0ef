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
    /// Recursed too deep, or ran out of its shadow stack (the part of
    /// linear memory where large local variables live).
    #[error(
        "stack overflow: the tool overflowed its stack (unbounded recursion, or very large local variables?) and was stopped"
    )]
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
    pub(crate) fn classify(
        err: &wasmtime::Error,
        stderr_tail: &str,
        timed_out: bool,
        limit_ms: u64,
        memory_bytes: u64,
    ) -> Self {
        let text = format!("{err:?}");
        tracing::debug!("guest trap: {text}");
        match err.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => return Self::Timeout { limit_ms },
            Some(Trap::StackOverflow) => return Self::StackOverflow,
            Some(Trap::MemoryOutOfBounds) if shadow_stack_overflow(err) => return Self::StackOverflow,
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
        let cause = cause_text(err);
        Self::Trap { message: if stderr_tail.is_empty() { cause } else { format!("{cause}: {stderr_tail}") } }
    }
}

/// What a trap says about its cause: every message of its chain (a host
/// import's error that trapped the guest, a canonical ABI check such as an
/// unknown handle or a string that is not UTF-8, the trap code) without the
/// wasm backtrace wasmtime puts first, which names no cause.
fn cause_text(err: &wasmtime::Error) -> String {
    let parts: Vec<String> = err
        .chain()
        .map(|e| e.to_string())
        .filter(|m| !m.starts_with("error while executing at wasm backtrace"))
        .collect();
    if parts.is_empty() { format!("{err}") } else { parts.join(": ") }
}

/// Whether an out-of-bounds access is the shadow stack running out. Rust
/// (like C) keeps large locals on a stack in linear memory that grows down
/// towards address 0; one frame too many moves the stack pointer below 0
/// and the next access traps as out of bounds, not as a stack overflow.
/// Such a trap deep inside a recursion (the trapping function at least
/// [`RECURSION_FRAMES`] times on the guest's call stack) is reported as the
/// stack overflow it is; any other wild access stays a crash.
fn shadow_stack_overflow(err: &wasmtime::Error) -> bool {
    let Some(trace) = err.downcast_ref::<wasmtime::WasmBacktrace>() else {
        return false;
    };
    let frames = trace.frames();
    let Some(top) = frames.first() else {
        return false;
    };
    frames.iter().filter(|f| f.func_index() == top.func_index()).count() >= RECURSION_FRAMES
}

/// How often the trapping function must be on the stack for an
/// out-of-bounds trap to count as a shadow-stack overflow (1 MiB of shadow
/// stack runs out after 16 frames of 64 KiB).
const RECURSION_FRAMES: usize = 8;
