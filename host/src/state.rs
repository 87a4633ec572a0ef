//! The agent state injected into tools that declare `state-injected`: the
//! read cache behind read-before-write, and named JSON values (the task
//! list). A session persists it to a file (`toolhost call --session NAME`),
//! which one process at a time holds ([`AgentState::open`]).

use crate::sync::MutexExt;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use crate::response::json_len;

/// At most this many files are cached (AgentScope's `max_cache_files`).
pub const MAX_CACHE_FILES: usize = 100;
/// At most this many bytes of file content are cached (AgentScope's
/// `max_cache_bytes`, 25 000 KiB).
pub const MAX_CACHE_BYTES: usize = 25_000 * 1024;

const FORMAT_VERSION: u32 = 1;

/// One file as a tool last read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedFile {
    /// The path exactly as the tool gave it.
    pub path: String,
    /// The file's mtime when it was read, in nanoseconds.
    pub mtime_ns: u64,
    /// The content as read (line endings normalised by the tool).
    pub content: String,
}

/// The serialisable part of the state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateData {
    /// File format version.
    pub version: u32,
    /// Read cache, least recently used first.
    pub read_cache: Vec<CachedFile>,
    /// Named JSON values (`tasks`, ...).
    pub values: BTreeMap<String, serde_json::Value>,
    /// The tool groups `reset_tools` activated, in the order it named them
    /// (AgentScope's `tool_context.activated_groups`). Kept apart from
    /// `values`, which tools with the `state` capability may write: no
    /// tool but `reset_tools` changes what the model is offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_groups: Vec<String>,
}

/// A `set` refused because the state would pass its [`StateBounds`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateFull {
    /// Too many keys.
    #[error(
        "the agent state already holds {limit} keys, the most it may; '{key}' was not stored (reuse a key, or raise limits.max_state_keys, --max-state-keys)"
    )]
    Keys {
        /// The key refused.
        key: String,
        /// The limit.
        limit: u64,
    },
    /// Too many bytes.
    #[error(
        "storing '{key}' would make the agent state {after} bytes, more than the {limit} bytes it may hold; store less, or raise limits.max_state_bytes (--max-state-bytes)"
    )]
    Bytes {
        /// The key refused.
        key: String,
        /// The state's size had it been stored.
        after: u64,
        /// The limit.
        limit: u64,
    },
}

/// The live agent state, shared by the calls of one session.
#[derive(Debug, Default)]
pub struct AgentState {
    data: Mutex<StateData>,
    /// The bytes of `data.values` ([`value_size`] summed), kept up to date
    /// under the `data` lock.
    value_bytes: AtomicU64,
    file: Option<PathBuf>,
    /// Holds `file` for this state alone while it lives (`None` without a
    /// file, or for a [`AgentState::peek`]).
    hold: Option<SessionHold>,
    /// Bumped each time [`AgentState::set_active_groups`] changes the set.
    group_changes: GroupChanges,
}

/// A session file held by one [`AgentState`]: an exclusive advisory lock
/// (`flock`) on `<file>.lock`, which holds the holder's pid for the refusal
/// of anyone else. The lock file stays when released (removing it would
/// race a process that opened it meanwhile).
///
/// The lock file is written, so it is opened as nothing but a regular file
/// of its own: not through a symbolic link (`O_NOFOLLOW`; a link planted
/// there would have its target truncated), not a FIFO or a terminal
/// (`O_NONBLOCK`, `O_NOCTTY`, then the descriptor's type checked), not a
/// hard link to another file (its link count).
#[derive(Debug)]
struct SessionHold {
    _lock: std::fs::File,
}

