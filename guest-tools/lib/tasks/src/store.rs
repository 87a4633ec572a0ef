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
            Self::Refused(e) => write!(f, "the task list could not be saved in the agent state: {e}"),
        }
    }
}

/// How many times an update is redone when other calls keep changing the
/// list in between; far more than parallel calls in one turn can cause.
const MAX_ATTEMPTS: usize = 64;

fn read_raw() -> Result<Option<String>, StoreError> {
    state::get(STATE_KEY).map_err(StoreError::Refused)
}

/// Reads the list (an absent key is an empty list).
pub fn load() -> Result<Tasks, StoreError> {
    Tasks::from_state(read_raw()?.as_deref()).map_err(StoreError::Corrupt)
}

/// Applies `change` to the list atomically: reads it, applies the change,
/// and writes it back with compare-and-set, redoing the change on the fresh
/// list when a parallel call wrote first. A change that leaves the list as
/// it was writes nothing. `change` may run more than once.
pub fn update<R, E>(mut change: impl FnMut(&mut Tasks) -> Result<R, E>) -> Result<Result<R, E>, StoreError> {
    for _ in 0..MAX_ATTEMPTS {
        let raw = read_raw()?;
        let mut tasks = Tasks::from_state(raw.as_deref()).map_err(StoreError::Corrupt)?;
        let before = tasks.clone();
        let result = match change(&mut tasks) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        if tasks == before {
            return Ok(Ok(result));
        }
        match state::compare_and_set(STATE_KEY, raw.as_deref(), &tasks.to_state()) {
            Ok(true) => return Ok(Ok(result)),
            Ok(false) => continue,
            Err(e) => return Err(StoreError::Refused(e)),
        }
    }
    Err(StoreError::Refused(format!(
        "the task list kept changing under this call ({MAX_ATTEMPTS} attempts); try again"
    )))
}
