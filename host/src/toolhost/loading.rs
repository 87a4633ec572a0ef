//! Plugins that load in the background: a plugin file whose compiled code
//! is not in the compile cache (a 19 MB Python component takes tens of
//! seconds to compile) is checked at once and compiled after
//! [`crate::ToolhostBuilder::build`] has returned, so the host serves its
//! other tools meanwhile.
//!
//! One compile at a time, in the order queued (a compile takes hundreds of
//! MB), each on the low-priority threads of [`crate::runtime::background`],
//! on a thread of its own (never a tokio thread). Its tool is registered
//! when its load is done, which moves [`crate::Toolhost::tool_list_changes`] on as
//! any new tool does. A failed load is kept ([`crate::Toolhost::failed_loads`]);
//! the rest of the host is not affected.
//!
//! **Baseline first.** Unless the runtime always optimises, a plugin's
//! first load compiles with Winch, the baseline compiler (4–8× faster to
//! compile for these components; see docs/benchmarks.md, issue 19), and
//! serves on that code; then its optimised code is compiled (queued after
//! the loads) and swapped in without a change clients see
//! ([`crate::catalog::registry::Registry::upgrade`]), and stored in the
//! cache for every later start. A process that ends first (a one-shot CLI
//! command) hands [`crate::Toolhost::plugins_to_optimise`] to another.
//!
//! **Built-ins too.** A built-in whose first use ran on baseline code (its
//! optimised code was not cached) gets the same optimising compile, queued
//! behind the plugin loads, and is swapped in the same way: a host that keeps
//! running converges on optimised code for every tool (Winch code ran Read
//! about 2.5× slower). Unless the builder turned it off
//! ([`crate::ToolhostBuilder::optimise_builtins_in_background`]): a one-shot
//! command leaves it to `toolhost __optimise-builtins`.
//!
//! A call, check or instance of a name that is not registered while loads
//! are pending waits for them, at most the call's timeout (the name is not
//! known before a component's `metadata` has answered).

use std::collections::VecDeque;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};
use wasmtime::component::Component;

use super::catalog::Catalog;
use crate::catalog::builtin::Builtin;
use crate::catalog::tool::{LoadError, Origin};
use crate::execution::component::{load_compiled, recompiled};
use crate::runtime::{CacheOutcome, Tier};
use crate::sync::MutexExt;

/// A plugin file loading in the background.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingLoad {
    /// The file (absolute).
    pub file: PathBuf,
    /// SHA-256 of the bytes being loaded.
    pub sha256: String,
    /// Their size.
    pub bytes: u64,
    /// Whether its compile has started (`false`: queued behind another).
    pub compiling: bool,
}

/// A plugin file whose background load failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedLoad {
    /// The file (absolute).
    pub file: PathBuf,
    /// SHA-256 of the bytes that failed.
    pub sha256: String,
    /// Why, naming the file, the cause and what to do.
    pub error: String,
}

/// The background loads that failed, as [`crate::Toolhost::ready`] reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailures(pub Vec<FailedLoad>);

impl fmt::Display for LoadFailures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{}", one.error),
            all => {
                write!(f, "{} plugin files failed to load:", all.len())?;
                all.iter().try_for_each(|failed| write!(f, "\n{}", failed.error))
            }
        }
    }
}

impl std::error::Error for LoadFailures {}

/// A compiled component: its code, what the cache did, which compiler made it.
pub(crate) type Compiled = (Component, CacheOutcome, Tier);

/// One queued compile.
struct Job {
    /// The plugin file (empty for a built-in).
    file: PathBuf,
    label: String,
    sha256: String,
    bytes: Arc<[u8]>,
    work: Work,
}

enum Work {
    /// Load the plugin and register its tool.
    Load,
    /// Compile the optimised code of the tool registered as `name` from
    /// `origin` (these bytes), which serves on baseline code, and swap it in.
    Optimise { name: String, origin: Origin },
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    pending: Vec<PendingLoad>,
    failed: Vec<FailedLoad>,
    /// Plugins serving on baseline code, by file and SHA-256, until their
    /// optimised code is swapped in.
    baseline: Vec<(PathBuf, String)>,
    /// Whether the worker task is running (it ends when the queue is empty).
    working: bool,
}

