//! Loading and saving the task list through the guest SDK's `state`
//! interface (feature `guest`; only meaningful inside a component).
//!
//! Every task tool reads the whole list, changes it in memory and writes it
//! back. The four tools are concurrency-safe (as in AgentScope), so two
//! calls of one model turn may run in parallel; `docs/tools.md` (Tasks)
//! says what the host must do so that concurrent updates are not lost.

use toolhost_sdk::state;

use crate::{STATE_KEY, TaskError, Tasks};

/// Why the state could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The stored value is not a task list.
    Corrupt(TaskError),
    /// The host refused the write (typically: the `state` capability was not
    /// granted to this tool); the host's text names the reason.
    Refused(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Corrupt(e) => write!(f, "{e}"),
            Self::Refused(e) => write!(
                f,
                "the task list could not be saved in the agent state: {e}"
            ),
        }
    }
}

/// Reads the list (an absent key is an empty list).
///
/// Note: the host answers `get` with "nothing stored" both when the key is
/// absent and when the tool was not granted the state, so a read-only tool
/// cannot tell the two apart; only [`save`] reports a missing grant.
pub fn load() -> Result<Tasks, StoreError> {
    Tasks::from_state(state::get(STATE_KEY).as_deref()).map_err(StoreError::Corrupt)
}

/// Writes the list back.
pub fn save(tasks: &Tasks) -> Result<(), StoreError> {
    state::set(STATE_KEY, &tasks.to_state()).map_err(StoreError::Refused)
}
