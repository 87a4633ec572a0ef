//! [`FileStore`]: named sessions (`toolhost call --session NAME`,
//! `serve --session NAME`) as files in the state folder, `<NAME>.json`,
//! each held by one process at a time and rewritten whole (temporary file,
//! fsync, rename) at each change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, Result, bail};

use super::data::{FORMAT_VERSION, Slot};
use super::{CachedFile, StateBounds, StateData, StateError, StateKey, StateStore};
use crate::hold::Hold;
use crate::sync::MutexExt;

/// Named sessions as files in one folder. A session is held by this store
/// from its first use until [`StateStore::end`] or the store is dropped
/// (an advisory lock on `<NAME>.json.lock`, released by the kernel when
/// the process ends): a second holder, in this process or another, is
/// refused with the holder's pid. Two holders would each save their own
/// copy, and the last save would silently drop the other's updates.
///
/// A change is kept only once it is on disk: a save that fails (a full
/// disk) leaves both the file and the state as they were.
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    held: Mutex<HashMap<StateKey, Held>>,
}

/// One session this store holds.
#[derive(Debug)]
struct Held {
    slot: Slot,
    path: PathBuf,
    _hold: Hold,
}

impl FileStore {
    /// A store of the sessions in `dir` (created when a session is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into(), held: Mutex::default() }
    }

    /// The file of the session `key` (a named one).
    pub fn path(&self, key: &StateKey) -> Result<PathBuf, StateError> {
        let name = key.session_name().ok_or_else(|| {
            StateError::Refused(format!("a file store keeps named sessions only, not the state {key}"))
        })?;
        Ok(self.dir.join(format!("{name}.json")))
    }

    /// The session `key` as saved now, without holding it (`toolhost list
    /// --session`): empty when it was never saved.
    pub fn saved(&self, key: &StateKey) -> Result<StateData, StateError> {
        read_session(&self.path(key)?).map_err(refused)
    }

    /// Runs `f` on the held session `key`, holding it first.
    fn held<T>(&self, key: &StateKey, f: impl FnOnce(&mut Held) -> Result<T, StateError>) -> Result<T, StateError> {
        let mut held = self.held.lock_unpoisoned();
        let session = match held.entry(key.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let path = self.path(key)?;
                let hold = hold_session(&path).map_err(refused)?;
                let data = read_session(&path).map_err(refused)?;
                e.insert(Held { slot: Slot::with_data(data), path, _hold: hold })
            }
        };
        f(session)
    }

    /// Runs the change `f` on the session `key`; when `f` says it changed
    /// the state, saves it, and puts the state back if the save fails.
    fn with<T>(
        &self,
        key: &StateKey,
        f: impl FnOnce(&mut Slot) -> Result<(T, bool), StateError>,
    ) -> Result<T, StateError> {
        self.held(key, |session| {
            let before = session.slot.data.clone();
            let (out, changed) = f(&mut session.slot)?;
            if changed && let Err(e) = save(&session.path, &session.slot.data) {
                session.slot.restore(before);
                return Err(StateError::Unavailable(format!("{e:#}")));
            }
            Ok(out)
        })
    }

    /// Runs `f` on the session `key` without changing it (no copy, no save).
    fn read<T>(&self, key: &StateKey, f: impl FnOnce(&mut Slot) -> T) -> Result<T, StateError> {
        self.held(key, |session| Ok(f(&mut session.slot)))
    }
}

fn refused(e: anyhow::Error) -> StateError {
    StateError::Refused(format!("{e:#}"))
}

#[async_trait::async_trait]
impl StateStore for FileStore {
    async fn open(&self, key: &StateKey) -> Result<(), StateError> {
        self.read(key, |_| ())
    }

    async fn get(&self, key: &StateKey, name: &str) -> Result<Option<serde_json::Value>, StateError> {
        self.read(key, |slot| slot.data.values.get(name).cloned())
    }