/// The background loads of one host.
pub(crate) struct Loads {
    state: Mutex<State>,
    /// Moved on at every change of what is pending or failed.
    changes: watch::Sender<u64>,
}

impl Default for Loads {
    fn default() -> Self {
        Self { state: Mutex::default(), changes: watch::Sender::new(0) }
    }
}

impl Loads {
    fn changed(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }

    /// Queues `job` (a load goes before every optimisation: tools first);
    /// returns whether a worker must be started.
    fn push(&self, job: Job) -> bool {
        let start = {
            let mut state = self.state.lock_unpoisoned();
            match &job.work {
                Work::Load => {
                    state.pending.push(PendingLoad {
                        file: job.file.clone(),
                        sha256: job.sha256.clone(),
                        bytes: job.bytes.len() as u64,
                        compiling: false,
                    });
                    let at = state.queue.iter().position(|j| matches!(j.work, Work::Optimise { .. }));
                    let at = at.unwrap_or(state.queue.len());
                    state.queue.insert(at, job);
                }
                Work::Optimise { origin, .. } => {
                    // Plugins only: another process can optimise a file.
                    if matches!(origin, Origin::File(_)) {
                        state.baseline.push((job.file.clone(), job.sha256.clone()));
                    }
                    state.queue.push_back(job);
                }
            }
            !std::mem::replace(&mut state.working, true)
        };
        self.changed();
        start
    }

    /// The next job, marked compiling; `None` (and the worker marked
    /// stopped) when the queue is empty.
    fn start_next(&self) -> Option<Job> {
        let job = {
            let mut state = self.state.lock_unpoisoned();
            let Some(job) = state.queue.pop_front() else {
                state.working = false;
                return None;
            };
            if let Some(p) = state.pending.iter_mut().find(|p| p.file == job.file && p.sha256 == job.sha256) {
                p.compiling = true;
            }
            job
        };
        self.changed();
        Some(job)
    }

    /// Records the end of `job`: a load no longer pending (failed, with
    /// `error`), an optimisation done (or given up).
    fn finish(&self, job: &Job, error: Option<String>) {
        {
            let mut state = self.state.lock_unpoisoned();
            let this = |file: &PathBuf, sha256: &String| *file == job.file && *sha256 == job.sha256;
            match &job.work {
                Work::Load => {
                    state.pending.retain(|p| !this(&p.file, &p.sha256));
                    if let Some(error) = error {
                        state.failed.push(FailedLoad { file: job.file.clone(), sha256: job.sha256.clone(), error });
                    }
                }
                Work::Optimise { .. } => state.baseline.retain(|(file, sha256)| !this(file, sha256)),
            }
        }
        self.changed();
    }
}

impl Catalog {
    /// Queues the load of a plugin file whose compiled code is not cached
    /// (its quick checks passed); `false` when there is no tokio runtime to
    /// run it on (the caller loads it now instead).
    pub(super) fn queue_load(&self, file: PathBuf, label: String, sha256: String, bytes: Vec<u8>) -> bool {
        tracing::info!("{label} is not in the compile cache: compiling it in the background");
        self.queue(Job { file, label, sha256, bytes: bytes.into(), work: Work::Load })
    }

    /// Queues the optimised compile of the plugin registered as `name` on
    /// the baseline code of these bytes; `false` without a tokio runtime.
    pub(super) fn queue_optimise(&self, name: &str, file: PathBuf, sha256: String, bytes: Arc<[u8]>) -> bool {
        let label = file.display().to_string();
        let work = Work::Optimise { name: name.to_string(), origin: Origin::File(file.clone()) };
        self.queue(Job { file, label, sha256, bytes, work })
    }

