//! Reloading the plugin and middleware files a host loaded: one pass
//! ([`Reloader::reconcile`]) compares the files on disk with what is loaded
//! from them and brings the host in line, file by file:
//!
//! - a new `.wasm` in a plugin folder is loaded;
//! - a changed file (its SHA-256 differs) is loaded beside the running
//!   version and swapped in atomically (the registry's `replace`: calls
//!   already running finish on the old version);
//! - a removed file's tool or middleware is unloaded (running calls keep
//!   their `Arc` and finish);
//! - a file moved to another name in a watched folder keeps serving: the
//!   tool moves with it, in one swap.
//!
//! **A broken update never takes a tool away.** A file that does not
//! compile, exports the wrong world, reports another name, or fails
//! validation leaves the old version serving; the error is logged and kept
//! as the file's `last_error` ([`FileStatus`]). A file that does not parse
//! yet (an editor or a copy still writing it) is retried until it has stood
//! unchanged for the settle time, and only then reported.
//!
//! Events are only hints: every pass rescans and acts on SHA-256 changes
//! alone, so a burst of events for one write costs one pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Toolhost;
use crate::capability::{Declared, Grants};
use crate::capability_diff::CapabilityDiff;
use crate::catalog::component::{ComponentKind, check_world_of};
use crate::catalog::tool::{LoadError, Origin};
use crate::execution::component::load_compiled;
use crate::execution::loaded::LoadedTool;
use crate::execution::middleware::load_middleware_component;
use crate::execution::middleware::loader::LoadedMiddleware;
use crate::execution::middleware::registry::Layer;
use crate::runtime::Tier;

/// What a watched file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    /// A plugin tool.
    Tool,
    /// A middleware component.
    Middleware,
}

/// One watched file as the last pass left it: what is loaded from it and
/// what went wrong with its newest bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStatus {
    /// The file (absolute).
    pub file: PathBuf,
    /// Tool or middleware.
    pub kind: FileKind,
    /// The name it serves under, when a version of it is loaded.
    pub name: Option<String>,
    /// SHA-256 of the loaded version's bytes (empty when none is loaded).
    pub sha256: String,
    /// What the loaded version is granted, in words (`nothing` when none).
    pub grants: String,
    /// Why the newest bytes of the file are not what serves (a broken
    /// update, a name clash, a held-back capability request); `None` when
    /// the newest bytes are loaded.
    pub last_error: Option<String>,
}

/// What a watching host reports of itself (the status file
/// [`crate::reload::WatchOptions::status_file`], read by `toolhost status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    /// The process id of the host.
    pub pid: u32,
    /// Every watched file, sorted by path.
    pub files: Vec<FileStatus>,
    /// The plugin files still loading in the background since the host
    /// started (not yet in `files`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loading: Vec<crate::toolhost::loading::PendingLoad>,
}

/// A watched source: a plugin folder (every `.wasm` in it is a tool) or one
/// file (a configured plugin or middleware).
#[derive(Debug, Clone)]
pub(crate) struct Source {
    path: PathBuf,
    folder: bool,
    kind: FileKind,
}

impl Source {
    /// The directory to watch for it.
    pub(crate) fn watch_dir(&self) -> PathBuf {
        if self.folder { self.path.clone() } else { self.path.parent().map(Path::to_path_buf).unwrap_or_default() }
    }
}

/// What is loaded from one file.
#[derive(Debug, Clone)]
struct Loaded {
    kind: FileKind,
    name: String,
    sha256: String,
}

/// A file whose newest bytes failed to parse: retried until they stood
/// unchanged for the settle time.
#[derive(Debug, Clone)]
struct Unsettled {
    sha256: String,
    since: Instant,
}

/// A version compiled and checked beside the running one, not yet swapped
/// in.
enum Staged {
    Tool(Box<LoadedTool>),
    Middleware(LoadedMiddleware),
}

impl Staged {
    fn name(&self) -> &str {
        match self {
            Staged::Tool(t) => &t.info.name,
            Staged::Middleware(m) => &m.info.name,
        }
    }
}

/// The state of reloading, kept between passes by the watcher.
pub(crate) struct Reloader {
    host: Toolhost,
    sources: Vec<Source>,
    settle: Duration,
    loaded: BTreeMap<PathBuf, Loaded>,
    unsettled: BTreeMap<PathBuf, Unsettled>,
    /// The SHA-256 of each file's newest bytes whose failure is reported
    /// (not tried again until the file changes).
    rejected: BTreeMap<PathBuf, String>,
    status: BTreeMap<PathBuf, FileStatus>,
    /// Each plugin tool's declaration its grants were given for: the one
    /// in the lock file, else the one it had when this host first served
    /// it. A version declaring more is held back.
    approved: BTreeMap<String, Declared>,
    /// The SHA-256 of the lock file's bytes when last read (`None`: none).
    lock_sha256: Option<String>,
}

