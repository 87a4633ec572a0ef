//! The agent state injected into tools that declare `state-injected`: the
//! read cache behind read-before-write, and named JSON values (the task
//! list). A session persists it to a file (`toolhost call --session NAME`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

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
}

/// The live agent state, shared by the calls of one session.
#[derive(Debug, Default)]
pub struct AgentState {
    data: Mutex<StateData>,
    file: Option<PathBuf>,
}

impl AgentState {
    /// A fresh, in-memory state.
    pub fn new() -> Self {
        Self { data: Mutex::new(StateData { version: FORMAT_VERSION, ..Default::default() }), file: None }
    }

    /// Opens the session file at `path`, or starts empty if it does not
    /// exist. A file that exists but does not parse is an error, never a
    /// silent reset: the user may want what is in it.
    pub fn open(path: &Path) -> Result<Self> {
        let data = match std::fs::read(path) {
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
        Ok(Self { data: Mutex::new(data), file: Some(path.to_path_buf()) })
    }

    /// Writes the state to its session file atomically (temporary file,
    /// fsync, rename). A state without a file is not saved.
    pub fn save(&self) -> Result<()> {
        let Some(path) = &self.file else { return Ok(()) };
        let json = serde_json::to_vec_pretty(&*self.lock())?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &json).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::File::open(&tmp).and_then(|f| f.sync_all()).ok();
        std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StateData> {
        // A panic while holding the lock cannot leave the data half-updated
        // in a way that matters (each method does one whole update).
        self.data.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Stores `value` under `key`.
    pub fn set(&self, key: &str, value: serde_json::Value) {
        self.lock().values.insert(key.to_string(), value);
    }

    /// Stores `value` under `key` if the stored value equals `expected`
    /// (`None`: nothing stored); false if it changed in between.
    pub fn compare_and_set(&self, key: &str, expected: Option<&serde_json::Value>, value: serde_json::Value) -> bool {
        let mut data = self.lock();
        if data.values.get(key) != expected {
            return false;
        }
        data.values.insert(key.to_string(), value);
        true
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
        assert!(s.compare_and_set("k", None, serde_json::json!(1)));
        assert!(!s.compare_and_set("k", None, serde_json::json!(2)), "someone wrote first");
        assert!(s.compare_and_set("k", Some(&serde_json::json!(1)), serde_json::json!(2)));
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
    fn round_trips_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let s = AgentState::open(&path).unwrap();
        s.set("tasks", serde_json::json!([{"id": "1"}]));
        s.save().unwrap();
        let again = AgentState::open(&path).unwrap();
        assert_eq!(again.get("tasks"), Some(serde_json::json!([{"id": "1"}])));
    }
}