    /// Queues the optimised compile of `builtin`, which serves on baseline
    /// code, when this host optimises in the background; `false` when it
    /// does not (or has no tokio runtime).
    pub(super) fn queue_optimise_builtin(&self, builtin: &'static Builtin) -> bool {
        if !self.optimise_builtins {
            return false;
        }
        let job = Job {
            file: PathBuf::new(),
            label: format!("built-in tool {}", builtin.name),
            sha256: builtin.sha256.to_string(),
            bytes: Arc::from(builtin.bytes),
            work: Work::Optimise { name: builtin.name.to_string(), origin: Origin::Builtin },
        };
        self.queue(job)
    }

    fn queue(&self, job: Job) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return false };
        if self.loads.push(job) {
            runtime.spawn(work(self.me()));
        }
        true
    }

    /// The plugin files this host is loading, or serves on baseline code,
    /// whose optimised code is not in the compile cache yet, as (file,
    /// SHA-256): worth compiling into the cache by another process when
    /// this one ends before it has (the CLI does, see
    /// `toolhost __optimise-builtins`).
    pub fn plugins_to_optimise(&self) -> Vec<(PathBuf, String)> {
        let state = self.loads.state.lock_unpoisoned();
        let pending = state.pending.iter().map(|p| (p.file.clone(), p.sha256.clone()));
        pending.chain(state.baseline.iter().cloned()).collect()
    }

    /// The plugin files loading in the background now, in the order they
    /// load. Their tools are not registered yet. Empty once every load is
    /// done.
    pub fn pending_loads(&self) -> Vec<PendingLoad> {
        self.loads.state.lock_unpoisoned().pending.clone()
    }

    /// The plugin files of this host's settings whose background load
    /// failed, with why. (A watching host reports what its reloads refuse
    /// in [`crate::reload::Watcher::status`].)
    pub fn failed_loads(&self) -> Vec<FailedLoad> {
        self.loads.state.lock_unpoisoned().failed.clone()
    }

    /// Moves on at every change of [`crate::Toolhost::pending_loads`] and
    /// [`crate::Toolhost::failed_loads`] after this call (a front end shows
    /// progress, or tells its clients of a failure).
    pub fn load_changes(&self) -> watch::Receiver<u64> {
        self.loads.changes.subscribe()
    }

    /// Waits until no plugin is loading in the background; then every
    /// configured plugin is registered or has failed, and the error names
    /// each failed file and why. Returns at once when nothing loads. A
    /// one-shot program that needs every tool (a listing) waits here; a
    /// server need not: it serves the other tools meanwhile, and
    /// [`crate::Toolhost::tool_list_changes`] tells of each tool as it arrives.
    pub async fn ready(&self) -> Result<(), LoadFailures> {
        let mut changes = self.load_changes();
        while !self.pending_loads().is_empty() {
            if changes.changed().await.is_err() {
                break;
            }
        }
        let failed = self.failed_loads();
        if failed.is_empty() { Ok(()) } else { Err(LoadFailures(failed)) }
    }

    /// Waits until `name` is registered or no plugin loads any more, at
    /// most until `deadline`. Returns at once when nothing loads.
    pub(super) async fn wait_for_name(&self, name: &str, deadline: Instant) {
        let mut tools = self.tool_list_changes();
        let mut loads = self.load_changes();
        while !self.is_registered(name) && !self.pending_loads().is_empty() {
            tokio::select! {
                changed = tools.changed() => if changed.is_err() { return },
                changed = loads.changed() => if changed.is_err() { return },
                () = tokio::time::sleep_until(deadline.into()) => return,
            }
        }
    }

    /// Compiles `bytes` on a thread of its own, on the low-priority compile
    /// threads ([`crate::runtime::Runtime::compile_in_background`]), and
    /// waits for it without holding an async thread.
    pub(crate) async fn compile_off_thread(
        &self,
        bytes: Arc<[u8]>,
        label: &str,
        first_use: Tier,
    ) -> Result<Compiled, LoadError> {
        let (tx, rx) = oneshot::channel();
        let Some(catalog) = self.me().upgrade() else {
            return Err(LoadError::Compile(label.into(), "the host was dropped".into()));
        };
        let owned = label.to_string();
        std::thread::Builder::new()
            .name("toolhost-load".into())
            .spawn(move || {
                let _ = tx.send(catalog.runtime().compile_in_background(&bytes, &owned, first_use));
            })
            .map_err(|e| LoadError::Compile(label.into(), format!("could not start a compile thread: {e}")))?;
        match rx.await {
            Ok(compiled) => compiled.map_err(|e| LoadError::Compile(label.into(), format!("{e:#}"))),
            Err(_) => Err(LoadError::Compile(label.into(), "the compile thread ended without a result".into())),
        }
    }

    /// Loads one queued plugin: compile, probe, register (then, on
    /// baseline code, queue its optimisation).
    async fn load_queued(&self, job: &Job) -> Result<(), LoadError> {
        let compiled = self.compile_off_thread(job.bytes.clone(), &job.label, self.plugin_first_use()).await?;
        let origin = Origin::File(job.file.clone());
        let report = load_compiled(self.runtime(), compiled, origin, &job.label, job.sha256.clone()).await?;
        let info = self.insert_loaded(report.tool, &job.label)?;
        tracing::info!("loaded {} in the background: tool {} ({:?} code)", job.label, info.name, report.tier);
        if report.tier == Tier::Baseline {
            self.queue_optimise(&info.name, job.file.clone(), job.sha256.clone(), job.bytes.clone());
        }
        Ok(())
    }

    /// Compiles the optimised code of the tool `name` serving on baseline
    /// code (into the cache) and swaps it in under the metadata it was
    /// loaded with (no guest code runs), unless the name now holds another
    /// tool (a reload replaced it meanwhile). A built-in's job is queued by
    /// its first use's load, before the registry holds what that load made:
    /// what serves is checked again once compiled.
    async fn optimise_queued(&self, job: &Job, name: &str, origin: &Origin) -> Result<(), LoadError> {
        // None: nothing loaded under the name (yet); Some(None): another
        // tool; Some(Some(tool)): this one.
        let serving = || {
            let tool = self.tools.entry(name)?.loaded()?;
            Some((tool.info.sha256 == job.sha256 && tool.info.origin == *origin).then_some(tool))
        };
        if let Some(None) = serving() {
            return Ok(());
        }
        let (component, ..) = self.compile_off_thread(job.bytes.clone(), &job.label, Tier::Optimised).await?;
        let Some(Some(serving)) = serving() else { return Ok(()) };
        let optimised = recompiled(self.runtime(), &component, &serving)?;
        if self.tools.upgrade(name, Arc::new(optimised), |now| std::ptr::eq(now, &*serving)) {
            tracing::info!("{name} ({}) now runs optimised code", job.label);
        }
        Ok(())
    }
}

