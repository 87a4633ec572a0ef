//! The `chain` interface, version-neutral: how a middleware runs the inner
//! layers of a call.
//!
//! Each `next-handler.run` re-validates the input against the tool's schema,
//! decides a rewritten input again with the permission engine, and starts the inner layers (the next middleware, or finally the tool) as
//! their own task with their own store; their chunks arrive through a
//! channel that `inner-call.next-chunk` drains as they come. The chain
//! itself (ordering, stores, failures) lives in [`crate::middleware`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{mpsc, oneshot};
use wasmtime::component::Resource;

use super::HostError;
use crate::response::Chunk;
use crate::runtime::CallState;
use crate::types::ToolError;

/// How the inner layers of a run ended, as a middleware sees it.
pub type InnerOutcome = Result<(), ToolError>;

/// Starts the layers inside one position of a chain.
#[async_trait::async_trait]
pub trait ChainRunner: Send + Sync {
    /// Validates `input` against the tool's schema, decides it again with
    /// the permission engine when it differs from the input the call was
    /// allowed with, then runs the inner layers with it as a task of their
    /// own; their chunks go to `output`, their outcome to the returned
    /// receiver. Invalid input is refused with [`ToolError::InvalidInput`]
    /// carrying the validation error, a refused one with
    /// [`ToolError::Denied`].
    async fn run(
        &self,
        input: String,
        output: mpsc::Sender<Chunk>,
    ) -> Result<oneshot::Receiver<InnerOutcome>, ToolError>;
}

/// The handle a middleware gets: the rest of the chain below it.
pub struct NextHandler {
    /// Starts the inner layers.
    pub runner: Arc<dyn ChainRunner>,
    /// Set while the middleware waits for its inner layers, so that a
    /// timeout then is blamed on the layer that was actually running.
    pub waiting: Arc<AtomicBool>,
}

/// One run of the inner layers.
pub struct InnerCall {
    /// Chunks from the inner layers.
    pub chunks: mpsc::Receiver<Chunk>,
    /// How the inner layers ended (taken once received).
    pub outcome: Option<oneshot::Receiver<InnerOutcome>>,
    /// The outcome once received, for repeated `outcome` calls.
    pub settled: Option<InnerOutcome>,
    /// Shared with the [`NextHandler`] that started the run.
    pub waiting: Arc<AtomicBool>,
}

impl InnerCall {
    /// The next chunk, marking the middleware as waiting meanwhile.
    pub async fn next(&mut self) -> Option<Chunk> {
        self.waiting.store(true, Ordering::Relaxed);
        let chunk = self.chunks.recv().await;
        self.waiting.store(false, Ordering::Relaxed);
        chunk
    }

    /// Drains any chunks left, then waits for the outcome.
    pub async fn outcome(&mut self) -> InnerOutcome {
        if let Some(done) = &self.settled {
            return done.clone();
        }
        while self.next().await.is_some() {}
        let outcome = match self.outcome.take() {
            Some(rx) => {
                self.waiting.store(true, Ordering::Relaxed);
                let got = rx.await;
                self.waiting.store(false, Ordering::Relaxed);
                got.unwrap_or_else(|_| {
                    Err(ToolError::Internal(
                        "the inner layers of the call ended without an outcome (they were stopped)".into(),
                    ))
                })
            }
            None => Err(ToolError::Internal("the inner layers of the call ended without an outcome".into())),
        };
        self.settled = Some(outcome.clone());
        outcome
    }
}

impl NextHandler {
    /// Starts a run of the inner layers (see [`ChainRunner::run`]).
    pub async fn start(&self, input: String) -> Result<InnerCall, ToolError> {
        let (tx, rx) = mpsc::channel(32);
        let outcome = self.runner.run(input, tx).await?;
        Ok(InnerCall { chunks: rx, outcome: Some(outcome), settled: None, waiting: self.waiting.clone() })
    }
}

/// Starts a run of the inner layers below `handler` with `input`.
pub(crate) async fn run(
    cx: &mut CallState,
    handler: &Resource<NextHandler>,
    input: String,
) -> Result<Resource<InnerCall>, HostError> {
    let handler = cx.table.get(handler)?;
    let runner = NextHandler { runner: handler.runner.clone(), waiting: handler.waiting.clone() };
    let call = runner.start(input).await?;
    Ok(cx.table.push(call)?)
}

/// The next chunk of an inner run; `None` once they are all read.
pub(crate) async fn next_chunk(cx: &mut CallState, call: &Resource<InnerCall>) -> wasmtime::Result<Option<Chunk>> {
    Ok(cx.table.get_mut(call)?.next().await)
}

/// How an inner run ended, once its chunks are drained.
pub(crate) async fn outcome(cx: &mut CallState, call: &Resource<InnerCall>) -> Result<(), HostError> {
    Ok(cx.table.get_mut(call)?.outcome().await?)
}

/// Drops a table entry of the chain (a handler, or an inner run: dropping
/// its receiver makes the inner layers' `emit` return false).
pub(crate) fn drop_entry<T: 'static>(cx: &mut CallState, entry: Resource<T>) -> wasmtime::Result<()> {
    cx.table.delete(entry)?;
    Ok(())
}