    async fn set(
        &self,
        key: &StateKey,
        name: &str,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<(), StateError> {
        self.with(key, |slot| Ok(((), slot.insert(name, None, value, bounds)?)))
    }

    async fn compare_and_set(
        &self,
        key: &StateKey,
        name: &str,
        expected: Option<serde_json::Value>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateError> {
        self.with(key, |slot| {
            let stored = slot.insert(name, Some(expected.as_ref()), value, bounds)?;
            Ok((stored, stored))
        })
    }

    async fn cache_file(&self, key: &StateKey, entry: CachedFile) -> Result<(), StateError> {
        self.with(key, |slot| {
            slot.cache_file(entry);
            Ok(((), true))
        })
    }

    async fn cached_file(&self, key: &StateKey, path: &str) -> Result<Option<CachedFile>, StateError> {
        // The use order is saved with the next change, not for a read.
        self.read(key, |slot| slot.cached_file(path))
    }

    async fn forget_file(&self, key: &StateKey, path: &str) -> Result<(), StateError> {
        self.with(key, |slot| {
            let before = slot.data.read_cache.len();
            slot.forget_file(path);
            Ok(((), slot.data.read_cache.len() != before))
        })
    }

    async fn active_groups(&self, key: &StateKey) -> Result<Vec<String>, StateError> {
        self.read(key, |slot| slot.data.active_groups.clone())
    }

    async fn set_active_groups(&self, key: &StateKey, groups: Vec<String>) -> Result<bool, StateError> {
        let changed = self.with(key, |slot| {
            let before = slot.data.active_groups.clone();
            let changed = slot.set_active_groups(groups);
            Ok((changed, slot.data.active_groups != before))
        })?;
        if changed {
            self.read(key, |slot| slot.signal_group_change())?;
        }
        Ok(changed)
    }

    fn group_changes(&self, key: &StateKey) -> tokio::sync::watch::Receiver<u64> {
        // A session that cannot be held has no changes to tell: a receiver
        // whose sender is gone.
        self.read(key, |slot| slot.subscribe()).unwrap_or_else(|_| tokio::sync::watch::channel(0).1)
    }

    async fn snapshot(&self, key: &StateKey) -> Result<StateData, StateError> {
        self.read(key, |slot| slot.data.clone())
    }

    async fn end(&self, key: &StateKey) -> Result<(), StateError> {
        self.held.lock_unpoisoned().remove(key);
        Ok(())
    }

    fn location(&self, key: &StateKey) -> Option<String> {
        self.path(key).ok().map(|p| p.display().to_string())
    }
}

/// The session file at `path`, or an empty state when there is none. A
/// file that exists but does not parse is an error, never a silent reset:
/// the user may want what is in it. A file of the first format is read
/// without its read cache (the next write asks for a fresh read).
fn read_session(path: &Path) -> Result<StateData> {
    // A session file is read as toolhost's own files are: a FIFO or a
    // device in its place is refused, not waited on or read for ever.
    let bound = crate::own_file::Bound { max: MAX_SESSION_FILE_BYTES, name: "the most a session file may hold" };
    let bytes = match crate::own_file::read(path, bound) {
        Ok(own) => own.bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StateData::empty()),
        Err(e) => return Err(e).with_context(|| format!("reading the session state file {}", path.display())),
    };
    let corrupt = || {
        format!(
            "the session state file {} is corrupt; fix it, or move it away to start a fresh session",
            path.display()
        )
    };
    let mut json: serde_json::Value = serde_json::from_slice(&bytes).with_context(corrupt)?;
    match json.get("version").and_then(serde_json::Value::as_u64) {
        Some(1) => {
            json["version"] = FORMAT_VERSION.into();
            json["read_cache"] = serde_json::json!([]);
        }
        Some(v) if v == u64::from(FORMAT_VERSION) => {}
        other => bail!(
            "the session state file {} has format version {}, this toolhost reads versions 1 and {FORMAT_VERSION}",
            path.display(),
            other.map_or_else(|| "none".to_string(), |v| v.to_string())
        ),
    }
    serde_json::from_value(json).with_context(corrupt)
}

/// Writes `data` to `path` atomically (temporary file, fsync, rename).
fn save(path: &Path, data: &StateData) -> Result<()> {
    // Compact: pretty-printing nested values could make the file many
    // times the size the state bounds count.
    let json = serde_json::to_vec(data)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let n = SAVES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
    let written = (|| {
        // A new file only: a link planted at the temporary name is not
        // written through.
        let mut file = std::fs::File::create_new(&tmp)?;
        std::io::Write::write_all(&mut file, &json)?;
        file.sync_all()
    })();
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        // A full disk must not leave a half-written temporary behind.
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::Error::new(e).context(format!(
            "saving session {}: the previous state is kept (free space on its disk or fix its permissions)",
            path.display()
        )));
    }
    if let Some(dir) = path.parent().and_then(|d| std::fs::File::open(d).ok()) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// A session file held by one [`FileStore`] ([`Hold`]): a second process