/// The worker: loads the queued plugins one by one until the queue is
/// empty or the host is gone.
async fn work(catalog: Weak<Catalog>) {
    loop {
        let Some(host) = catalog.upgrade() else { return };
        let Some(job) = host.loads.start_next() else { return };
        let outcome = match &job.work {
            Work::Load => host.load_queued(&job).await,
            Work::Optimise { name, origin } => host.optimise_queued(&job, name, origin).await,
        };
        if let Err(e) = &outcome {
            tracing::warn!("loading {} in the background failed: {e}", job.label);
        }
        host.loads.finish(&job, outcome.err().map(|e| e.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(work: Work) -> Job {
        Job { file: PathBuf::from("/p.wasm"), label: "p".into(), sha256: "s".into(), bytes: Arc::from(&b""[..]), work }
    }

    #[test]
    fn a_load_goes_before_every_optimisation_a_builtins_included() {
        let loads = Loads::default();
        assert!(loads.push(job(Work::Optimise { name: "Read".into(), origin: Origin::Builtin })), "starts a worker");
        let plugin = Work::Optimise { name: "p".into(), origin: Origin::File("/p.wasm".into()) };
        assert!(!loads.push(job(plugin)), "one worker");
        assert!(!loads.push(job(Work::Load)));
        // Only a plugin file is one another process could optimise.
        assert_eq!(loads.state.lock_unpoisoned().baseline.len(), 1);
        let order: Vec<bool> =
            std::iter::from_fn(|| loads.start_next()).map(|j| matches!(j.work, Work::Load)).collect();
        assert_eq!(order, [true, false, false]);
    }
}
