//! The state service ([`States`]): which agent state a call uses. A call
//! names its session's state ([`crate::CallRequest::session`], which a
//! front end keeps with [`crate::state::SessionStates`] over a
//! [`crate::state::StateStore`], shared by replicas when the store is);
//! a call that names none uses the host's own.

use std::sync::Arc;

use crate::state::AgentState;

/// The agent states calls use. A [`crate::Toolhost`] holds one
/// ([`crate::Toolhost::states`]). A decision instance gets no state at all:
/// only `call` reads or writes one.
pub struct States {
    /// The host's own state, for calls without a session.
    host: Arc<AgentState>,
}

impl States {
    /// States whose host state is `host`.
    pub(super) fn new(host: Arc<AgentState>) -> Self {
        States { host }
    }

    /// The host's own agent state (used by calls without a session).
    pub fn host(&self) -> &Arc<AgentState> {
        &self.host
    }

    /// The state a call with `session` uses: the session's, else the
    /// host's own.
    pub fn for_call(&self, session: Option<Arc<AgentState>>) -> Arc<AgentState> {
        session.unwrap_or_else(|| self.host.clone())
    }

    /// [`States::for_call`] for a borrowed session.
    pub fn of<'a>(&'a self, session: Option<&'a AgentState>) -> &'a AgentState {
        session.unwrap_or(&self.host)
    }
}