/// is refused at open, naming the holder.
fn hold_session(path: &Path) -> Result<Hold> {
    match Hold::take(path).context("holding the session")? {
        Ok(hold) => Ok(hold),
        Err(holder) => {
            let name = path.file_stem().unwrap_or(path.as_os_str()).to_string_lossy();
            bail!(
                "session {name} is in use by {holder} ({}): two processes on one session would each overwrite the \
                 other's updates; wait until it ends, use another session name, or share sessions \
                 between processes with [state] store = \"redis\"",
                path.display()
            )
        }
    }
}

/// Saves made by this process: one temporary name per save, so two saves
/// of the same session in one process never write the same file.
static SAVES: AtomicU64 = AtomicU64::new(0);

/// The largest session file read: room for the named values (a file of
/// the first format also held the read cache's contents).
const MAX_SESSION_FILE_BYTES: u64 = 256 << 20;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::state::AgentState;

    fn session(dir: &Path, name: &str) -> (Arc<FileStore>, StateKey) {
        (Arc::new(FileStore::new(dir)), StateKey::named(name).unwrap())
    }

    #[tokio::test]
    async fn a_corrupt_file_is_reported_not_reset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.json"), b"{not json").unwrap();
        let (store, key) = session(dir.path(), "s");
        let err = AgentState::open(store, key).await.unwrap_err().to_string();
        assert!(err.contains("corrupt"), "{err}");
        assert_eq!(std::fs::read(dir.path().join("s.json")).unwrap(), b"{not json", "the file is left as it was");
    }

    #[tokio::test]
    async fn each_change_is_saved_and_read_back_by_the_next_holder() {
        let dir = tempfile::tempdir().unwrap();
        let (store, key) = session(dir.path(), "s");
        let s = AgentState::open(store.clone(), key.clone()).await.unwrap();
        s.set("tasks", serde_json::json!([{"id": "1"}]), StateBounds::NONE).await.unwrap();
        s.set_active_groups(vec!["web".into()]).await.unwrap();
        drop((s, store));
        let (store, key) = session(dir.path(), "s");
        let again = AgentState::open(store, key).await.unwrap();
        assert_eq!(again.get("tasks").await.unwrap(), Some(serde_json::json!([{"id": "1"}])));
        assert_eq!(again.active_groups().await.unwrap(), vec!["web".to_string()]);
    }

    /// A file of the first format (read cache with contents) is read
    /// without its read cache, its values kept.
    #[tokio::test]
    async fn a_first_format_file_keeps_its_values_and_drops_its_read_cache() {
        let dir = tempfile::tempdir().unwrap();
        let old = serde_json::json!({"version": 1, "read_cache": [{"path": "/a", "mtime_ns": 1, "content": "x"}],
            "values": {"tasks": [1]}, "active_groups": ["web"]});
        std::fs::write(dir.path().join("old.json"), old.to_string()).unwrap();
        let (store, key) = session(dir.path(), "old");
        let data = AgentState::open(store, key).await.unwrap().snapshot().await.unwrap();
        assert_eq!((data.version, data.read_cache.len()), (FORMAT_VERSION, 0));
        assert_eq!(data.values["tasks"], serde_json::json!([1]));
        assert_eq!(data.active_groups, vec!["web".to_string()]);
    }

    #[tokio::test]
    async fn a_session_file_is_held_by_one_store_until_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let (first, key) = session(dir.path(), "work");
        let state = AgentState::open(first.clone(), key.clone()).await.unwrap();
        state.set("k", serde_json::json!(1), StateBounds::NONE).await.unwrap();

        let (second, _) = session(dir.path(), "work");
        let err = AgentState::open(second.clone(), key.clone()).await.unwrap_err().to_string();
        let holder = format!("session work is in use by toolhost pid {}", std::process::id());
        assert!(err.contains(&holder) && err.contains("store = \"redis\""), "{err}");
        let err = second.set(&key, "k", serde_json::json!(2), StateBounds::NONE).await.unwrap_err();
        assert!(matches!(err, StateError::Refused(_)), "{err}");

        // What is saved can be read without holding it.
        assert_eq!(second.saved(&key).unwrap().values["k"], serde_json::json!(1));

        first.end(&key).await.unwrap();
        let again = AgentState::open(second, key).await.expect("free once the holder ended it");
        assert_eq!(again.get("k").await.unwrap(), Some(serde_json::json!(1)), "nothing else was saved");
    }

    #[tokio::test]
    async fn only_named_sessions_are_kept_in_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path());
        let err = store.open(&StateKey::sessionless()).await.unwrap_err().to_string();
        assert!(err.contains("named sessions only"), "{err}");
    }

    /// What lies at the lock's name is opened only as a regular file of its
    /// own: a symbolic link or a hard link planted there is refused, and
    /// the file it points to is left as it was.
    #[tokio::test]
    async fn a_link_planted_at_the_session_lock_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let lock = toolhost_core::own_file::lock_path(&dir.path().join("s.json"));
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        let (store, key) = session(dir.path(), "s");
        let err = store.open(&key).await.unwrap_err().to_string();
        assert!(err.contains("not a symbolic link"), "{err}");
        std::fs::remove_file(&lock).unwrap();
        std::fs::hard_link(&victim, &lock).unwrap();
        let err = store.open(&key).await.unwrap_err().to_string();
        assert!(err.contains("hard links"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    /// A FIFO in place of the session file or its lock is refused at once
    /// (a plain open or read of one waits for a writer for ever).
    #[tokio::test]
    async fn a_fifo_in_place_of_the_session_or_its_lock_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let mkfifo = |p: &Path| {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: mkfifo with a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        };
        mkfifo(&dir.path().join("s.json"));
        mkfifo(&toolhost_core::own_file::lock_path(&dir.path().join("t.json")));
        let store = FileStore::new(dir.path());
        for name in ["s", "t"] {
            let err = store.open(&StateKey::named(name).unwrap()).await.unwrap_err().to_string();
            assert!(err.contains("a FIFO (named pipe), not a regular file"), "{name}: {err}");
        }
    }

    /// A save writes a new temporary file only: a link planted at the
    /// temporary names is not written through, and the change is not kept.
    #[tokio::test]
    async fn a_save_does_not_write_through_a_link_at_its_temporary_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let path = dir.path().join("s.json");
        let (store, key) = session(dir.path(), "s");
        let state = AgentState::open(store, key).await.unwrap();
        let next = SAVES.load(Ordering::Relaxed);
        for n in next..next + 1000 {
            let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
            std::os::unix::fs::symlink(&victim, tmp).unwrap();
        }
        let err = state.set("k", serde_json::json!(1), StateBounds::NONE).await.unwrap_err();
        assert!(matches!(&err, StateError::Unavailable(m) if m.contains("previous state is kept")), "{err}");
        assert_eq!(state.get("k").await.unwrap(), None, "a change not saved is not kept");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!path.exists(), "nothing was saved through the link");
    }
}
