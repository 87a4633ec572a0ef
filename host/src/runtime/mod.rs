//! The wasmtime runtime: one engine per host, a compile cache, per-call
//! stores with limits, and the host side of every WIT import.
//!
//! Isolation: every call gets a fresh `Store` and instance (from the pooling
//! allocator when the machine allows it), so nothing leaks between calls or
//! callers. Every call has a budget ([`Limits`]): a wall-clock deadline
//! enforced both by epoch interruption (guest code) and by a timer around the
//! whole call (host imports), a linear-memory cap, and an output cap.

pub mod background;
pub mod bindings;
pub mod cache;
pub mod failure;
pub mod imports;
pub mod progress;
pub mod store;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine};

pub use cache::{CacheOutcome, CompileCache};
pub use progress::{CompileEvent, CompileObserver, Phase, Tier};
pub use store::CallState;
pub use toolhost_core::limits::Limits;

/// How often the epoch ticks; deadlines are counted in ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(2);

/// The longest the metadata probe may take, in milliseconds (less when
/// `limits.timeout_ms` is smaller).
pub const PROBE_TIMEOUT_MS: u64 = 10_000;

/// Options for building a [`Runtime`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<std::path::PathBuf>,
    /// The most the cache folder may hold, in bytes (default
    /// 1 GiB); the least recently used entries go.
    pub cache_max_bytes: Option<u64>,
    /// Per-call limits (the memory cap also sizes the pooling allocator).
    pub limits: Limits,
    /// Use the pooling allocator if the machine allows it (default true).
    pub disable_pooling: bool,
    /// Compile every component with the optimising compiler. By default a
    /// built-in whose optimised code is not cached yet is compiled for its
    /// first use with the Winch baseline compiler (about 10× faster to
    /// compile; see docs/benchmarks.md), and [`Runtime::optimise`] fills the
    /// cache with the optimised code for every later use.
    pub always_optimise: bool,
    /// Told of every compile that does not come from the cache.
    pub observer: Option<CompileObserver>,
}

impl RuntimeOptions {
    fn cache_max_bytes(&self) -> u64 {
        self.cache_max_bytes.unwrap_or(cache::DEFAULT_MAX_BYTES)
    }
}

/// The WebAssembly engine (wasmtime) with its compile cache: it compiles
/// components, and runs their calls for a host under the per-call limits.
pub struct Runtime {
    engine: Engine,
    tool_linker: Linker<CallState>,
    middleware_linker: Linker<CallState>,
    cache: Option<CompileCache>,
    /// Built on the first compile that needs it (most processes find the
    /// optimised code cached and never do); `None` inside when turned off
    /// or unavailable.
    baseline: Arc<OnceLock<Option<Baseline>>>,
    options: RuntimeOptions,
    pooling: bool,
    limits: Limits,
    _ticker: EpochTicker,
}

/// The Winch engine for first uses: its own engine (code from one engine
/// cannot run in another), linker and cache entries (the engine's
/// compatibility hash keys them apart from the optimised ones).
struct Baseline {
    engine: Engine,
    tool_linker: Linker<CallState>,
    cache: Option<CompileCache>,
}

impl Runtime {
    /// Components loaded from the compile caches (optimised and baseline)
    /// so far.
    pub fn cache_hits(&self) -> u64 {
        let baseline = self.baseline.get().and_then(|b| b.as_ref()).and_then(|b| b.cache.as_ref());
        [self.cache.as_ref(), baseline].into_iter().flatten().map(CompileCache::hits).sum()
    }