impl Reloader {
    /// A reloader for the plugin folders, plugin files and middleware files
    /// of `host`'s settings, knowing what `host` loaded from them.
    pub(crate) fn new(host: &Toolhost, settle: Duration) -> Self {
        let settings = host.settings();
        let abs = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let mut sources: Vec<Source> =
            settings.plugin_dirs.iter().map(|p| Source { path: abs(p), folder: true, kind: FileKind::Tool }).collect();
        sources.extend(settings.plugins.iter().map(|p| Source { path: abs(p), folder: false, kind: FileKind::Tool }));
        sources.extend(settings.middleware.files.iter().map(|p| Source {
            path: abs(p),
            folder: false,
            kind: FileKind::Middleware,
        }));
        let mut loaded = BTreeMap::new();
        let mut approved = BTreeMap::new();
        for name in host.names() {
            if let Ok(info) = host.catalog().tools.info(&name)
                && let Origin::File(file) = &info.origin
            {
                loaded.insert(
                    file.clone(),
                    Loaded { kind: FileKind::Tool, name: name.clone(), sha256: info.sha256.clone() },
                );
                approved.insert(name, info.capabilities.clone());
            }
        }
        for info in host.middleware() {
            if let Origin::File(file) = &info.origin {
                loaded
                    .insert(file.clone(), Loaded { kind: FileKind::Middleware, name: info.name, sha256: info.sha256 });
            }
        }
        let mut reloader = Self {
            host: host.clone(),
            sources,
            settle,
            loaded,
            unsettled: BTreeMap::new(),
            rejected: BTreeMap::new(),
            status: BTreeMap::new(),
            approved,
            lock_sha256: lock_sha256(host.lock_path()),
        };
        reloader.approve_locked();
        for file in reloader.loaded.keys().cloned().collect::<Vec<_>>() {
            reloader.set_status(&file, None);
        }
        // A file whose background load failed is reported like a refused
        // update, and not compiled again until it changes.
        for failed in host.failed_loads() {
            reloader.rejected.insert(failed.file.clone(), failed.sha256);
            let status = FileStatus {
                file: failed.file.clone(),
                kind: FileKind::Tool,
                name: None,
                sha256: String::new(),
                grants: "nothing".into(),
                last_error: Some(failed.error),
            };
            reloader.status.insert(failed.file, status);
        }
        reloader
    }

    /// The directories to watch: those of the sources, the folders the
    /// links among them lead into (`plugins/x.wasm` → `build/x.wasm`: a
    /// rebuild writes there, and the new bytes must be seen, and judged
    /// against their pin), and the lock file's.
    pub(crate) fn watch_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.sources.iter().map(Source::watch_dir).collect();
        for file in self.scan().into_keys() {
            if let Ok(real) = std::fs::canonicalize(&file)
                && real != file
                && let Some(dir) = real.parent()
            {
                dirs.push(dir.to_path_buf());
            }
        }
        dirs.extend(self.host.lock_path().parent().filter(|d| d.is_dir()).map(Path::to_path_buf));
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// The lock file's declarations are approvals: they replace what this
    /// host first saw of those names.
    fn approve_locked(&mut self) {
        let Some(lock) = self.host.lock_file() else { return };
        for plugin in lock.plugins.iter().filter(|p| p.kind == "tool") {
            self.approved.insert(plugin.name.clone(), plugin.declared.clone());
        }
    }

    /// Reads the lock file again when its bytes changed (`toolhost lock`
    /// approves and pins): refused and held-back files are then tried again.
    fn refresh_lock(&mut self) {
        let now = lock_sha256(self.host.lock_path());
        if now == self.lock_sha256 {
            return;
        }
        self.lock_sha256 = now;
        match self.host.catalog().reread_lock() {
            Ok(()) => {
                tracing::info!("re-read the lock file {}", self.host.lock_path().display());
                self.approve_locked();
                self.rejected.clear();
            }
            Err(e) => tracing::warn!("{e:#}; the lock file read before stays in force"),
        }
    }

    /// Every watched file's status, by file.
    pub(crate) fn status(&self) -> Vec<FileStatus> {
        self.status.values().cloned().collect()
    }

