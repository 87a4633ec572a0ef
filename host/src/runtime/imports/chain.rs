//! The `chain` interface: how a middleware runs the inner layers of a call.
//!
//! Each `next-handler.run` starts the inner layers (the next middleware, or
//! finally the tool) as their own task with their own store; their chunks
//! arrive through a channel that `inner-call.next-chunk` drains.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::response::Chunk;
use crate::runtime::bindings::wit_types::ToolError;

/// Starts the layers inside a given position of a chain.
pub trait ChainRunner: Send + Sync {
    /// Runs the layers from `position` inward with `input`; chunks go to
    /// `output`, the outcome to the returned receiver.
    fn run(&self, position: usize, input: String, output: mpsc::Sender<Chunk>) -> oneshot::Receiver<Result<(), ToolError>>;
}

/// The handle a middleware gets: the chain and its own position in it.
pub struct NextHandler {
    /// The chain being run.
    pub runner: Arc<dyn ChainRunner>,
    /// The position of the layer this handler runs.
    pub position: usize,
}

/// One run of the inner layers.
pub struct InnerCall {
    /// Chunks from the inner layers.
    pub chunks: mpsc::Receiver<Chunk>,
    /// How the inner layers ended.
    pub outcome: Option<oneshot::Receiver<Result<(), ToolError>>>,
}