    /// Builds the engine (pooling allocator first, on-demand if the machine
    /// refuses the reservation), the linkers, and starts the epoch ticker.
    pub fn new(options: &RuntimeOptions) -> Result<Self> {
        let (engine, pooling) = match options.disable_pooling {
            false => match Engine::new(&config(options, true)) {
                Ok(engine) => (engine, true),
                Err(e) => {
                    tracing::info!("pooling allocator unavailable ({e:#}); using on-demand allocation");
                    (
                        Engine::new(&config(options, false))
                            .map_err(anyhow::Error::from)
                            .context("creating the wasmtime engine")?,
                        false,
                    )
                }
            },
            true => (
                Engine::new(&config(options, false))
                    .map_err(anyhow::Error::from)
                    .context("creating the wasmtime engine")?,
                false,
            ),
        };
        let tool_linker = imports::tool_linker(&engine)?;
        let middleware_linker = imports::middleware_linker(&engine)?;
        let cache = match &options.cache_dir {
            Some(dir) => Some(CompileCache::open(dir, &engine)?.with_max_bytes(options.cache_max_bytes())),
            None => None,
        };
        let baseline = Arc::new(OnceLock::new());
        let ticker = EpochTicker::start(engine.clone(), baseline.clone());
        Ok(Self {
            engine,
            tool_linker,
            middleware_linker,
            cache,
            baseline,
            options: options.clone(),
            pooling,
            limits: options.limits,
            _ticker: ticker,
        })
    }

    /// The engine.
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The linker for the `tool-component` world.
    #[cfg(test)]
    pub(crate) fn tool_linker(&self) -> &Linker<CallState> {
        &self.tool_linker
    }

    /// The `tool-component` linker of the engine that compiled `component`
    /// (the optimising one, or the baseline one for a first use).
    pub(crate) fn tool_linker_for(&self, component: &Component) -> &Linker<CallState> {
        match self.baseline.get() {
            Some(Some(b)) if Engine::same(component.engine(), &b.engine) => &b.tool_linker,
            _ => &self.tool_linker,
        }
    }

    /// The linker for the `middleware-component` world.
    pub(crate) fn middleware_linker(&self) -> &Linker<CallState> {
        &self.middleware_linker
    }

    /// The per-call limits it was made with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The limits of the metadata probe (a component's `metadata` or a
    /// middleware's `info`, called once at load with no grants): the
    /// configured limits, with the time limit at most [`PROBE_TIMEOUT_MS`].
    pub(crate) fn probe_limits(&self) -> Limits {
        Limits { timeout_ms: self.limits.timeout_ms.min(PROBE_TIMEOUT_MS), ..self.limits }
    }

    /// Whether every compile is optimised ([`RuntimeOptions::always_optimise`]):
    /// no baseline code for a first use.
    pub(crate) fn always_optimise(&self) -> bool {
        self.options.always_optimise
    }

    /// Whether instances come from the pooling allocator.
    pub fn pooling(&self) -> bool {
        self.pooling
    }

    /// Compiles a component with the optimising compiler, through the cache
    /// when there is one. `label` names it in [`CompileEvent`]s.
    pub(crate) fn compile(&self, bytes: &[u8], label: &str) -> Result<(Component, CacheOutcome)> {
        let compile = || self.observed(label, Tier::Optimised, || Component::new(&self.engine, bytes));
        match &self.cache {
            Some(cache) => cache.get_or_compile(&self.engine, bytes, compile),
            None => Ok((compile()?, CacheOutcome::Disabled)),
        }
    }

    /// Compiles a component for its first use in this process: its optimised
    /// code when the cache has it, otherwise (unless
    /// [`RuntimeOptions::always_optimise`]) baseline code, which compiles
    /// several times faster; then [`Runtime::optimise`] is worth calling.
    pub(crate) fn compile_first_use(&self, bytes: &[u8], label: &str) -> Result<(Component, CacheOutcome, Tier)> {
        if self.options.always_optimise {
            return self.compile(bytes, label).map(|(c, outcome)| (c, outcome, Tier::Optimised));
        }
        if let Some(cache) = &self.cache
            && let (Some(component), outcome) = cache.lookup(&self.engine, bytes)
        {
            return Ok((component, outcome, Tier::Optimised));
        }
        let Some(baseline) = self.baseline.get_or_init(|| Baseline::new(&self.options)) else {
            return self.compile(bytes, label).map(|(c, outcome)| (c, outcome, Tier::Optimised));
        };
        let compile = || self.observed(label, Tier::Baseline, || Component::new(&baseline.engine, bytes));
        let (component, outcome) = match &baseline.cache {
            Some(cache) => cache.get_or_compile(&baseline.engine, bytes, compile)?,
            None => (compile()?, CacheOutcome::Disabled),
        };
        Ok((component, outcome, Tier::Baseline))
    }