    /// One pass: rescans the sources and loads, swaps and unloads what
    /// changed. Returns when a file that does not parse yet should be tried
    /// again (`None`: nothing to retry).
    pub(crate) async fn reconcile(&mut self) -> Option<Instant> {
        self.refresh_lock();
        let files = self.scan();
        let mut removed: Vec<PathBuf> = self.loaded.keys().filter(|f| !files.contains_key(*f)).cloned().collect();
        self.unsettled.retain(|f, _| files.contains_key(f));
        self.rejected.retain(|f, _| files.contains_key(f));
        self.status.retain(|f, _| files.contains_key(f) || self.loaded.contains_key(f));
        for (file, kind) in &files {
            let what = if *kind == FileKind::Tool { "plugin" } else { "middleware" };
            let own = match self.host.catalog().read_component(file, what) {
                Ok(own) => own,
                Err(e) => {
                    self.fail(file, *kind, &format!("cannot read {}: {e:#}", file.display()));
                    continue;
                }
            };
            let sha256 = hex::encode(Sha256::digest(&own.bytes));
            if self.loaded.get(file).is_some_and(|l| l.sha256 == sha256) {
                self.unsettled.remove(file);
                if self.rejected.remove(file).is_some() {
                    self.set_status(file, None);
                }
                continue;
            }
            if self.rejected.get(file) == Some(&sha256) {
                continue;
            }
            self.update(file, *kind, own, sha256, &mut removed).await;
        }
        for file in removed {
            self.unload(&file);
        }
        self.unsettled.values().map(|u| u.since + self.settle).min()
    }

    /// Every file of every source now, with what it holds.
    fn scan(&self) -> BTreeMap<PathBuf, FileKind> {
        let mut files = BTreeMap::new();
        for source in &self.sources {
            if !source.folder {
                if source.path.is_file() {
                    files.insert(source.path.clone(), source.kind);
                }
                continue;
            }
            // As at start (`load_dir`): a symlink to a file counts.
            let Ok(found) = crate::settings::wasm_files(&source.path) else { continue };
            for path in found.into_iter().filter(|p| p.is_file()) {
                files.insert(path, source.kind);
            }
        }
        files
    }

    /// Brings `file`'s newest bytes in: loads them beside what serves and
    /// swaps, or records why not.
    async fn update(
        &mut self,
        file: &Path,
        kind: FileKind,
        own: crate::own_file::OwnFile,
        sha256: String,
        removed: &mut Vec<PathBuf>,
    ) {
        if let Err(e) = self.host.catalog().check_component(file, &own, &file.display().to_string()) {
            return self.reject(file, kind, sha256, &format!("{e:#}"));
        }
        let bytes = own.bytes;
        let staged = match self.stage(file, kind, bytes).await {
            Ok(staged) => staged,
            Err(e) if unparsed(&e) => {
                let now = Instant::now();
                let entry = self
                    .unsettled
                    .entry(file.to_path_buf())
                    .or_insert(Unsettled { sha256: sha256.clone(), since: now });
                if entry.sha256 != sha256 {
                    *entry = Unsettled { sha256: sha256.clone(), since: now };
                }
                if now < entry.since + self.settle {
                    tracing::debug!("{} does not parse yet; trying again: {e}", file.display());
                    return;
                }
                self.unsettled.remove(file);
                return self.reject(file, kind, sha256, &e.to_string());
            }
            Err(e) => return self.reject(file, kind, sha256, &e.to_string()),
        };
        self.unsettled.remove(file);
        let name = staged.name().to_string();
        let declared = match &staged {
            Staged::Tool(tool) => {
                if let Err(held) = self.check_capabilities(file, tool) {
                    return self.reject(file, kind, sha256, &held);
                }
                Some(tool.info.capabilities.clone())
            }
            Staged::Middleware(_) => None,
        };
        let outcome = match self.loaded.get(file) {
            Some(old) if old.name != name => Err(self.renamed(file, old, &name)),
            Some(_) => self.swap(staged),
            None => {
                // A file moved within the watched folders: the tool it held
                // moves with it, in one swap.
                let moved =
                    removed.iter().position(|f| self.loaded.get(f).is_some_and(|l| l.name == name && l.kind == kind));
                match moved {
                    Some(at) => {
                        let from = removed.remove(at);
                        let outcome = self.swap(staged);
                        if outcome.is_ok() {
                            self.loaded.remove(&from);
                            self.status.remove(&from);
                        } else {
                            removed.push(from);
                        }
                        outcome
                    }
                    None => self.insert(staged, file),
                }
            }
        };
        match outcome {
            Ok(()) => {
                tracing::info!("reloaded {} ({kind:?} {name}, sha256 {sha256})", file.display());
                if let Some(telemetry) = self.host.telemetry() {
                    telemetry.metrics().reloads.inc();
                }
                if let Some(declared) = declared {
                    self.approved.entry(name.clone()).or_insert(declared);
                }
                self.loaded.insert(file.to_path_buf(), Loaded { kind, name, sha256 });
                self.rejected.remove(file);
                self.set_status(file, None);
            }
            Err(e) => self.reject(file, kind, sha256, &e),
        }
    }