impl SessionHold {
    fn take(path: &Path) -> Result<Self> {
        use std::io::{Read as _, Seek as _, Write as _};
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        let lock_path = hold_path(path);
        if let Some(dir) = lock_path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let mut lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&lock_path)
            .with_context(|| {
                format!(
                    "opening the session lock {} (it must be a regular file, not a symbolic link; remove it)",
                    lock_path.display()
                )
            })?;
        let meta = lock.metadata().with_context(|| format!("reading {}", lock_path.display()))?;
        crate::own_file::check_regular(&meta, &lock_path)?;
        if meta.nlink() > 1 {
            bail!(
                "the session lock {} has {} hard links, so writing it could change another file; remove it",
                lock_path.display(),
                meta.nlink()
            );
        }
        match lock.try_lock() {
            Ok(()) => {
                // Best effort: the pid only names the holder in a refusal.
                let _ = lock.set_len(0).and_then(|()| lock.write_all(pid_line().as_bytes()));
                Ok(Self { _lock: lock })
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let name = path.file_stem().unwrap_or(path.as_os_str()).to_string_lossy();
                // The holder's pid, from the descriptor checked above.
                let mut text = String::new();
                let _ = lock.rewind().and_then(|()| (&mut lock).take(32).read_to_string(&mut text));
                let holder = text
                    .trim()
                    .parse::<u32>()
                    .map_or_else(|_| "another toolhost process".to_string(), |pid| format!("toolhost pid {pid}"));
                bail!(
                    "session {name} is in use by {holder} ({}): two processes on one session would each overwrite the \
                     other's updates; wait until it ends, or use another session name",
                    path.display()
                )
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(e).with_context(|| format!("locking the session {}", lock_path.display()))
            }
        }
    }
}

/// `<file>.lock` beside the session file `path`.
fn hold_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn pid_line() -> String {
    format!("{}\n", std::process::id())
}

/// Saves made by this process: one temporary name per save, so two saves
/// of the same session in one process never write the same file.
static SAVES: AtomicU64 = AtomicU64::new(0);

/// The largest session file read: the read cache's content bound and
/// room for the named values.
const MAX_SESSION_FILE_BYTES: u64 = 256 << 20;

/// The per-session change signal of the active tool groups: a `watch`
/// channel of a generation number (a slow reader sees the newest, never a
/// backlog).
#[derive(Debug)]
struct GroupChanges(tokio::sync::watch::Sender<u64>);

impl Default for GroupChanges {
    fn default() -> Self {
        Self(tokio::sync::watch::Sender::new(0))
    }
}

/// How large the named values may grow ([`AgentState::set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBounds {
    /// The most bytes of keys plus values as compact JSON.
    pub max_bytes: u64,
    /// The most keys.
    pub max_keys: u64,
}

impl StateBounds {
    /// No bound (for the host's own use and tests).
    pub const NONE: StateBounds = StateBounds { max_bytes: u64::MAX, max_keys: u64::MAX };
}

/// What one named value counts for against [`StateBounds::max_bytes`]: its
/// key and its compact JSON text.
pub fn value_size(key: &str, value: &serde_json::Value) -> u64 {
    key.len() as u64 + json_len(value)
}

impl AgentState {
    /// The session file this state is saved to (`None`: in memory only).
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// A fresh, in-memory state.
    pub fn new() -> Self {
        Self::with_data(StateData { version: FORMAT_VERSION, ..Default::default() }, None)
    }

    /// Opens the session file at `path` for this state alone, or starts
    /// empty if it does not exist. A file that exists but does not parse is
    /// an error, never a silent reset: the user may want what is in it.
    ///
    /// While the state lives it holds the file (an advisory lock on
    /// `<path>.lock`, released by the kernel when the process ends): a
    /// second open, from this process or another, is refused with the
    /// holder's pid. Two states over one file would each save their own
    /// copy, and the last save would silently drop the other's updates.
    pub fn open(path: &Path) -> Result<Self> {
        let hold = SessionHold::take(path)?;
        let mut state = Self::peek(path)?;
        state.hold = Some(hold);
        Ok(state)
    }

    /// The state in the session file at `path` as it is now, for reading
    /// only (`toolhost list --session`): not held, so a process that holds
    /// the file does not refuse it, and never saved.
    pub fn peek(path: &Path) -> Result<Self> {
        // A session file is read as toolhost's own files are: a FIFO or a
        // device in its place is refused, not waited on or read for ever.
        let bound = crate::own_file::Bound { max: MAX_SESSION_FILE_BYTES, name: "the most a session file may hold" };
        let data = match crate::own_file::read(path, bound).map(|own| own.bytes) {
            Ok(bytes) => {
                let data: StateData = serde_json::from_slice(&bytes).with_context(|| {
                    format!(
                        "the session state file {} is corrupt; fix it, or move it away to start a fresh session",
                        path.display()
                    )
                })?;
                if data.version != FORMAT_VERSION {
                    bail!(
                        "the session state file {} has format version {}, this toolhost reads version {FORMAT_VERSION}",
                        path.display(),
                        data.version
                    );
                }
                data
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                StateData { version: FORMAT_VERSION, ..Default::default() }
            }
            Err(e) => return Err(e).with_context(|| format!("reading the session state file {}", path.display())),
        };
        Ok(Self::with_data(data, Some(path.to_path_buf())))
    }