    /// The code of `bytes` from the cache, compiling nothing: the optimised
    /// code when the cache has it; with `first_use` at [`Tier::Baseline`]
    /// (and [`RuntimeOptions::always_optimise`] off), else the baseline code
    /// an earlier first use stored. `None` when neither is there (or there
    /// is no cache): the component needs a compile.
    pub(crate) fn cached(&self, bytes: &[u8], first_use: Tier) -> Option<(Component, Tier)> {
        let cache = self.cache.as_ref()?;
        if let (Some(component), _) = cache.lookup(&self.engine, bytes) {
            return Some((component, Tier::Optimised));
        }
        if first_use == Tier::Optimised || self.options.always_optimise {
            return None;
        }
        let baseline = self.baseline.get_or_init(|| Baseline::new(&self.options)).as_ref()?;
        let (component, _) = baseline.cache.as_ref()?.lookup(&baseline.engine, bytes);
        component.map(|c| (c, Tier::Baseline))
    }

    /// Compiles `bytes` as [`Runtime::compile`] does (with `first_use` at
    /// [`Tier::Baseline`], as [`Runtime::compile_first_use`] does), on the
    /// low-priority threads of [`background`] so that calls served
    /// meanwhile take the cores first. Blocking: run it on a thread of its
    /// own.
    pub(crate) fn compile_in_background(
        &self,
        bytes: &[u8],
        label: &str,
        first_use: Tier,
    ) -> Result<(Component, CacheOutcome, Tier)> {
        background::run_low_priority(|| match first_use {
            Tier::Baseline => self.compile_first_use(bytes, label),
            Tier::Optimised => self.compile(bytes, label).map(|(c, outcome)| (c, outcome, Tier::Optimised)),
        })
    }

    /// Whether the cache holds the optimised code of `bytes` (false without
    /// a cache).
    pub fn is_optimised_cached(&self, bytes: &[u8]) -> bool {
        self.cache.as_ref().is_some_and(|cache| cache.entry_path(bytes).is_file())
    }

    /// Compiles `bytes` into the cache, running no guest code: with
    /// `first_use` at [`Tier::Optimised`] the optimised code every later
    /// load uses, at [`Tier::Baseline`] what a host's first use of it would
    /// compile. On the low-priority threads, as a host compiles a plugin in
    /// the background. Returns what the cache did and whose code it holds
    /// now. Blocking: run it off the async threads.
    pub fn precompile(&self, bytes: &[u8], label: &str, first_use: Tier) -> Result<(CacheOutcome, Tier)> {
        let (_, outcome, tier) = self.compile_in_background(bytes, label, first_use)?;
        Ok((outcome, tier))
    }

    /// Compiles `bytes` with the optimising compiler into the cache, unless
    /// it is there already, so that the next load uses optimised code. Does
    /// nothing without a cache. Blocking: run it off the async threads.
    pub fn optimise(&self, bytes: &[u8], label: &str) -> Result<()> {
        if self.cache.is_some() {
            self.compile(bytes, label)?;
        }
        Ok(())
    }

    /// Runs `compile`, telling the observer when it starts and ends.
    fn observed(
        &self,
        label: &str,
        tier: Tier,
        compile: impl FnOnce() -> wasmtime::Result<Component>,
    ) -> Result<Component> {
        let tell = |phase| {
            if let Some(observer) = &self.options.observer {
                (observer.0)(&CompileEvent { label: label.to_string(), tier, phase });
            }
        };
        tell(Phase::Started);
        let started = Instant::now();
        let result = compile().map_err(anyhow::Error::from);
        tell(Phase::Finished(started.elapsed()));
        result
    }
}

