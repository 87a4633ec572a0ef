//! [`CallState`]: what one store (one instance, one call) carries.

use crate::sync::MutexExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::{EPOCH_TICK, Limits, Runtime};
use crate::backend::Backend;
use crate::capability::Grants;
use crate::response::{BLOCK_COST, CHUNK_COST, Chunk, ContentBlock, json_len};
use crate::state::AgentState;

/// How much of a guest's stderr is kept (panic messages end up there).
const STDERR_CAPACITY: usize = 16 * 1024;

/// A wall-clock deadline shared by a call's guest code (epoch callback) and
/// its host imports (the timer around the call). Starting a long process
/// may extend it, up to the configured maximum.
#[derive(Debug, Clone)]
pub struct Deadline {
    until: Arc<Mutex<Instant>>,
    max_extension: Duration,
}

impl Deadline {
    /// A deadline `timeout` from now that may be extended to cover processes
    /// of at most `max_process`.
    pub fn new(timeout: Duration, max_process: Duration) -> Self {
        Self { until: Arc::new(Mutex::new(Instant::now() + timeout)), max_extension: max_process }
    }

    /// The deadline of a call under `limits`.
    pub fn for_limits(limits: &Limits) -> Self {
        Self::new(limits.timeout(), Duration::from_millis(limits.max_process_timeout_ms))
    }

    /// When the call must end.
    pub fn until(&self) -> Instant {
        *self.until.lock_unpoisoned()
    }

    /// Time left (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.until().saturating_duration_since(Instant::now())
    }

    /// Moves the deadline `by` later (time the call spent waiting for a
    /// person's answer does not count against it).
    pub fn postpone(&self, by: Duration) {
        let mut until = self.until.lock_unpoisoned();
        *until += by;
    }

    /// Makes sure at least `needed` (capped at the maximum process time)
    /// plus a grace period remains.
    pub fn extend_for(&self, needed: Duration) {
        let wanted = Instant::now() + needed.min(self.max_extension) + Duration::from_secs(5);
        let mut until = self.until.lock_unpoisoned();
        if wanted > *until {
            *until = wanted;
        }
    }
}

/// Where a call's chunks go, with the output cap applied.
pub struct OutputSink {
    tx: mpsc::Sender<Chunk>,
    used: u64,
    cap: u64,
    truncated: bool,
}

impl OutputSink {
    /// A sink sending to `tx`, allowing `cap` bytes of content.
    pub fn new(tx: mpsc::Sender<Chunk>, cap: u64) -> Self {
        Self { tx, used: 0, cap, truncated: false }
    }

    /// Whether the cap cut the output.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Bytes left before the cap.
    pub fn room(&self) -> u64 {
        self.cap.saturating_sub(self.used)
    }

    /// Sends a chunk, cutting it at the cap (and noting the cut once).
    /// Everything counts: [`CHUNK_COST`] per chunk, each block's
    /// [`ContentBlock::weight`] (what it carries, names and media types
    /// included, plus [`BLOCK_COST`]), then the chunk's metadata as
    /// serialized JSON (metadata that does not fit is dropped whole). Returns false once the cap is reached or the
    /// receiver is gone.
    pub async fn emit(&mut self, chunk: Chunk) -> bool {
        if self.truncated {
            return false;
        }
        let metadata = metadata_weight(&chunk.metadata);
        self.emit_weighed(chunk, metadata).await
    }

    /// [`OutputSink::emit`] with the metadata's weight already known (a
    /// guest's metadata text too large to be worth parsing is weighed by
    /// its length and dropped before it reaches here).
    pub(crate) async fn emit_weighed(&mut self, mut chunk: Chunk, metadata: u64) -> bool {
        if self.truncated {
            return false;
        }
        let mut kept = Vec::new();
        if CHUNK_COST <= self.room() {
            self.used += CHUNK_COST;
        } else {
            self.truncated = true;
            chunk.content.clear();
        }
        for block in chunk.content.drain(..) {
            let room = self.room();
            let weight = block.weight() as u64;
            if weight <= room {
                self.used += weight;
                kept.push(block);
                continue;
            }
            if let ContentBlock::Text { text } = block {
                let room = room.saturating_sub(BLOCK_COST as u64);
                let mut end = usize::try_from(room).unwrap_or(usize::MAX).min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                kept.push(ContentBlock::text(&text[..end]));
            }
            self.truncated = true;
            break;
        }
        if !self.truncated {
            if metadata <= self.room() {
                self.used += metadata;
            } else {
                self.truncated = true;
            }
        }
        if self.truncated {
            chunk.metadata.clear();
            kept.push(ContentBlock::text(format!(
                "\n... (output truncated: the call exceeded its output limit of {} bytes; raise limits.max_output_bytes to see more)",
                self.cap
            )));
        }
        chunk.content = kept;
        let sent = self.tx.send(chunk).await.is_ok();
        sent && !self.truncated
    }
}

/// How much log text an instance may still write (`limits.max_log_bytes`).
#[derive(Debug)]
pub struct LogBudget {
    left: u64,
    dropped: u64,
}

