//! The replicas of a deployment ([`ReplicaRegistry`]): each serving process
//! says it is alive, and what it serves under which policy, every few
//! seconds; `toolhost status` lists the live ones from any machine, and a
//! replica that starts warns of the live ones whose policy differs from its
//! own (they refuse each other's questions).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::state::StateError;
use crate::sync::MutexExt;

/// What one replica says of itself at each heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplicaRecord {
    /// Its replica id (`serve --replica-id`).
    pub id: String,
    /// Random for each process: two live processes under one id differ
    /// here.
    pub instance: String,
    /// The machine's host name.
    pub host: String,
    /// The process id on that machine.
    pub pid: u32,
    /// toolhost's version.
    pub version: String,
    /// The SHA-256 of the tool set it serves (names and component digests).
    pub tools: String,
    /// The SHA-256 of each part of its permission policy (`[permissions]`
    /// keys and `grants`), by part.
    pub policy: BTreeMap<String, String>,
    /// The reload errors of its watched files, one line each.
    #[serde(default)]
    pub reload_errors: Vec<String>,
    /// Another live process it saw under the same id (its host and pid),
    /// while that lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clash: Option<String>,
    /// When it started, UTC (RFC 3339).
    pub started: String,
    /// Its last heartbeat, UTC (RFC 3339).
    pub heartbeat: String,
}

impl ReplicaRecord {
    /// `host pid N`, how messages name the process.
    pub fn process(&self) -> String {
        format!("{} pid {}", self.host, self.pid)
    }

    /// The parts of the policy that differ between `self` and `other`
    /// (present in one only, or with another digest), sorted.
    pub fn policy_differences(&self, other: &ReplicaRecord) -> Vec<String> {
        let parts: std::collections::BTreeSet<&String> = self.policy.keys().chain(other.policy.keys()).collect();
        parts.into_iter().filter(|p| self.policy.get(*p) != other.policy.get(*p)).cloned().collect()
    }
}

/// Where the replicas of a deployment register.
#[async_trait::async_trait]
pub trait ReplicaRegistry: Send + Sync + std::fmt::Debug + 'static {
    /// Records `record` as alive for `ttl`. Returns the record of another
    /// live process that held the id until now (another `instance` whose
    /// time was not up): a replica restarted under its old id takes the id
    /// over, two live ones are told of each other at every heartbeat.
    async fn heartbeat(&self, record: &ReplicaRecord, ttl: Duration) -> Result<Option<ReplicaRecord>, StateError>;
    /// Every live replica, by id.
    async fn replicas(&self) -> Result<Vec<ReplicaRecord>, StateError>;
    /// Removes the record of `id` if `instance` still holds it (a stopping
    /// replica; one that took its id over stays).
    async fn leave(&self, id: &str, instance: &str) -> Result<(), StateError>;
}

/// The replicas of processes sharing this memory (tests, one process).
#[derive(Debug, Default)]
pub struct MemoryReplicas {
    records: Mutex<HashMap<String, (ReplicaRecord, Instant)>>,
}

#[async_trait::async_trait]
impl ReplicaRegistry for MemoryReplicas {
    async fn heartbeat(&self, record: &ReplicaRecord, ttl: Duration) -> Result<Option<ReplicaRecord>, StateError> {
        let now = Instant::now();
        let mut records = self.records.lock_unpoisoned();
        let previous = records.insert(record.id.clone(), (record.clone(), now + ttl));
        Ok(previous.filter(|(r, until)| r.instance != record.instance && *until > now).map(|(r, _)| r))
    }

    async fn replicas(&self) -> Result<Vec<ReplicaRecord>, StateError> {
        let now = Instant::now();
        let mut records = self.records.lock_unpoisoned();
        records.retain(|_, (_, until)| *until > now);
        let mut live: Vec<ReplicaRecord> = records.values().map(|(r, _)| r.clone()).collect();
        live.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(live)
    }

    async fn leave(&self, id: &str, instance: &str) -> Result<(), StateError> {
        let mut records = self.records.lock_unpoisoned();
        if records.get(id).is_some_and(|(r, _)| r.instance == instance) {
            records.remove(id);
        }
        Ok(())
    }
}
