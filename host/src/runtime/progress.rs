//! What the runtime tells its embedder about compiling: a compile can take
//! seconds on a first run, and a front end on a terminal says what it is
//! waiting for. The runtime only reports; printing is the front end's job.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Which compiler produced a component's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Winch, wasmtime's baseline compiler: compiles several times faster,
    /// runs slower. Used for a built-in's first use when its optimised code
    /// is not cached yet.
    Baseline,
    /// Cranelift, the optimising compiler: what every later use runs.
    Optimised,
}

/// Where a compile is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The compile started (nothing usable was cached).
    Started,
    /// The compile finished (or failed) after this long.
    Finished(Duration),
}

/// One step of one compile.
#[derive(Debug, Clone)]
pub struct CompileEvent {
    /// What is compiled, as errors name it (`built-in tool Bash`, a path).
    pub label: String,
    /// With which compiler.
    pub tier: Tier,
    /// Started or finished.
    pub phase: Phase,
}

/// A callback told of every compile that does not come from the cache.
/// It runs on the compiling thread: it must return quickly.
#[derive(Clone)]
pub struct CompileObserver(pub Arc<dyn Fn(&CompileEvent) + Send + Sync>);

impl CompileObserver {
    /// Wraps a callback.
    pub fn new(f: impl Fn(&CompileEvent) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl fmt::Debug for CompileObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompileObserver")
    }
}
