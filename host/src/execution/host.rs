//! What the execution layer asks of the host that runs it, and the shapes
//! of a permission decision made in the middle of a call. The call
//! pipeline ([`crate::Toolhost::pipeline`]) implements [`ExecutionHost`];
//! the middleware chain holds it as a trait object, so execution never
//! names the façade.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::callable::CallableTool;
use super::loaded::LoadedTool;
use crate::backend::Backend;
use crate::capability::{Grants, Phase};
use crate::events::CallEvent;
use crate::permission::{Decision, Mode};
use crate::response::Chunk;
use crate::runtime::Runtime;
use crate::state::AgentState;

/// The host's side of a running call.
pub(crate) trait ExecutionHost: Send + Sync + 'static {
    /// The runtime (engine, linkers, pooling).
    fn runtime(&self) -> &Runtime;
    /// The active backend.
    fn backend(&self) -> Arc<dyn Backend>;
    /// What `[grants.NAME]` gives the middleware `name` (nothing by
    /// default), shaped for `phase`.
    fn middleware_grants(&self, name: &str, phase: Phase) -> Arc<Grants>;
    /// The middleware's own settings (`[middleware.NAME]`) as JSON text.
    fn middleware_config(&self, name: &str) -> String;
    /// A fresh instance of `tool` for `phase`, its output going to `output`.
    fn instantiate<'a>(
        &'a self,
        tool: &'a LoadedTool,
        session: Option<Arc<AgentState>>,
        output: mpsc::Sender<Chunk>,
        phase: Phase,
    ) -> BoxFuture<'a, anyhow::Result<CallableTool>>;
    /// The permission step for `input` on `instance`, asking the caller
    /// through `permit` when the engine says ask.
    fn decide<'a>(
        &'a self,
        instance: &'a mut CallableTool,
        permit: &'a Permit,
        input: &'a serde_json::Value,
        input_text: &'a str,
    ) -> BoxFuture<'a, Verdict>;
}

/// What a call's permission step needs to decide (and ask) again later in
/// the call: a middleware's rewritten input is decided like the original.
#[derive(Clone)]
pub(crate) struct Permit {
    /// The call id, for the ask.
    pub(crate) call_id: String,
    /// The call's mode.
    pub(crate) mode: Mode,
    /// Where an ask goes (the call's event stream).
    pub(crate) events: mpsc::Sender<CallEvent>,
}

/// The outcome of a permission step.
pub(crate) enum Verdict {
    /// Run it, with the grants of this phase.
    Allow(Phase),
    /// Refused by the engine (the decision says why).
    Deny(Box<Decision>),
    /// The caller answered an ask with a denial (or could not be asked);
    /// the engine's message of the ask.
    UserDenied(String),
    /// The caller went away before answering an ask.
    Gone,
}
