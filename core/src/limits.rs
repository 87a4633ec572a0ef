//! The budget of one call (`[limits]`): plain numbers, enforced by the
//! host's runtime.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The budget of one call. Security-relevant defaults: 120 s wall clock,
/// 256 MiB of linear memory, 8 MiB of output, processes at most 600 s,
/// agent-state values at most 1 MiB, the whole agent state at most 64 MiB
/// in 10 000 keys, 1 MiB of log lines, plugin and middleware files of at
/// most 256 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock deadline of a call, in milliseconds.
    pub timeout_ms: u64,
    /// Linear-memory cap per instance, in bytes.
    pub max_memory_bytes: u64,
    /// Output cap per call, in bytes: text and data blocks plus each
    /// chunk's metadata as JSON.
    pub max_output_bytes: u64,
    /// The longest a tool may ask a process to run, in milliseconds. A call
    /// that starts a process gets its deadline extended to cover it.
    pub max_process_timeout_ms: u64,
    /// The largest value a tool may store in the agent state with `set` or
    /// `compare-and-set`, in bytes of key plus JSON text.
    pub max_state_value_bytes: u64,
    /// The largest the agent state's values may grow in all, in bytes of
    /// keys plus JSON text (a session file holds about this much).
    pub max_state_bytes: u64,
    /// The most keys the agent state may hold.
    pub max_state_keys: u64,
    /// Log output per instance (tool or middleware), in bytes of message
    /// text: lines past it are dropped, and one final line says how many
    /// bytes were.
    pub max_log_bytes: u64,
    /// The largest plugin or middleware component file toolhost reads, in
    /// bytes: checked on the opened file before a byte is read, so a huge
    /// (or sparse) file cannot take the host's memory. The largest real
    /// components (a Python or JavaScript runtime inside) are 12–40 MB.
    pub max_component_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout_ms: 120_000,
            max_memory_bytes: 256 << 20,
            max_output_bytes: 8 << 20,
            max_process_timeout_ms: 600_000,
            max_state_value_bytes: 1 << 20,
            max_state_bytes: 64 << 20,
            max_state_keys: 10_000,
            max_log_bytes: 1 << 20,
            max_component_bytes: 256 << 20,
        }
    }
}

impl Limits {
    /// The call deadline as a duration.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The bound a component file is read under.
    pub fn component_bound(&self) -> crate::own_file::Bound<'static> {
        crate::own_file::Bound { max: self.max_component_bytes, name: "[limits] max_component_bytes" }
    }
}