impl LogBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> Self {
        Self { left: bytes, dropped: 0 }
    }

    /// Whether a line of `len` bytes may be logged; counts it either way.
    pub fn admit(&mut self, len: usize) -> bool {
        let len = len as u64;
        if self.dropped == 0 && len <= self.left {
            self.left -= len;
            return true;
        }
        self.dropped = self.dropped.saturating_add(len);
        false
    }

    /// Bytes of log lines dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// The bytes a chunk's metadata counts against the output cap: its length
/// as JSON text (nothing when empty), counted without building the text.
pub fn metadata_weight(metadata: &serde_json::Map<String, serde_json::Value>) -> u64 {
    if metadata.is_empty() { 0 } else { json_len(metadata) }
}

/// The data of one store: WASI context, resource table, limits, grants,
/// backend, agent state and output of one call.
pub struct CallState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: StoreLimits,
    pub(crate) tool: Arc<str>,
    pub(crate) grants: Arc<Grants>,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) agent_state: Option<Arc<AgentState>>,
    pub(crate) sink: OutputSink,
    pub(crate) stderr: MemoryOutputPipe,
    pub(crate) deadline: Deadline,
    pub(crate) call_limits: Limits,
    /// For middleware stores: how to run the inner layers.
    pub(crate) chain: Option<Arc<dyn crate::runtime::imports::chain::ChainRunner>>,
    /// What is left of the instance's log output.
    pub(crate) log_budget: LogBudget,
}

impl Drop for CallState {
    /// Says, once, how much log output the budget dropped.
    fn drop(&mut self) {
        let dropped = self.log_budget.dropped();
        if dropped > 0 {
            let tool = &*self.tool;
            let limit = self.call_limits.max_log_bytes;
            tracing::warn!(
                tool,
                "{dropped} log bytes dropped (the instance exceeded its log limit of {limit} bytes; raise limits.max_log_bytes to keep more)"
            );
        }
    }
}

/// Everything needed to build a [`CallState`].
pub struct CallSetup {
    /// The tool (or middleware) name, for logs and errors.
    pub tool: Arc<str>,
    /// Linked capabilities.
    pub grants: Arc<Grants>,
    /// The active backend.
    pub backend: Arc<dyn Backend>,
    /// The agent state, if the tool may use it.
    pub agent_state: Option<Arc<AgentState>>,
    /// The call's budget.
    pub limits: Limits,
    /// The call's deadline.
    pub deadline: Deadline,
    /// Where chunks go.
    pub output: mpsc::Sender<Chunk>,
    /// The tool's own settings as JSON, given to the guest as the
    /// environment variable `TOOLHOST_TOOL_CONFIG` (its only environment).
    pub tool_config: Option<String>,
}

impl CallState {
    /// Builds the state: an empty WASI context (no files, no environment,
    /// no network, no stdin; stdout discarded, stderr kept for panic messages).
    pub fn new(setup: CallSetup) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        let mut wasi = WasiCtxBuilder::new();
        wasi.stderr(stderr.clone());
        if let Some(config) = &setup.tool_config {
            wasi.env("TOOLHOST_TOOL_CONFIG", config);
        }
        let wasi = wasi.build();
        let memory = usize::try_from(setup.limits.max_memory_bytes).unwrap_or(usize::MAX);
        let limits = StoreLimitsBuilder::new().memory_size(memory).trap_on_grow_failure(true).build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limits,
            tool: setup.tool,
            grants: setup.grants,
            backend: setup.backend,
            agent_state: setup.agent_state,
            sink: OutputSink::new(setup.output, setup.limits.max_output_bytes),
            stderr,
            deadline: setup.deadline,
            log_budget: LogBudget::new(setup.limits.max_log_bytes),
            call_limits: setup.limits,
            chain: None,
        }
    }

    /// The last lines the guest wrote to stderr (a panic message, usually).
    pub fn stderr_tail(&self) -> String {
        let bytes = self.stderr.contents();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// A store for one call: limits installed, the epoch deadline armed through
/// a callback that consults the shared [`Deadline`] and yields to the async
/// executor every few milliseconds so a spinning guest cannot starve others.
pub fn new_store(runtime: &Runtime, state: CallState) -> Store<CallState> {
    new_store_on(runtime.engine(), state)
}

/// [`new_store`] on a given engine: a component's instances live in stores
/// of the engine that compiled it (the baseline one for a first use).
pub fn new_store_on(engine: &wasmtime::Engine, state: CallState) -> Store<CallState> {
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limits);
    store.set_epoch_deadline(slice_ticks());
    store.epoch_deadline_callback(|ctx| {
        if ctx.data().deadline.remaining().is_zero() {
            Ok(UpdateDeadline::Interrupt)
        } else {
            Ok(UpdateDeadline::Yield(slice_ticks()))
        }
    });
    store
}

/// Guest code runs this many ticks between deadline checks (10 ms).
fn slice_ticks() -> u64 {
    (Duration::from_millis(10).as_micros() / EPOCH_TICK.as_micros()).max(1) as u64
}
