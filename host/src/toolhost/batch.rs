//! Running a batch of calls as AgentScope's agent does (spec §11.6):
//! consecutive concurrency-safe calls run in parallel, every other call runs
//! alone, in order; results come back in call order. A call that stops for
//! external execution parks the batch: the calls after its run are not
//! started.
//!
//! A batch is streamed: at most [`BATCH_IN_FLIGHT`] calls of a parallel run
//! are in flight at once (the next starts as the earliest finishes), and each
//! result is handed over as soon as it and every result before it are ready,
//! so the memory a batch holds is bounded by the work in flight, not by the
//! length of the batch.

use std::sync::Arc;

use futures::StreamExt as _;
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

/// The most calls of one parallel run that are in flight at once. Above the
/// cores of any machine toolhost runs on, and well below the instance pool
/// (each call holds a decision or call instance, plus its middleware's).
pub const BATCH_IN_FLIGHT: usize = 64;

/// A maximal run of calls that execute together.
struct Run {
    concurrent: bool,
    calls: Vec<CallRequest>,
}

impl Toolhost {
    /// Runs `calls` in order, parallelising runs of concurrency-safe calls
    /// (unknown tools count as safe: they fail at once, as in AgentScope),
    /// and returns every result in call order. For a long batch prefer
    /// [`Toolhost::run_batch_each`], which does not hold the results.
    pub async fn run_batch(&self, calls: Vec<CallRequest>, answer: Answerer) -> Vec<BatchResult> {
        let mut results = Vec::with_capacity(calls.len());
        self.run_batch_each(calls, answer, |r| results.push(r)).await;
        results
    }

    /// Runs `calls` as [`Toolhost::run_batch`] does, handing each result to
    /// `each` in call order as soon as it is ready; at most
    /// [`BATCH_IN_FLIGHT`] calls run at once.
    pub async fn run_batch_each(&self, calls: Vec<CallRequest>, answer: Answerer, mut each: impl FnMut(BatchResult)) {
        let mut runs: Vec<Run> = Vec::new();
        for call in calls {
            // Looking the tool up loads it if need be; one that cannot be
            // loaded fails at once, like an unknown one.
            let concurrent = self.catalog().tool(&call.tool).await.map_or(true, |t| t.info.concurrency_safe);
            match runs.last_mut() {
                Some(run) if run.concurrent && concurrent => run.calls.push(call),
                _ => runs.push(Run { concurrent, calls: vec![call] }),
            }
        }
        let mut parked = false;
        for run in runs {
            if parked {
                run.calls.into_iter().for_each(|c| each(BatchResult::NotStarted { id: c.id }));
                continue;
            }
            if run.concurrent {
                // `buffered` keeps the order and starts the next call as soon
                // as one of the window finishes.
                let mut results = futures::stream::iter(run.calls.into_iter().map(|c| self.run_one(c, answer.clone())))
                    .buffered(BATCH_IN_FLIGHT);
                while let Some(result) = results.next().await {
                    parked |= matches!(result, BatchResult::External { .. });
                    each(result);
                }
            } else {
                let mut calls = run.calls.into_iter();
                for call in calls.by_ref() {
                    let result = self.run_one(call, answer.clone()).await;
                    parked = matches!(result, BatchResult::External { .. });
                    each(result);
                    if parked {
                        break;
                    }
                }
                calls.for_each(|c| each(BatchResult::NotStarted { id: c.id }));
            }
        }
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