impl Baseline {
    /// The Winch engine, with on-demand allocation (first uses are few; a
    /// second pool would reserve its address space twice). `None` when Winch
    /// cannot compile for this machine: first uses then optimise.
    fn new(options: &RuntimeOptions) -> Option<Self> {
        let mut config = config(options, false);
        config.strategy(wasmtime::Strategy::Winch);
        let built = Engine::new(&config).map_err(anyhow::Error::from).and_then(|engine| {
            let tool_linker = imports::tool_linker(&engine)?;
            let cache = match &options.cache_dir {
                Some(dir) => Some(CompileCache::open(dir, &engine)?.with_max_bytes(options.cache_max_bytes())),
                None => None,
            };
            Ok(Self { engine, tool_linker, cache })
        });
        match built {
            Ok(baseline) => Some(baseline),
            Err(e) => {
                tracing::info!("the Winch baseline compiler is unavailable ({e:#}); first uses compile optimised code");
                None
            }
        }
    }
}

fn config(options: &RuntimeOptions, pooling: bool) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    // Deep recursion must trap as a stack overflow well before the host's
    // own stack is at risk.
    config.max_wasm_stack(1 << 20);
    if let Some(profiler) = profiler_from_env() {
        config.profiler(profiler);
    }
    if pooling {
        let mut pool = wasmtime::PoolingAllocationConfig::default();
        let memory = usize::try_from(options.limits.max_memory_bytes).unwrap_or(usize::MAX);
        pool.max_memory_size(memory);
        pool.total_component_instances(256);
        // One async fiber stack per store inside a guest call, so no more
        // than there are component instances. The default (1000) costs a
        // guard-page `mprotect` per stack at every engine start (~1000
        // syscalls and VMA splits, a quarter of a `toolhost check` start-up).
        pool.total_stacks(256);
        pool.total_core_instances(512);
        pool.total_memories(256);
        pool.total_tables(512);
        pool.max_memories_per_component(4);
        pool.max_tables_per_component(8);
        pool.max_core_instances_per_component(32);
        // Resetting a slot with madvise costs a TLB shootdown on every core
        // per call; scanning for the pages a call touched and resetting them
        // in place keeps short calls cheap. Decommits that remain are batched.
        pool.pagemap_scan(wasmtime::Enabled::Auto);
        pool.linear_memory_keep_resident(1 << 20);
        pool.table_keep_resident(64 << 10);
        pool.decommit_batch_size(16);
        config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

/// The profiler named by `TOOLHOST_PROFILER` (`perfmap` or `jitdump`), so
/// that `perf` can name the functions of guest code; unset means none.
fn profiler_from_env() -> Option<wasmtime::ProfilingStrategy> {
    let value = std::env::var("TOOLHOST_PROFILER").ok()?;
    match value.to_ascii_lowercase().as_str() {
        "perfmap" => Some(wasmtime::ProfilingStrategy::PerfMap),
        "jitdump" => Some(wasmtime::ProfilingStrategy::JitDump),
        "" | "none" => None,
        other => {
            tracing::warn!("TOOLHOST_PROFILER={other} is not known (use perfmap or jitdump); profiling is off");
            None
        }
    }
}

/// Increments the engines' epoch every [`EPOCH_TICK`] until dropped.
struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    fn start(engine: Engine, baseline: Arc<OnceLock<Option<Baseline>>>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spawned = std::thread::Builder::new().name("toolhost-epoch".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
                if let Some(Some(b)) = baseline.get() {
                    b.engine.increment_epoch();
                }
            }
        });
        if let Err(e) = spawned {
            // Without the ticker deadlines still hold through the host timer,
            // but a spinning guest would hold its thread: say so loudly.
            tracing::error!("could not start the epoch ticker thread: {e}");
        }
        Self { stop }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
