//! What can go wrong in a chain, and whom to blame: the tool, a
//! middleware (by name), or an attachment naming a middleware that is not
//! loaded.

use crate::runtime::failure::GuestFailure;
use crate::runtime::imports::chain::InnerOutcome;
use crate::types::ToolError;

/// Why a middleware failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MiddlewareFault {
    /// The component trapped, panicked, ran out of memory or time.
    Guest(GuestFailure),
    /// It emitted more than the output cap allows.
    Flood {
        /// The cap in force, bytes.
        limit_bytes: u64,
    },
    /// It could not be instantiated.
    Instantiate(String),
}

/// Why a call failed outside the tool's own error handling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallFailure {
    /// The tool trapped, panicked, ran out of memory or time.
    #[error(transparent)]
    Tool(#[from] GuestFailure),
    /// A middleware failed.
    #[error("{}", fault_text(name, fault))]
    Middleware {
        /// The middleware's name.
        name: String,
        /// What went wrong.
        fault: MiddlewareFault,
    },
    /// An attached middleware is not loaded.
    #[error(
        "middleware '{name}' is attached to '{tool}' but not loaded; load it (--middleware FILE or [middleware].files) or remove it from the attachment (--attach or [middleware.attach])"
    )]
    NotLoaded {
        /// The missing middleware.
        name: String,
        /// The tool it is attached to.
        tool: String,
    },
}

fn fault_text(name: &str, fault: &MiddlewareFault) -> String {
    let fix = "fix the middleware or detach it";
    match fault {
        MiddlewareFault::Guest(GuestFailure::Timeout { limit_ms }) => format!(
            "middleware '{name}' did not finish within the call's time limit of {limit_ms} ms and was stopped (raise limits.timeout_ms, or {fix})"
        ),
        MiddlewareFault::Guest(GuestFailure::OutOfMemory { limit_mib }) => format!(
            "middleware '{name}' exceeded its memory limit of {limit_mib} MiB and was stopped (raise limits.max_memory_bytes, or {fix})"
        ),
        MiddlewareFault::Guest(GuestFailure::StackOverflow) => {
            format!(
                "stack overflow: middleware '{name}' overflowed its stack (unbounded recursion, or very large local variables?) and was stopped; {fix}"
            )
        }
        MiddlewareFault::Guest(GuestFailure::Panic { message }) => format!("middleware '{name}' panicked: {message}"),
        MiddlewareFault::Guest(GuestFailure::Trap { message }) => format!("middleware '{name}' crashed: {message}"),
        MiddlewareFault::Flood { limit_bytes } => format!(
            "middleware '{name}' exceeded the output limit of {limit_bytes} bytes and was stopped (raise limits.max_output_bytes, or {fix})"
        ),
        MiddlewareFault::Instantiate(e) => format!("middleware '{name}' could not be started: {e}"),
    }
}

impl CallFailure {
    /// Whether the call's time ran out in the layer that failed.
    pub(super) fn is_timeout(&self) -> bool {
        matches!(
            self,
            CallFailure::Tool(GuestFailure::Timeout { .. })
                | CallFailure::Middleware { fault: MiddlewareFault::Guest(GuestFailure::Timeout { .. }), .. }
        )
    }

    /// The error an outer middleware sees from `inner-call.outcome` when
    /// the inner layers failed this way.
    pub(super) fn as_tool_error(&self) -> ToolError {
        match self {
            CallFailure::Tool(GuestFailure::Timeout { .. }) => ToolError::Timeout(self.to_string()),
            other => ToolError::Internal(other.to_string()),
        }
    }
}

/// A failure of one layer, and whether that layer was only waiting for its
/// inner layers when it happened (then the blame lies further in).
pub(super) struct LayerFailure {
    pub(super) failure: CallFailure,
    pub(super) waiting: bool,
}

pub(super) type LayerResult = Result<InnerOutcome, LayerFailure>;
