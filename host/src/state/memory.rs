//! [`MemoryStore`]: agent states in this process's memory, each made
//! empty on first use and dropped when its session ends.

use std::collections::HashMap;
use std::sync::Mutex;

use super::data::Slot;
use super::{CachedFile, StateBounds, StateData, StateError, StateKey, StateStore};
use crate::sync::MutexExt;

/// Agent states in this process's memory: one `serve` process, one
/// `toolhost call`. Nothing outlives the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    slots: Mutex<HashMap<StateKey, Slot>>,
}

impl MemoryStore {
    /// A store holding `data` as the state `key` (a read-only copy of a
    /// saved session, for instance).
    pub fn with_state(key: StateKey, data: StateData) -> Self {
        Self { slots: Mutex::new(HashMap::from([(key, Slot::with_data(data))])) }
    }

    /// How many states it holds now.
    pub fn len(&self) -> usize {
        self.slots.lock_unpoisoned().len()
    }

    /// Whether it holds no state.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` on the state `key`, made empty on first use. A panic in `f`
    /// cannot leave a state half-updated in a way that matters: each
    /// operation is one whole update.
    fn with<T>(&self, key: &StateKey, f: impl FnOnce(&mut Slot) -> T) -> T {
        let mut slots = self.slots.lock_unpoisoned();
        f(slots.entry(key.clone()).or_default())
    }
}

#[async_trait::async_trait]
impl StateStore for MemoryStore {
    async fn open(&self, key: &StateKey) -> Result<(), StateError> {
        self.with(key, |_| ());
        Ok(())
    }

    async fn get(&self, key: &StateKey, name: &str) -> Result<Option<serde_json::Value>, StateError> {
        Ok(self.with(key, |slot| slot.data.values.get(name).cloned()))
    }

    async fn set(
        &self,
        key: &StateKey,
        name: &str,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<(), StateError> {
        self.with(key, |slot| slot.insert(name, None, value, bounds)).map(drop).map_err(Into::into)
    }

    async fn compare_and_set(
        &self,
        key: &StateKey,
        name: &str,
        expected: Option<serde_json::Value>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateError> {
        Ok(self.with(key, |slot| slot.insert(name, Some(expected.as_ref()), value, bounds))?)
    }

    async fn cache_file(&self, key: &StateKey, entry: CachedFile) -> Result<(), StateError> {
        self.with(key, |slot| slot.cache_file(entry));
        Ok(())
    }

    async fn cached_file(&self, key: &StateKey, path: &str) -> Result<Option<CachedFile>, StateError> {
        Ok(self.with(key, |slot| slot.cached_file(path)))
    }

    async fn forget_file(&self, key: &StateKey, path: &str) -> Result<(), StateError> {
        self.with(key, |slot| slot.forget_file(path));
        Ok(())
    }

    async fn active_groups(&self, key: &StateKey) -> Result<Vec<String>, StateError> {
        Ok(self.with(key, |slot| slot.data.active_groups.clone()))
    }

    async fn set_active_groups(&self, key: &StateKey, groups: Vec<String>) -> Result<bool, StateError> {
        Ok(self.with(key, |slot| {
            let changed = slot.set_active_groups(groups);
            if changed {
                slot.signal_group_change();
            }
            changed
        }))
    }

    fn group_changes(&self, key: &StateKey) -> tokio::sync::watch::Receiver<u64> {
        self.with(key, |slot| slot.subscribe())
    }

    async fn snapshot(&self, key: &StateKey) -> Result<StateData, StateError> {
        Ok(self.with(key, |slot| slot.data.clone()))
    }

    async fn end(&self, key: &StateKey) -> Result<(), StateError> {
        self.slots.lock_unpoisoned().remove(key);
        Ok(())
    }

    fn location(&self, _key: &StateKey) -> Option<String> {
        None
    }
}
