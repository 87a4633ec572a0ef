//! One agent state as plain data ([`StateData`]), and the state as the
//! in-process stores keep it ([`Slot`]): the bounded insert, the
//! compare-and-set and the read cache's eviction, written once for both.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{MAX_CACHE_BYTES, MAX_CACHE_FILES, StateBounds, StateFull, value_size};

/// The version of [`StateData`] this toolhost writes.
pub(crate) const FORMAT_VERSION: u32 = 2;

/// How the content a tool cached follows from the file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadForm {
    /// The bytes as UTF-8 text, invalid sequences replaced.
    Text,
    /// That text with `\r\n` and lone `\r` made `\n` (as Read records it).
    Normalised,
}

impl ReadForm {
    /// The content a tool read from a file holding `bytes`.
    pub fn content(self, bytes: &[u8]) -> String {
        let text = String::from_utf8_lossy(bytes);
        match self {
            ReadForm::Text => text.into_owned(),
            ReadForm::Normalised => text.replace("\r\n", "\n").replace('\r', "\n"),
        }
    }

    /// How `content` follows from `bytes`, if it does: what the host
    /// accepts as a tool's read of a file.
    pub fn of(content: &str, bytes: &[u8]) -> Option<ReadForm> {
        [ReadForm::Text, ReadForm::Normalised].into_iter().find(|form| form.content(bytes) == content)
    }
}

/// What a tool read of one file: enough to tell whether the file is still
/// what was read and to give the same content again, and no content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachedFile {
    /// The path exactly as the tool gave it.
    pub path: String,
    /// The file's mtime when it was read, in nanoseconds.
    pub mtime_ns: u64,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes, in hex.
    pub sha256: String,
    /// How the tool's content follows from the bytes.
    pub form: ReadForm,
}

/// One agent state, as a file store saves it and a snapshot shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateData {
    /// Format version.
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

impl StateData {
    /// An empty state of the current format.
    pub fn empty() -> Self {
        Self { version: FORMAT_VERSION, ..Default::default() }
    }
}

/// A state as an in-process store keeps it: its data, the bytes its values
/// count for (kept up to date), and its group-change signal.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) data: StateData,
    value_bytes: u64,
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Slot {
    fn default() -> Self {
        Self::with_data(StateData::empty())
    }
}

impl Slot {
    pub(crate) fn with_data(data: StateData) -> Self {
        let value_bytes = data.values.iter().map(|(k, v)| value_size(k, v)).sum();
        Self { data, value_bytes, changes: tokio::sync::watch::Sender::new(0) }
    }

    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Stores `value` under `name` when the stored value equals `expected`
    /// (`Some(None)`: nothing stored; `None`: whatever is stored), within
    /// `bounds`; `Ok(false)` when the stored value differs.
    pub(crate) fn insert(
        &mut self,
        name: &str,
        expected: Option<Option<&serde_json::Value>>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateFull> {
        let current = self.data.values.get(name);
        if let Some(expected) = expected
            && current != expected
        {
            return Ok(false);
        }
        let old = current.map(|v| value_size(name, v));
        let now = self.value_bytes;
        let after = now - old.unwrap_or(0) + value_size(name, &value);
        if old.is_none() && self.data.values.len() as u64 >= bounds.max_keys {
            return Err(StateFull::Keys { key: name.to_string(), limit: bounds.max_keys });
        }
        if after > bounds.max_bytes && after > now {
            return Err(StateFull::Bytes { key: name.to_string(), after, limit: bounds.max_bytes });
        }
        self.data.values.insert(name.to_string(), value);
        self.value_bytes = after;
        Ok(true)
    }

    /// Records `entry`, evicting the least recently used beyond the bounds
    /// (a file larger than all of them is not recorded).
    pub(crate) fn cache_file(&mut self, entry: CachedFile) {
        let cache = &mut self.data.read_cache;
        cache.retain(|e| e.path != entry.path);
        if entry.size > MAX_CACHE_BYTES {
            return;
        }
        while cache.len() >= MAX_CACHE_FILES {
            cache.remove(0);
        }
        let mut total: u64 = cache.iter().map(|e| e.size).sum();
        while !cache.is_empty() && total + entry.size > MAX_CACHE_BYTES {
            total -= cache.remove(0).size;
        }
        cache.push(entry);
    }

    /// The record of `path`, moved to the most recently used end.
    pub(crate) fn cached_file(&mut self, path: &str) -> Option<CachedFile> {
        let cache = &mut self.data.read_cache;
        let index = cache.iter().position(|e| e.path == path)?;
        let entry = cache.remove(index);
        cache.push(entry.clone());
        Some(entry)
    }

    pub(crate) fn forget_file(&mut self, path: &str) {
        self.data.read_cache.retain(|e| e.path != path);
    }

    /// Makes `groups` the active set; `true` when the set changed (the
    /// store then calls [`Slot::signal_group_change`] once the change is
    /// kept).
    pub(crate) fn set_active_groups(&mut self, groups: Vec<String>) -> bool {
        let active = &self.data.active_groups;
        let same_set = active.len() == groups.len() && active.iter().all(|g| groups.contains(g));
        self.data.active_groups = groups;
        !same_set
    }

    /// Gives every group-change receiver a new generation.
    pub(crate) fn signal_group_change(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }

    /// Puts `data` back (a change that could not be kept).
    pub(crate) fn restore(&mut self, data: StateData) {
        self.value_bytes = data.values.iter().map(|(k, v)| value_size(k, v)).sum();
        self.data = data;
    }
}
