//! Watching the plugin folders and component files of a host
//! ([`Toolhost::watch`]): file events, debounced, wake a task that runs one
//! reload pass ([`super::reload`]) and keeps the status of every file.
//!
//! The watch is on the folders, never on a file: editors, cargo and "copy
//! then rename" replace a file by rename, which gives it a new inode, and a
//! watch on the old one goes dead. Events are hints; the pass rescans.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use tokio::sync::{broadcast, mpsc, watch};

use super::loading::PendingLoad;
use super::reload::{FileStatus, Reloader, StatusReport};
use super::{Toolhost, WatchError};
use crate::sync::MutexExt;

/// How a [`Toolhost::watch`] waits for files to be complete.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Events closer together than this wake one pass (an editor's or
    /// cargo's burst of writes). Default 50 ms: a pass acts only on SHA-256
    /// changes and retries a file that does not parse yet, so a short
    /// debounce costs at most an extra pass, and it is most of the time from
    /// a write to the new version serving.
    pub debounce: Duration,
    /// How long a file that does not parse yet is retried before its error
    /// is reported: a copy or an editor may still be writing it. Default 2 s.
    pub settle: Duration,
    /// A file the watcher rewrites (atomically) with the status of every
    /// watched file after each pass, for `toolhost status`; `None`: none.
    pub status_file: Option<PathBuf>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self { debounce: Duration::from_millis(50), settle: Duration::from_secs(2), status_file: None }
    }
}

/// A running watch. Dropping it stops watching (loaded tools stay).
pub struct Watcher {
    _debouncer: notify_debouncer_full::Debouncer<notify::RecommendedWatcher, notify_debouncer_full::NoCache>,
    task: tokio::task::JoinHandle<()>,
    /// Polls the tags of `oci://` plugins (`None`: there are none).
    poll: Option<tokio::task::JoinHandle<()>>,
    status: Arc<Mutex<Vec<FileStatus>>>,
    passes: watch::Receiver<u64>,
    errors: broadcast::Sender<FileStatus>,
}

impl Watcher {
    /// Every watched file's status after the latest pass.
    pub fn status(&self) -> Vec<FileStatus> {
        self.status.lock_unpoisoned().clone()
    }

    /// The reload errors of the watched files as they stand, one line each
    /// (`FILE: error`), read afresh at each call: what a replica's
    /// heartbeat reports ([`crate::presence::PresenceOptions`]).
    pub fn error_lines(&self) -> super::presence::ReloadErrors {
        let status = self.status.clone();
        Arc::new(move || {
            status
                .lock_unpoisoned()
                .iter()
                .filter_map(|f| f.last_error.as_ref().map(|e| format!("{}: {e}", f.file.display())))
                .collect()
        })
    }

    /// The number of reload passes done, moved on after each one (a test
    /// or a front end waits on it to see a change through).
    pub fn passes(&self) -> watch::Receiver<u64> {
        self.passes.clone()
    }

    /// Every new reload error from now on, as the status of its file (a
    /// front end forwards them, e.g. as MCP log messages). A receiver that
    /// falls more than 64 behind misses the oldest.
    pub fn reload_errors(&self) -> broadcast::Receiver<FileStatus> {
        self.errors.subscribe()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(poll) = &self.poll {
            poll.abort();
        }
    }
}

