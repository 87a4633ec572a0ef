//! A serving host among the replicas of a deployment: what identifies its
//! tool set and its policy (digests other replicas compare), and its
//! heartbeat in a [`ReplicaRegistry`] ([`Toolhost::announce`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sha2::{Digest as _, Sha256};

use super::Toolhost;
use crate::audit::record::rfc3339;
use crate::coordination::{ReplicaRecord, ReplicaRegistry};
use crate::state::StateError;

/// How often a replica says it is alive by default.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);

/// How long a replica counts as alive after its last heartbeat by default:
/// three heartbeats, so one slow write does not make it vanish.
pub const HEARTBEAT_TTL: Duration = Duration::from_secs(15);

/// The reload errors of a watching host, one line each, asked for at each
/// heartbeat.
pub type ReloadErrors = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// How [`Toolhost::announce`] registers the host.
#[derive(Clone)]
pub struct PresenceOptions {
    /// The replica id (valid: [`crate::replica::validate`]).
    pub id: String,
    /// Between heartbeats ([`HEARTBEAT_EVERY`]).
    pub every: Duration,
    /// How long one heartbeat counts ([`HEARTBEAT_TTL`]).
    pub ttl: Duration,
    /// The watcher's reload errors, when the host watches its files.
    pub reload_errors: Option<ReloadErrors>,
}

impl PresenceOptions {
    /// The defaults for the replica `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into(), every: HEARTBEAT_EVERY, ttl: HEARTBEAT_TTL, reload_errors: None }
    }
}

/// A host registered as a replica: it heartbeats until dropped or
/// [`Presence::leave`]s, then removes its record.
pub struct Presence {
    registry: Arc<dyn ReplicaRegistry>,
    id: String,
    instance: String,
    task: tokio::task::JoinHandle<()>,
    /// The live replicas whose policy differs from this one's when it
    /// started, with the parts that differ.
    pub other_policies: Vec<(ReplicaRecord, Vec<String>)>,
}

impl Presence {
    /// Stops the heartbeat and removes this replica's record (unless
    /// another process took the id over).
    pub async fn leave(self) -> Result<(), StateError> {
        self.task.abort();
        self.registry.leave(&self.id, &self.instance).await
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Toolhost {
    /// The SHA-256 of the tools this host serves: each name with its
    /// component's digest, in name order. Two replicas with the same
    /// plugins at the same versions have the same digest.
    pub async fn tool_set_digest(&self) -> String {
        let mut tools: Vec<(String, String)> =
            self.list().await.unwrap_or_default().into_iter().map(|t| (t.name, t.sha256)).collect();
        tools.sort();
        let mut hash = Sha256::new();
        for (name, sha) in tools {
            hash.update(format!("{name}\0{sha}\n"));
        }
        hex::encode(hash.finalize())
    }

    /// The SHA-256 of each part of the permission policy of the settings:
    /// every key of `[permissions]` (`mode`, `allow`, `working_dirs`, …)
    /// and `grants`. Not the rules remembered later.
    pub fn policy_digests(&self) -> BTreeMap<String, String> {
        let settings = self.settings();
        let mut parts = BTreeMap::new();
        if let Ok(serde_json::Value::Object(permissions)) = serde_json::to_value(&settings.permissions) {
            for (key, value) in permissions {
                parts.insert(format!("permissions.{key}"), json_digest(&value));
            }
        }
        parts.insert("grants".to_string(), json_digest(&serde_json::to_value(&settings.grants).unwrap_or_default()));
        parts
    }

    /// One SHA-256 of the whole policy ([`Toolhost::policy_digests`]): a
    /// question sealed under one policy is refused under another.
    pub fn policy_digest(&self) -> String {
        json_digest(&serde_json::to_value(self.policy_digests()).unwrap_or_default())
    }

    /// Registers this host in `registry` as the replica `options.id` and
    /// keeps it alive there (a heartbeat every `options.every`) until the
    /// returned [`Presence`] is dropped. The first heartbeat is made here:
    /// its error is returned. A later one that fails is logged and tried
    /// again; another live process under the same id is logged at each
    /// heartbeat and shown in its record (`clash`).
    pub async fn announce(
        &self,
        registry: Arc<dyn ReplicaRegistry>,
        options: PresenceOptions,
    ) -> Result<Presence, StateError> {
        crate::replica::validate(&options.id).map_err(StateError::Refused)?;
        let mut tag = [0u8; 8];
        let _ = getrandom::fill(&mut tag);
        let instance = hex::encode(tag);
        let started = rfc3339(SystemTime::now());
        let mut beat =
            Heartbeat { host: self.clone(), registry: registry.clone(), options, instance, started, clash: None };
        beat.once().await?;
        let mine = beat.record().await;
        let other_policies = registry
            .replicas()
            .await?
            .into_iter()
            .filter(|r| r.instance != mine.instance)
            .filter_map(|r| {
                let parts = mine.policy_differences(&r);
                (!parts.is_empty()).then_some((r, parts))
            })
            .collect();
        let id = beat.options.id.clone();
        let instance = beat.instance.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(beat.options.every).await;
                if let Err(e) = beat.once().await {
                    tracing::warn!("replica {}: the heartbeat was not recorded: {e}", beat.options.id);
                }
            }
        });
        Ok(Presence { registry, id, instance, task, other_policies })
    }
}

/// The heartbeat task's side.
struct Heartbeat {
    host: Toolhost,
    registry: Arc<dyn ReplicaRegistry>,
    options: PresenceOptions,
    instance: String,
    started: String,
    /// The other process last seen under this id, and until when it counts.
    clash: Option<(String, std::time::Instant)>,
}

impl Heartbeat {
    async fn record(&self) -> ReplicaRecord {
        let clash = self.clash.as_ref().filter(|(_, until)| *until > std::time::Instant::now()).map(|(c, _)| c.clone());
        ReplicaRecord {
            id: self.options.id.clone(),
            instance: self.instance.clone(),
            host: crate::replica::machine(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            tools: self.host.tool_set_digest().await,
            policy: self.host.policy_digests(),
            reload_errors: self.options.reload_errors.as_ref().map(|errors| errors()).unwrap_or_default(),
            clash,
            started: self.started.clone(),
            heartbeat: rfc3339(SystemTime::now()),
        }
    }

    async fn once(&mut self) -> Result<(), StateError> {
        let record = self.record().await;
        if let Some(other) = self.registry.heartbeat(&record, self.options.ttl).await? {
            tracing::warn!(
                "replica {}: another live process uses this replica id ({}; this one is {}): give each replica its \
                 own --replica-id",
                self.options.id,
                other.process(),
                record.process()
            );
            self.clash = Some((other.process(), std::time::Instant::now() + self.options.ttl));
        }
        Ok(())
    }
}

/// The SHA-256 of `value`'s canonical text (object keys sorted), the same
/// in every process whatever the order its maps were built in.
fn json_digest(value: &serde_json::Value) -> String {
    hex::encode(Sha256::digest(crate::state::canonical_json(value)))
}