    /// Holds back a version of a tool that declares more than the
    /// declaration its grants were given for (the first version of a name
    /// to serve sets it).
    fn check_capabilities(&self, file: &Path, tool: &LoadedTool) -> Result<(), String> {
        let info = &tool.info;
        let Some(approved) = self.approved.get(&info.name) else { return Ok(()) };
        let diff = CapabilityDiff::between(approved, &info.capabilities);
        if !diff.asks_for_more() {
            return Ok(());
        }
        Err(held_back(file, &info.name, &diff, self.host.lock_path()))
    }

    /// Compiles and checks `bytes` off the async workers (a compile takes
    /// a core for a while; a tool's compiles on the low-priority compile
    /// threads, as a background load's), with no lock held and nothing
    /// swapped.
    async fn stage(&self, file: &Path, kind: FileKind, bytes: Vec<u8>) -> Result<Staged, LoadError> {
        if kind == FileKind::Tool {
            let label = file.display().to_string();
            check_world_of(&bytes, &label, ComponentKind::Tool)?;
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let compiled = self.host.catalog().compile_off_thread(bytes.into(), &label, Tier::Optimised).await?;
            let origin = Origin::File(file.to_path_buf());
            let report = load_compiled(self.host.runtime(), compiled, origin, &label, sha256).await?;
            return Ok(Staged::Tool(Box::new(report.tool)));
        }
        let host = self.host.clone();
        let file = file.to_path_buf();
        let handle = tokio::runtime::Handle::current();
        let job = tokio::task::spawn_blocking(move || {
            handle.block_on(async move {
                let label = file.display().to_string();
                let runtime = host.runtime();
                load_middleware_component(runtime, &bytes, Origin::File(file), &label).await.map(Staged::Middleware)
            })
        });
        job.await.unwrap_or_else(|e| Err(LoadError::Instantiate("reload".into(), format!("the load task failed: {e}"))))
    }

    /// Swaps a staged version in for the one of the same name.
    fn swap(&self, staged: Staged) -> Result<(), String> {
        match staged {
            Staged::Tool(tool) => {
                let name = tool.info.name.clone();
                self.host.catalog().tools.replace(&name, Arc::new(*tool)).map(drop).map_err(|e| e.to_string())
            }
            Staged::Middleware(mw) => {
                let info = mw.info.clone();
                let name = info.name.clone();
                self.host
                    .catalog()
                    .middleware_registry()
                    .replace(Layer::Component(Arc::new(mw)), info)
                    .map(drop)
                    .ok_or_else(|| format!("middleware '{name}' is no longer loaded"))
            }
        }
    }