impl Toolhost {
    /// Starts watching the plugin folders (`--plugins`, `plugin_dirs`), the
    /// plugin files and the middleware files of this host's settings: a new
    /// `.wasm` in a plugin folder is loaded, a changed file is loaded beside
    /// the running version and swapped in, a removed one is unloaded; a
    /// broken update leaves the old version serving (see
    /// [`Watcher::status`]). Runs on the current tokio runtime until the
    /// [`Watcher`] is dropped. A first pass runs once the plugins loading in
    /// the background since the host was built are done (see
    /// [`Toolhost::ready`]; until then the status file lists them as
    /// `loading`), so changes made since the host was built are picked up.
    pub async fn watch(&self, options: WatchOptions) -> Result<Watcher, WatchError> {
        let mut reloader = Reloader::new(self, options.settle);
        let (wake, mut woken) = mpsc::channel::<()>(1);
        let mut debouncer = new_debouncer(options.debounce, None, move |result: DebounceEventResult| {
            if let Err(errors) = &result {
                tracing::warn!("watching the plugin folders: {errors:?}");
            }
            // A full channel already holds a wake-up: the pass rescans all.
            let _ = wake.try_send(());
        })
        .map_err(|e| WatchError::Start(e.into()))?;
        for dir in &reloader.watch_dirs() {
            debouncer
                .watch(dir, RecursiveMode::NonRecursive)
                .map_err(|e| WatchError::Folder { dir: dir.clone(), cause: e.into() })?;
        }
        let status = Arc::new(Mutex::new(reloader.status()));
        let (passes_tx, passes) = watch::channel(0u64);
        let (errors, _) = broadcast::channel(64);
        let errors_tx = errors.clone();
        let shared = status.clone();
        let host = self.clone();
        let task = tokio::spawn(async move {
            // The plugins still loading in the background are the start's,
            // not a reload's: wait for them, so that no pass compiles one a
            // second time, then take stock of what they loaded (a failed one
            // is in the status, not reported again as a new error).
            let mut loads = host.load_changes();
            loop {
                let loading = host.pending_loads();
                if let Some(file) = &options.status_file {
                    write_status(file, &reloader.status(), &loading);
                }
                if loading.is_empty() || loads.changed().await.is_err() {
                    break;
                }
            }
            reloader = Reloader::new(&host, options.settle);
            *shared.lock_unpoisoned() = reloader.status();
            loop {
                let retry = reloader.reconcile().await;
                let now = reloader.status();
                if let Some(file) = &options.status_file {
                    write_status(file, &now, &host.pending_loads());
                }
                let before = std::mem::replace(&mut *shared.lock_unpoisoned(), now.clone());
                for status in now.into_iter().filter(|s| s.last_error.is_some()) {
                    let seen = before.iter().any(|b| b.file == status.file && b.last_error == status.last_error);
                    if !seen {
                        let _ = errors_tx.send(status);
                    }
                }
                passes_tx.send_modify(|n| *n += 1);
                let woke = match retry {
                    Some(at) => tokio::select! {
                        woke = woken.recv() => woke,
                        () = tokio::time::sleep_until(at.into()) => Some(()),
                    },
                    None => woken.recv().await,
                };
                if woke.is_none() {
                    return;
                }
            }
        });
        // A tag of an `oci://` plugin that moves is pulled beside the
        // running version and its link repointed: the pass above reloads it.
        let poll = (!self.catalog().oci_entries.is_empty()).then(|| {
            let host = self.clone();
            let skip = move |entry: &str| host.lock_file().is_some_and(|lock| lock.by_reference(entry).is_some());
            tokio::spawn(crate::oci::poll_tags(self.settings().clone(), self.catalog().oci_entries.clone(), skip))
        });
        Ok(Watcher { _debouncer: debouncer, task, poll, status, passes, errors })
    }
}

/// Writes the status file atomically (a temporary file, then a rename), so
/// a reader never sees half of it. A failure is logged, not fatal.
fn write_status(file: &std::path::Path, status: &[FileStatus], loading: &[PendingLoad]) {
    let write = || -> Result<()> {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = file.with_extension(format!("tmp{}", std::process::id()));
        let report = StatusReport { pid: std::process::id(), files: status.to_vec(), loading: loading.to_vec() };
        std::fs::write(&tmp, serde_json::to_vec_pretty(&report)?)?;
        std::fs::rename(&tmp, file)?;
        Ok(())
    };
    if let Err(e) = write() {
        tracing::warn!("could not write the reload status to {}: {e:#}", file.display());
    }
}