    fn with_data(data: StateData, file: Option<PathBuf>) -> Self {
        let bytes = data.values.iter().map(|(k, v)| value_size(k, v)).sum();
        Self {
            data: Mutex::new(data),
            value_bytes: AtomicU64::new(bytes),
            file,
            hold: None,
            group_changes: Default::default(),
        }
    }

    /// The active tool groups besides `basic`, in the order they were
    /// activated.
    pub fn active_groups(&self) -> Vec<String> {
        self.lock().active_groups.clone()
    }

    /// Makes `groups` the active tool groups (the final state, as
    /// `reset_tools` takes it); returns whether that changed the set, in
    /// which case every [`AgentState::group_changes`] receiver sees a new
    /// generation.
    pub fn set_active_groups(&self, groups: Vec<String>) -> bool {
        let mut data = self.lock();
        let same_set =
            data.active_groups.len() == groups.len() && data.active_groups.iter().all(|g| groups.contains(g));
        data.active_groups = groups;
        drop(data);
        if !same_set {
            self.group_changes.0.send_modify(|generation| *generation += 1);
        }
        !same_set
    }

    /// Tells of every change to this session's active tool groups from now
    /// on (its tool listing changes with them): front ends send the
    /// session's MCP client `notifications/tools/list_changed`.
    pub fn group_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.group_changes.0.subscribe()
    }

    /// The bytes the named values hold ([`value_size`] summed).
    pub fn value_bytes(&self) -> u64 {
        self.value_bytes.load(Ordering::Relaxed)
    }

    /// Writes the state to its session file atomically (temporary file,
    /// fsync, rename). A state without a file, or only peeked at, is not
    /// saved.
    pub fn save(&self) -> Result<()> {
        let (Some(path), Some(_)) = (&self.file, &self.hold) else { return Ok(()) };
        // Compact: pretty-printing nested values could make the file many
        // times the size the state bounds count.
        let json = serde_json::to_vec(&*self.lock())?;
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

    fn lock(&self) -> std::sync::MutexGuard<'_, StateData> {
        // A panic while holding the lock cannot leave the data half-updated
        // in a way that matters (each method does one whole update).
        self.data.lock_unpoisoned()
    }

    /// Records `content` for `path` read at `mtime_ns`, evicting the least
    /// recently used entries beyond the limits.
    pub fn cache_file(&self, path: &str, mtime_ns: u64, content: String) {
        let mut data = self.lock();
        data.read_cache.retain(|e| e.path != path);
        while data.read_cache.len() >= MAX_CACHE_FILES {
            data.read_cache.remove(0);
        }
        let mut total: usize = data.read_cache.iter().map(|e| e.content.len()).sum();
        while !data.read_cache.is_empty() && total + content.len() > MAX_CACHE_BYTES {
            total -= data.read_cache.remove(0).content.len();
        }
        if content.len() <= MAX_CACHE_BYTES {
            data.read_cache.push(CachedFile { path: path.to_string(), mtime_ns, content });
        }
    }

    /// The cached content of `path` if the file still has the mtime it was
    /// read at (`current_mtime_ns`; `None` when it cannot be stat'ed). A
    /// stale entry is dropped.
    pub fn cached_file(&self, path: &str, current_mtime_ns: Option<u64>) -> Option<String> {
        let mut data = self.lock();
        let index = data.read_cache.iter().position(|e| e.path == path)?;
        if Some(data.read_cache[index].mtime_ns) != current_mtime_ns {
            data.read_cache.remove(index);
            return None;
        }
        let entry = data.read_cache.remove(index);
        let content = entry.content.clone();
        data.read_cache.push(entry);
        Some(content)
    }

    /// Forgets `path`.
    pub fn forget_file(&self, path: &str) {
        self.lock().read_cache.retain(|e| e.path != path);
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<serde_json::Value> {
        self.lock().values.get(key).cloned()
    }

    /// Stores `value` under `key`, unless the named values would then pass
    /// `bounds` (a change that does not grow them is always taken).
    pub fn set(&self, key: &str, value: serde_json::Value, bounds: StateBounds) -> Result<(), StateFull> {
        let mut data = self.lock();
        self.insert(&mut data, key, value, bounds)
    }

    /// Stores `value` under `key` if the stored value equals `expected`
    /// (`None`: nothing stored) and the values stay within `bounds`;
    /// `Ok(false)` if it changed in between.
    pub fn compare_and_set(
        &self,
        key: &str,
        expected: Option<&serde_json::Value>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateFull> {
        let mut data = self.lock();
        if data.values.get(key) != expected {
            return Ok(false);
        }
        self.insert(&mut data, key, value, bounds).map(|()| true)
    }

    /// Inserts under the held lock, keeping `value_bytes` up to date.
    fn insert(
        &self,
        data: &mut StateData,
        key: &str,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<(), StateFull> {
        let old = data.values.get(key).map(|v| value_size(key, v));
        let now = self.value_bytes();
        let after = now - old.unwrap_or(0) + value_size(key, &value);
        if old.is_none() && data.values.len() as u64 >= bounds.max_keys {
            return Err(StateFull::Keys { key: key.to_string(), limit: bounds.max_keys });
        }
        if after > bounds.max_bytes && after > now {
            return Err(StateFull::Bytes { key: key.to_string(), after, limit: bounds.max_bytes });
        }
        data.values.insert(key.to_string(), value);
        self.value_bytes.store(after, Ordering::Relaxed);
        Ok(())
    }

    /// A copy of everything (for inspection and tests).
    pub fn snapshot(&self) -> StateData {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_entries_are_dropped() {
        let s = AgentState::new();
        s.cache_file("/a", 1, "x".into());
        assert_eq!(s.cached_file("/a", Some(1)).as_deref(), Some("x"));
        assert_eq!(s.cached_file("/a", Some(2)), None);
        assert_eq!(s.cached_file("/a", Some(1)), None, "a stale entry is gone for good");
    }

    #[test]
    fn lru_bound_on_file_count() {
        let s = AgentState::new();
        for i in 0..(MAX_CACHE_FILES + 5) {
            s.cache_file(&format!("/f{i}"), 1, String::new());
        }
        assert_eq!(s.snapshot().read_cache.len(), MAX_CACHE_FILES);
        assert_eq!(s.cached_file("/f0", Some(1)), None);
    }

    #[test]
    fn compare_and_set_refuses_a_changed_value() {
        let s = AgentState::new();
        let any = StateBounds::NONE;
        assert_eq!(s.compare_and_set("k", None, serde_json::json!(1), any), Ok(true));
        assert_eq!(s.compare_and_set("k", None, serde_json::json!(2), any), Ok(false), "someone wrote first");
        assert_eq!(s.compare_and_set("k", Some(&serde_json::json!(1)), serde_json::json!(2), any), Ok(true));
        assert_eq!(s.get("k"), Some(serde_json::json!(2)));
    }

    #[test]
    fn corrupt_file_is_reported_not_reset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, b"{not json").unwrap();
        let err = AgentState::open(&path).unwrap_err();
        assert!(format!("{err:#}").contains("corrupt"), "{err:#}");
        assert_eq!(std::fs::read(&path).unwrap(), b"{not json", "the file is left as it was");
    }

    #[test]
    fn active_groups_signal_a_change_of_the_set_only() {
        let s = AgentState::new();
        let mut changes = s.group_changes();
        assert!(s.set_active_groups(vec!["a".into(), "b".into()]));
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        assert!(!s.set_active_groups(vec!["b".into(), "a".into()]), "the same set in another order");
        assert!(!changes.has_changed().unwrap());
        assert_eq!(s.active_groups(), vec!["b".to_string(), "a".to_string()]);
        assert!(s.set_active_groups(Vec::new()));
        assert!(changes.has_changed().unwrap());
    }

    #[test]
    fn round_trips_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let s = AgentState::open(&path).unwrap();
        s.set("tasks", serde_json::json!([{"id": "1"}]), StateBounds::NONE).unwrap();
        s.set_active_groups(vec!["web".into()]);
        s.save().unwrap();
        drop(s);
        let again = AgentState::open(&path).unwrap();
        assert_eq!(again.get("tasks"), Some(serde_json::json!([{"id": "1"}])));
        assert_eq!(again.active_groups(), vec!["web".to_string()]);
    }

    #[test]
    fn a_session_file_is_held_by_one_state_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("work.json");
        let first = AgentState::open(&path).unwrap();
        first.set("k", serde_json::json!(1), StateBounds::NONE).unwrap();
        first.save().unwrap();

        let err = format!("{:#}", AgentState::open(&path).unwrap_err());
        let holder = format!("session work is in use by toolhost pid {}", std::process::id());
        assert!(err.contains(&holder) && err.contains("use another session name"), "{err}");

        // A peek reads what was saved and never writes.
        let peeked = AgentState::peek(&path).unwrap();
        assert_eq!(peeked.get("k"), Some(serde_json::json!(1)));
        peeked.set("k", serde_json::json!(2), StateBounds::NONE).unwrap();
        peeked.save().unwrap();
        drop(peeked);

        drop(first);
        let second = AgentState::open(&path).expect("free once the holder is gone");
        assert_eq!(second.get("k"), Some(serde_json::json!(1)), "the peek saved nothing");
    }

    /// What lies at the lock's name is opened only as a regular file of its
    /// own: a symbolic link or a hard link planted there is refused, and
    /// the file it points to is left as it was.
    #[test]
    fn a_link_planted_at_the_session_lock_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let path = dir.path().join("s.json");
        std::os::unix::fs::symlink(&victim, hold_path(&path)).unwrap();
        let err = format!("{:#}", AgentState::open(&path).unwrap_err());
        assert!(err.contains("not a symbolic link"), "{err}");
        std::fs::remove_file(hold_path(&path)).unwrap();
        std::fs::hard_link(&victim, hold_path(&path)).unwrap();
        let err = format!("{:#}", AgentState::open(&path).unwrap_err());
        assert!(err.contains("hard links"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    /// A FIFO in place of the session file or its lock is refused at once
    /// (a plain open or read of one waits for a writer for ever).
    #[test]
    fn a_fifo_in_place_of_the_session_or_its_lock_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let mkfifo = |p: &Path| {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: mkfifo with a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        };
        let path = dir.path().join("s.json");
        mkfifo(&path);
        let err = format!("{:#}", AgentState::open(&path).unwrap_err());
        assert!(err.contains("a FIFO (named pipe), not a regular file"), "{err}");
        let other = dir.path().join("t.json");
        mkfifo(&hold_path(&other));
        let err = format!("{:#}", AgentState::open(&other).unwrap_err());
        assert!(err.contains("a FIFO (named pipe), not a regular file"), "{err}");
    }

    /// A save writes a new temporary file only: a link planted at the
    /// temporary names is not written through.
    #[test]
    fn a_save_does_not_write_through_a_link_at_its_temporary_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let path = dir.path().join("s.json");
        let state = AgentState::open(&path).unwrap();
        state.set("k", serde_json::json!(1), StateBounds::NONE).unwrap();
        let next = SAVES.load(Ordering::Relaxed);
        for n in next..next + 1000 {
            let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
            std::os::unix::fs::symlink(&victim, tmp).unwrap();
        }
        let err = format!("{:#}", state.save().unwrap_err());
        assert!(err.contains("previous state is kept"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!path.exists(), "nothing was saved through the link");
    }

    #[test]
    fn the_named_values_are_bounded_in_bytes_and_keys() {
        let s = AgentState::new();
        let bounds = StateBounds { max_bytes: 100, max_keys: 3 };
        let big = serde_json::json!("x".repeat(40));
        s.set("a", big.clone(), bounds).unwrap();
        s.set("b", big.clone(), bounds).unwrap();
        assert_eq!(s.value_bytes(), 2 * (1 + 42));
        let err = s.set("c", big.clone(), bounds).unwrap_err();
        assert!(err.to_string().contains("limits.max_state_bytes"), "{err}");
        assert!(s.get("c").is_none());
        // Replacing a value with a smaller one is always taken.
        s.set("a", serde_json::json!(1), bounds).unwrap();
        s.set("c", serde_json::json!(1), bounds).unwrap();
        let err = s.compare_and_set("d", None, serde_json::json!(1), bounds).unwrap_err();
        assert!(err.to_string().contains("limits.max_state_keys"), "{err}");
        assert_eq!(s.snapshot().values.len(), 3);
        assert_eq!(s.value_bytes(), 2 + 2 + 43);
    }
}
