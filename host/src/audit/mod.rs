//! The audit log: one JSON line per tool call, saying what was called, how
//! the permission engine decided and why, what the tool did to the outside
//! world and how it ended (`[audit]` in `toolhost.toml`, or `--audit FILE`).
//!
//! The façade fills a [`CallAudit`] as a call goes through the pipeline
//! (tool and hash, the decision, the user's answer) and, where the backend
//! imports are served, every file and process operation the tool made
//! ([`RecordingBackend`]: the host records what it did, never what the
//! guest says it did). When the call ends the record goes to an
//! [`AuditLog`]: a bounded queue to a writer thread that serialises,
//! redacts and writes it, so a slow disk never holds up a call. When the
//! queue is full the record is dropped and counted, and the count is
//! written to the log as a record of its own ([`Dropped`]).
//!
//! The log is one of toolhost's own files ([`crate::protected`]): no tool
//! may name it, read it or write it. Every string in a record is escaped
//! by the JSON encoder, so nothing a tool sends or outputs can end a line
//! early or forge a record.
//!
//! Inputs are redacted with the rules of the `redact` example middleware
//! (one piece of code, the `toolhost-redaction` crate).

mod backend;
pub(crate) mod record;
mod writer;

use std::sync::{Arc, Mutex};

pub use backend::RecordingBackend;
pub use record::{Caller, DecisionRecord, Dropped, HostOp, Record, Tampered};
pub use toolhost_core::audit::AuditSettings;
pub use writer::{AuditLog, AuditStats, redacted_input};

use crate::sync::MutexExt;

/// What one call's record gathers while the call runs. Filled by the
/// pipeline and the [`RecordingBackend`]; read once the call ends.
#[derive(Debug, Default)]
pub struct CallAudit {
    inner: Mutex<Gathered>,
}

/// The parts of a record known only during the call.
#[derive(Debug, Default)]
pub struct Gathered {
    /// The SHA-256 of the tool's component.
    pub plugin_sha256: Option<String>,
    /// The first decision of the call.
    pub decision: Option<DecisionRecord>,
    /// Decisions on inputs a middleware rewrote.
    pub redecisions: Vec<DecisionRecord>,
    /// The user's answer to an ask.
    pub answer: Option<String>,
    /// Host operations, in order.
    pub ops: Vec<HostOp>,
    /// Operations not kept once [`MAX_OPS`] were.
    pub ops_dropped: u64,
}

/// The most host operations one record keeps (a `Glob` of a large tree
/// lists many folders); the rest are counted.
pub const MAX_OPS: usize = 1000;

impl CallAudit {
    /// Notes the tool's component hash.
    pub fn tool(&self, sha256: &str) {
        self.inner.lock_unpoisoned().plugin_sha256 = Some(sha256.to_owned());
    }

    /// Notes a permission decision: the first one is the call's, later ones
    /// are re-decisions of rewritten inputs.
    pub fn decision(&self, decision: &crate::permission::Decision) {
        let record = DecisionRecord::from(decision);
        let mut inner = self.inner.lock_unpoisoned();
        if inner.decision.is_none() {
            inner.decision = Some(record);
        } else {
            inner.redecisions.push(record);
        }
    }

    /// Notes the user's answer to an ask (`allow_once`, `allow_and_remember`, `deny`).
    pub fn answer(&self, answer: &str) {
        self.inner.lock_unpoisoned().answer = Some(answer.to_owned());
    }

    /// Notes one host operation.
    pub fn op(&self, op: HostOp) {
        let mut inner = self.inner.lock_unpoisoned();
        if inner.ops.len() < MAX_OPS {
            inner.ops.push(op);
        } else {
            inner.ops_dropped += 1;
        }
    }

    /// Everything gathered, leaving this empty.
    pub fn take(&self) -> Gathered {
        std::mem::take(&mut *self.inner.lock_unpoisoned())
    }
}

tokio::task_local! {
    /// The audit of the call the current task is running, when the host
    /// keeps an audit log. The façade sets it around a call; the
    /// pipeline's steps note what they learn in it without threading it
    /// through every signature.
    static CURRENT: Arc<CallAudit>;
}

/// Runs `f` with `audit` as the current call's audit (a plain function, as
/// `telemetry::trace::scope` is, so the call's future holds `f` once).
pub fn scope<F: std::future::Future>(audit: Arc<CallAudit>, f: F) -> impl std::future::Future<Output = F::Output> {
    CURRENT.scope(audit, f)
}

/// The current call's audit, if the task runs an audited call.
pub fn current() -> Option<Arc<CallAudit>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Notes something in the current call's audit, if any.
pub fn note(f: impl FnOnce(&CallAudit)) {
    let _ = CURRENT.try_with(|a| f(a));
}
