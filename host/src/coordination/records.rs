//! Small records with a lifetime that every process of a deployment reads
//! ([`RecordStore`]): what an MCP session was initialised with, so that a
//! replica that never saw the session can take its next request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::state::StateError;
use crate::sync::MutexExt;

/// Records by key, each with a lifetime renewed when it is read.
#[async_trait::async_trait]
pub trait RecordStore: Send + Sync + std::fmt::Debug + 'static {
    /// Stores `value` under `key` (no secret in it: keys are visible to
    /// whoever lists the store) for `ttl`, replacing what was there.
    async fn put_record(&self, key: &str, value: &str, ttl: Duration) -> Result<(), StateError>;
    /// The record under `key`, its lifetime renewed to `ttl`; `None` when
    /// there is none or its time was up.
    async fn record(&self, key: &str, ttl: Duration) -> Result<Option<String>, StateError>;
    /// Removes the record under `key`; whether there was one.
    async fn drop_record(&self, key: &str) -> Result<bool, StateError>;
}

/// Records kept in this process (tests, one process).
#[derive(Debug, Default)]
pub struct MemoryRecords {
    records: Mutex<HashMap<String, (String, Instant)>>,
}

#[async_trait::async_trait]
impl RecordStore for MemoryRecords {
    async fn put_record(&self, key: &str, value: &str, ttl: Duration) -> Result<(), StateError> {
        self.records.lock_unpoisoned().insert(key.to_string(), (value.to_string(), Instant::now() + ttl));
        Ok(())
    }

    async fn record(&self, key: &str, ttl: Duration) -> Result<Option<String>, StateError> {
        let now = Instant::now();
        let mut records = self.records.lock_unpoisoned();
        match records.get_mut(key) {
            Some((value, until)) if *until > now => {
                *until = now + ttl;
                Ok(Some(value.clone()))
            }
            Some(_) => {
                records.remove(key);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn drop_record(&self, key: &str) -> Result<bool, StateError> {
        let now = Instant::now();
        Ok(self.records.lock_unpoisoned().remove(key).is_some_and(|(_, until)| until > now))
    }
}
