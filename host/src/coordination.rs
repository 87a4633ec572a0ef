//! What the processes of one deployment must agree on besides agent state:
//! the single-use nonces of pending questions ([`NonceStore`]), the rules
//! remembered by "allow and remember" ([`RuleStore`]), who is serving
//! ([`ReplicaRegistry`]), what one process tells the others
//! ([`EventBus`]), small records with a lifetime ([`RecordStore`]) and
//! append-only logs of events per stream ([`EventLog`]). A sealed
//! request state (an MCP 2026-07-28 ask) proves only that a process of the
//! deployment made it; its nonce makes it answerable once, by whichever
//! process the answer reaches. [`MemoryNonces`] keeps them in this process;
//! a shared store (Redis) implements the same trait in a crate of its own.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::state::StateError;
use crate::sync::MutexExt;

mod event_log;
mod events;
mod records;
mod replicas;

pub use event_log::{EventLog, LoggedEvent, MAX_LOGGED_EVENTS, MemoryEventLog, START};
pub use events::{BusMessage, EventBus, MAX_MESSAGE_BYTES};
pub use records::{MemoryRecords, RecordStore};
pub use replicas::{MemoryReplicas, ReplicaRecord, ReplicaRegistry};

/// The most questions a store holds pending at once by default: past it a
/// new question is refused rather than memory growing without bound.
pub const MAX_PENDING_QUESTIONS: usize = 10_000;

/// Where the nonces of pending questions live.
#[async_trait::async_trait]
pub trait NonceStore: Send + Sync + std::fmt::Debug + 'static {
    /// Records a fresh `nonce`, valid for `ttl`. Refused
    /// ([`StateError::Refused`]) when too many questions are pending.
    async fn issue(&self, nonce: &str, ttl: Duration) -> Result<(), StateError>;

    /// Consumes `nonce`: `true` for exactly one caller, in every process
    /// sharing the store, and only before its time is up. A store that
    /// cannot answer is an error: the caller refuses the answer, never
    /// allows it.
    async fn consume(&self, nonce: &str) -> Result<bool, StateError>;
}

/// Nonces kept in this process's memory (one `serve` process).
#[derive(Debug)]
pub struct MemoryNonces {
    /// Nonce → when it expires.
    pending: Mutex<HashMap<String, Instant>>,
    max: usize,
}

impl MemoryNonces {
    /// A store holding at most `max` pending questions at once.
    pub fn with_capacity(max: usize) -> Self {
        Self { pending: Mutex::new(HashMap::new()), max }
    }
}

impl Default for MemoryNonces {
    /// At most [`MAX_PENDING_QUESTIONS`] pending questions.
    fn default() -> Self {
        Self::with_capacity(MAX_PENDING_QUESTIONS)
    }
}

/// The refusal of a question past the bound.
pub fn too_many_questions() -> StateError {
    StateError::Refused("too many questions are waiting for answers; answer or abandon some first".to_string())
}

#[async_trait::async_trait]
impl NonceStore for MemoryNonces {
    async fn issue(&self, nonce: &str, ttl: Duration) -> Result<(), StateError> {
        let mut pending = self.pending.lock_unpoisoned();
        let now = Instant::now();
        pending.retain(|_, expires| *expires > now);
        if pending.len() >= self.max {
            return Err(too_many_questions());
        }
        pending.insert(nonce.to_string(), now + ttl);
        Ok(())
    }

    async fn consume(&self, nonce: &str) -> Result<bool, StateError> {
        // Removed under the lock: only one caller gets the entry.
        Ok(self.pending.lock_unpoisoned().remove(nonce).is_some_and(|expires| expires > Instant::now()))
    }
}

/// One rule remembered by "allow and remember", as a shared store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RememberedRule {
    /// The rule as written (`Bash(git status:*)`).
    pub rule: String,
    /// What it does when it matches.
    pub behavior: crate::permission::Behavior,
    /// The process that remembered it (its replica id).
    pub by: String,
    /// When, UTC (RFC 3339).
    pub at: String,
}

/// Where the rules remembered by "allow and remember" live when every
/// process of a deployment must apply them: each decision reads the
/// store's version first (one read) and, when it moved, the rules, so a
/// rule remembered through one process holds on every other for its next
/// decision, and a rule forgotten stops holding there as soon. A process
/// that cannot read the store decides on the configured rules alone: it
/// may ask too often, never allow too much.
#[async_trait::async_trait]
pub trait RuleStore: Send + Sync + std::fmt::Debug + 'static {
    /// The version: it moves at every change.
    async fn rules_version(&self) -> Result<u64, StateError>;
    /// The version and every remembered rule, read together.
    async fn remembered_rules(&self) -> Result<(u64, Vec<RememberedRule>), StateError>;
    /// Remembers `rule` (replacing a record of the same rule).
    async fn remember_rule(&self, rule: RememberedRule) -> Result<(), StateError>;
    /// Forgets the rule written `rule`; whether there was one.
    async fn forget_rule(&self, rule: &str) -> Result<bool, StateError>;
}