    /// Registers a staged version from a new file.
    fn insert(&self, staged: Staged, file: &Path) -> Result<(), String> {
        let label = file.display().to_string();
        match staged {
            Staged::Tool(tool) => self.host.catalog().insert_loaded(*tool, &label).map(drop).map_err(|e| e.to_string()),
            Staged::Middleware(mw) => {
                let info = mw.info.clone();
                let name = info.name.clone();
                let registry = self.host.catalog().middleware_registry();
                self.host
                    .catalog()
                    .insert_middleware(|| registry.insert(Layer::Component(Arc::new(mw)), info, &label), &name, &label)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// The error of a changed file that reports another name than the
    /// version serving from it.
    fn renamed(&self, file: &Path, old: &Loaded, new: &str) -> String {
        let taken = match old.kind {
            FileKind::Tool => self.host.is_registered(new) || self.host.catalog().middleware_registry().has(new),
            FileKind::Middleware => self.host.catalog().middleware_registry().has(new) || self.host.is_registered(new),
        };
        let whose =
            if taken { ", which is the name of another loaded tool or middleware".to_string() } else { String::new() };
        format!(
            "{} now reports the name '{new}'{whose}; the version named '{}' keeps serving. A reload keeps the name: to rename, remove the file and add the renamed component as a new file",
            file.display(),
            old.name
        )
    }

    /// Unloads what `file` held (its file is gone).
    fn unload(&mut self, file: &Path) {
        let Some(old) = self.loaded.remove(file) else { return };
        match old.kind {
            FileKind::Tool => self.host.unload(&old.name),
            FileKind::Middleware => self.host.unload_middleware(&old.name),
        };
        tracing::info!("unloaded {:?} {} ({} was removed)", old.kind, old.name, file.display());
        self.status.remove(file);
    }

    /// Records a failure of `file`'s bytes `sha256`; they are not tried
    /// again until the file changes.
    fn reject(&mut self, file: &Path, kind: FileKind, sha256: String, error: &str) {
        self.rejected.insert(file.to_path_buf(), sha256);
        self.fail(file, kind, error);
    }

    fn fail(&mut self, file: &Path, kind: FileKind, error: &str) {
        let serving = match self.loaded.get(file) {
            Some(old) => format!(" (the loaded version, sha256 {}, keeps serving)", old.sha256),
            None => String::new(),
        };
        tracing::warn!("reloading {} failed{serving}: {error}", file.display());
        if let Some(telemetry) = self.host.telemetry() {
            telemetry.metrics().reload_failures.inc();
        }
        if !self.loaded.contains_key(file) {
            self.status.insert(
                file.to_path_buf(),
                FileStatus {
                    file: file.to_path_buf(),
                    kind,
                    name: None,
                    sha256: String::new(),
                    grants: "nothing".into(),
                    last_error: None,
                },
            );
        }
        self.set_status(file, Some(error.to_string()));
    }

    /// Refreshes the status of `file` from what is loaded from it.
    fn set_status(&mut self, file: &Path, last_error: Option<String>) {
        let Some(loaded) = self.loaded.get(file) else {
            if let Some(status) = self.status.get_mut(file) {
                status.last_error = last_error;
            }
            return;
        };
        let grants = match loaded.kind {
            FileKind::Tool => match self.host.catalog().tools.info(&loaded.name) {
                Ok(info) => describe_grants(&self.host.grants_for(&info)),
                Err(_) => "nothing".into(),
            },
            FileKind::Middleware => describe_grants(&self.host.middleware_grants(&loaded.name)),
        };
        self.status.insert(
            file.to_path_buf(),
            FileStatus {
                file: file.to_path_buf(),
                kind: loaded.kind,
                name: Some(loaded.name.clone()),
                sha256: loaded.sha256.clone(),
                grants,
                last_error,
            },
        );
    }
}

/// The message of a version held back for declaring more: the diff, and
/// what approves and grants it.
fn held_back(file: &Path, name: &str, diff: &CapabilityDiff, lock: &Path) -> String {
    let flags = diff.grant_flags(name);
    let grant = if flags.is_empty() { String::new() } else { format!(" ({})", flags.join(" ")) };
    format!(
        "{} is held back: this version of '{name}' declares more than the capabilities its grants were given for:\n{diff}\nThe loaded version keeps serving with its grants; the new one gets nothing. To approve what it declares, run `toolhost lock` (it records each plugin's declaration in {}, which this host re-reads, then swaps it in with what [grants.{name}] gives it); to grant it more than the settings do now, add it to [grants.{name}] of toolhost.toml{grant} and restart toolhost serve",
        file.display(),
        lock.display()
    )
}

/// The SHA-256 of the lock file's bytes (`None`: none, or not a regular
/// file within its bound: reading it again says why).
fn lock_sha256(path: &Path) -> Option<String> {
    crate::own_file::read(path, crate::own_file::LOCK_BOUND).ok().map(|own| hex::encode(Sha256::digest(own.bytes)))
}

/// Whether a load failed because the bytes are not (yet) a whole component:
/// a file still being written.
fn unparsed(error: &LoadError) -> bool {
    matches!(error, LoadError::NotWasm(_) | LoadError::Compile(..))
}

/// A grant in words: `read /a, write /b, exec, state`, or `nothing`.
pub fn describe_grants(grants: &Grants) -> String {
    let mut parts: Vec<String> = grants
        .fs
        .roots()
        .iter()
        .map(|r| format!("{} {}", if r.write { "write" } else { "read" }, r.path.display()))
        .collect();
    if grants.process_exec {
        parts.push("exec".into());
    }
    if grants.state {
        parts.push("state".into());
    }
    if parts.is_empty() { "nothing".into() } else { parts.join(", ") }
}
