//! Running a batch of calls as AgentScope's agent does (spec §11.6):
//! consecutive concurrency-safe calls run in parallel, every other call runs
//! alone, in order; results come back in call order. A call that stops for
//! external execution parks the batch: the calls after its run are not
//! started.

use std::sync::Arc;

use futures::future::join_all;
use serde::Serialize;

use super::{CallRequest, Toolhost};
use crate::events::{CallEvent, ExternalCall, PermissionAnswer, PermissionRequest};
use crate::response::ToolResponse;

/// Answers permission prompts during a batch.
pub type Answerer = Arc<dyn Fn(&PermissionRequest) -> PermissionAnswer + Send + Sync>;

/// What became of one call of a batch.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BatchResult {
    /// It ran to a response.
    Finished {
        /// The call id.
        id: String,
        /// The response.
        response: ToolResponse,
    },
    /// It stopped for external execution.
    External {
        /// The call id.
        id: String,
        /// The event to carry out.
        call: ExternalCall,
    },
    /// An earlier call parked the batch, so this one did not start.
    NotStarted {
        /// The call id.
        id: String,
    },
}

/// A maximal run of calls that execute together.
struct Run {
    concurrent: bool,
    calls: Vec<CallRequest>,
}

impl Toolhost {
    /// Runs `calls` in order, parallelising runs of concurrency-safe calls
    /// (unknown tools count as safe: they fail at once, as in AgentScope).
    pub async fn run_batch(&self, calls: Vec<CallRequest>, answer: Answerer) -> Vec<BatchResult> {
        let mut runs: Vec<Run> = Vec::new();
        for call in calls {
            // Looking the tool up loads it if need be; one that cannot be
            // loaded fails at once, like an unknown one.
            let concurrent = self.tool(&call.tool).await.map_or(true, |t| t.info.concurrency_safe);
            match runs.last_mut() {
                Some(run) if run.concurrent && concurrent => run.calls.push(call),
                _ => runs.push(Run { concurrent, calls: vec![call] }),
            }
        }
        let mut results = Vec::new();
        let mut parked = false;
        for run in runs {
            if parked {
                results.extend(run.calls.into_iter().map(|c| BatchResult::NotStarted { id: c.id }));
                continue;
            }
            let outcomes = if run.concurrent {
                join_all(run.calls.into_iter().map(|c| self.run_one(c, answer.clone()))).await
            } else {
                let mut out = Vec::new();
                let mut calls = run.calls.into_iter();
                for call in calls.by_ref() {
                    let result = self.run_one(call, answer.clone()).await;
                    let stop = matches!(result, BatchResult::External { .. });
                    out.push(result);
                    if stop {
                        break;
                    }
                }
                out.extend(calls.map(|c| BatchResult::NotStarted { id: c.id }));
                out
            };
            parked = outcomes.iter().any(|r| matches!(r, BatchResult::External { .. }));
            results.extend(outcomes);
        }
        results
    }

    async fn run_one(&self, call: CallRequest, answer: Answerer) -> BatchResult {
        let id = call.id.clone();
        let mut stream = self.call(call);
        while let Some(event) = stream.next().await {
            match event {
                CallEvent::Chunk(_) => {}
                CallEvent::RememberFailed { message, .. } => tracing::warn!("{message}"),
                CallEvent::PermissionRequest(req) => {
                    let a = answer(&req);
                    req.answer(a);
                }
                CallEvent::ExternalExecution(call) => return BatchResult::External { id, call },
                CallEvent::Finished(response) => return BatchResult::Finished { id, response },
            }
        }
        BatchResult::NotStarted { id }
    }
}
