//! The typed events of a call, as the library API streams them.

use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::permission::{Decision, Rule};
use crate::response::{Chunk, ToolResponse};

/// What a call produces, in order: chunks as they stream, at most one
/// permission request for the call's input (answered by the caller) plus
/// one for each rewritten input a middleware passes on that the engine asks
/// about, and then either a final response or an external-execution
/// request.
#[derive(Debug)]
pub enum CallEvent {
    /// Output as the tool produces it.
    Chunk(Chunk),
    /// The permission engine asks; answer through the request's methods.
    /// Dropping it unanswered denies the call.
    PermissionRequest(PermissionRequest),
    /// The tool is external: the caller carries the call out and completes
    /// it with [`crate::Toolhost::complete_external`]. The stream ends here.
    ExternalExecution(ExternalCall),
    /// The accumulated result. Always the last event, except after
    /// [`CallEvent::ExternalExecution`].
    Finished(ToolResponse),
    /// "Allow and remember" could not save a rule to the settings file. The
    /// call still runs (it was allowed) and the rule holds for the rest of
    /// this host's life, but a later toolhost will not know it: show the
    /// message, which names the rule, the file, the cause and how to add
    /// the rule by hand.
    RememberFailed {
        /// The rule that was not saved.
        rule: Rule,
        /// What went wrong and what to do.
        message: String,
    },
}

/// How the caller answers an ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// Run this call.
    AllowOnce,
    /// Run it and add these rules (usually the suggested ones) for later
    /// calls; with a settings file they are saved in it.
    AllowAndRemember(Vec<Rule>),
    /// Refuse it.
    Deny,
}

impl PermissionAnswer {
    /// How the audit log names it: `allow_once`, `allow_and_remember`, `deny`.
    pub fn as_str(&self) -> &'static str {
        match self {
            PermissionAnswer::AllowOnce => "allow_once",
            PermissionAnswer::AllowAndRemember(_) => "allow_and_remember",
            PermissionAnswer::Deny => "deny",
        }
    }
}

/// A permission prompt for one call.
#[derive(Debug)]
pub struct PermissionRequest {
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub tool: String,
    /// The call input.
    pub input: serde_json::Value,
    /// The engine's decision (behavior `ask`), with message, reason and
    /// suggested rules.
    pub decision: Decision,
    pub(crate) reply: oneshot::Sender<PermissionAnswer>,
}

impl PermissionRequest {
    /// Answers the prompt.
    pub fn answer(self, answer: PermissionAnswer) {
        let _ = self.reply.send(answer);
    }

    /// Allows this call only.
    pub fn allow(self) {
        self.answer(PermissionAnswer::AllowOnce)
    }

    /// Allows this call and remembers the suggested rules.
    pub fn allow_and_remember(self) {
        let rules = self.decision.suggested_rules.clone();
        self.answer(PermissionAnswer::AllowAndRemember(rules))
    }

    /// Denies the call.
    pub fn deny(self) {
        self.answer(PermissionAnswer::Deny)
    }
}

/// A call of an external tool, to be carried out by the caller.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ExternalCall {
    /// Always `REQUIRE_EXTERNAL_EXECUTION`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub tool: String,
    /// The validated input.
    pub input: serde_json::Value,
    /// The schema the result's metadata must satisfy, if the tool has one.
    pub result_metadata_schema: Option<serde_json::Value>,
}

/// The stream of one call's events.
pub struct CallStream {
    pub(crate) rx: mpsc::Receiver<CallEvent>,
    /// The call itself, until it is started.
    pub(crate) pending: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
    /// The call's task once [`CallStream::next`] started it: aborted when
    /// the stream is dropped, which drops the instance and kills its
    /// processes (how a front end cancels a call).
    pub(crate) running: Option<tokio::task::AbortHandle>,
}

impl Drop for CallStream {
    fn drop(&mut self) {
        if let Some(task) = &self.running {
            task.abort();
        }
    }
}

impl CallStream {
    /// The next event; `None` when the call is over. The first call starts
    /// the tool call as a task of its own.
    pub async fn next(&mut self) -> Option<CallEvent> {
        if let Some(run) = self.pending.take() {
            self.running = Some(tokio::spawn(run).abort_handle());
        }
        self.rx.recv().await
    }

    /// Drains the stream, answering any permission request with `answer`,
    /// and returns the final response (or the external call). The call runs
    /// in the caller's task.
    pub async fn finish(mut self, answer: PermissionAnswer) -> Outcome {
        let run = self.pending.take();
        let rx = std::mem::replace(&mut self.rx, mpsc::channel(1).1);
        let drain = Self::drain(rx, answer);
        match run {
            Some(run) => tokio::join!(run, drain).1,
            None => drain.await,
        }
    }

    async fn drain(mut rx: mpsc::Receiver<CallEvent>, answer: PermissionAnswer) -> Outcome {
        while let Some(event) = rx.recv().await {
            match event {
                CallEvent::Chunk(_) => {}
                CallEvent::RememberFailed { message, .. } => tracing::warn!("{message}"),
                CallEvent::PermissionRequest(req) => req.answer(answer.clone()),
                CallEvent::ExternalExecution(call) => return Outcome::External(call),
                CallEvent::Finished(response) => return Outcome::Response(response),
            }
        }
        Outcome::Response(ToolResponse::from_chunk(
            "",
            Chunk::text(
                "the call ended without a response (the host is shutting down?)",
                crate::response::ResultState::Error,
            ),
        ))
    }
}

/// How a drained call ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// A final response.
    Response(ToolResponse),
    /// An external call awaiting its result.
    External(ExternalCall),
}

impl Outcome {
    /// The response; an external call becomes an error response saying so.
    pub fn into_response(self) -> ToolResponse {
        match self {
            Outcome::Response(r) => r,
            Outcome::External(call) => ToolResponse::from_chunk(
                call.call_id.clone(),
                Chunk::text(
                    format!("{} requires external execution; complete it with complete_external", call.tool),
                    crate::response::ResultState::Error,
                ),
            ),
        }
    }
}
