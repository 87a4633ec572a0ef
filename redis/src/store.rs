//! [`RedisStore`]: the [`StateStore`] whose states every process of a
//! deployment shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt as _;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Script};
use tokio::sync::watch;
use toolhost::coordination::{
    BusMessage, EventBus, EventLog, LoggedEvent, MAX_LOGGED_EVENTS, MAX_MESSAGE_BYTES, NonceStore, RecordStore,
    RememberedRule, ReplicaRecord, ReplicaRegistry, RuleStore, too_many_questions,
};
use toolhost::state::{
    CachedFile, MAX_CACHE_BYTES, MAX_CACHE_FILES, StateBounds, StateData, StateError, StateFull, StateKey, StateStore,
    canonical_json,
};
use toolhost::sync::MutexExt as _;

use crate::options::RedisOptions;
use crate::scripts;

/// How many bus messages a subscriber may fall behind by before it loses
/// the oldest.
const BUS_BACKLOG: usize = 256;

/// How many times a dropped connection is tried again in the background
/// before the next command starts over (delays growing to
/// [`RECONNECT_MAX_DELAY`]: about ten seconds in all).
const RECONNECT_ATTEMPTS: usize = 12;

/// The longest wait between two attempts to reconnect.
const RECONNECT_MAX_DELAY: Duration = Duration::from_secs(1);

/// The group-change receivers of this process, by state.
type Listeners = Mutex<HashMap<StateKey, watch::Sender<u64>>>;

/// Agent states in Redis. Commands go over one multiplexed connection that
/// reconnects by itself; group changes arrive over one subscription of
/// the deployment's channel (`<key_prefix>:events`), re-made after a lost
/// connection, when every listener is told of a change (one it may have
/// missed is never silent).
pub struct RedisStore {
    connection: ConnectionManager,
    prefix: String,
    /// The URL without credentials, for errors.
    server: String,
    timeout: Duration,
    idle_ms: u64,
    channel: String,
    /// This store's own tag in the messages it publishes, so it does not
    /// count its own changes twice.
    origin: String,
    listeners: Arc<Listeners>,
    /// What the other processes publish ([`EventBus`]).
    bus: tokio::sync::broadcast::Sender<BusMessage>,
    subscriber: tokio::task::JoinHandle<()>,
    max_pending_questions: usize,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").field("server", &self.server).field("prefix", &self.prefix).finish()
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.subscriber.abort();
    }
}

impl RedisStore {
    /// Connects to the Redis of `options` (within its command timeout) and
    /// subscribes to the deployment's channel. Fails with
    /// [`StateError::Refused`] for options that are not acceptable and
    /// [`StateError::Unavailable`] when the server does not answer.
    pub async fn connect(options: &RedisOptions) -> Result<Self, StateError> {
        let client = options.client()?;
        let server = options.describe();
        let timeout = options.command_timeout;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            // Reconnecting keeps trying for about as long as Redis takes to
            // restart; a command waits for it no longer than its timeout.
            .set_number_of_retries(RECONNECT_ATTEMPTS)
            .set_max_delay(RECONNECT_MAX_DELAY);
        let connection = bounded(&server, timeout, client.get_connection_manager_with_config(config)).await?;
        let channel = format!("{}:events", options.key_prefix);
        let listeners = Arc::new(Listeners::default());
        let mut tag = [0u8; 8];
        let _ = getrandom::fill(&mut tag);
        let origin = format!("{}-{}", std::process::id(), hex::encode(tag));
        let (subscribed, first) = tokio::sync::oneshot::channel();
        let (bus, _) = tokio::sync::broadcast::channel(BUS_BACKLOG);
        let follower = Follower { origin: origin.clone(), listeners: Arc::downgrade(&listeners), bus: bus.clone() };
        let subscriber = tokio::spawn(follower.follow(client, channel.clone(), subscribed));
        let store = Self {
            connection,
            prefix: options.key_prefix.clone(),
            server: server.clone(),
            timeout,
            idle_ms: u64::try_from(options.idle.as_millis()).unwrap_or(u64::MAX),
            channel,
            origin,
            listeners,
            bus,
            subscriber,
            max_pending_questions: options.max_pending_questions,
        };
        // A change published before the subscription would be missed.
        match tokio::time::timeout(timeout, first).await {
            Ok(Ok(())) => Ok(store),
            _ => Err(StateError::Unavailable(format!("{server} did not take a subscription within {timeout:?}"))),
        }
    }

    /// The four keys of a state, in the order the scripts take them.
    fn keys(&self, key: &StateKey) -> [String; 4] {
        ["values", "meta", "files", "lru"].map(|part| format!("{}:state:{key}:{part}", self.prefix))
    }

    /// The lifetime of `key` in milliseconds: named sessions are kept,
    /// other states end after the idle time.
    fn ttl(&self, key: &StateKey) -> String {
        if key.session_name().is_some() { "0".to_string() } else { self.idle_ms.to_string() }
    }

    /// Runs `script` with `keys` and `args` (EVALSHA, loading it on
    /// NOSCRIPT), bounded by the command timeout.
    async fn invoke<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[String],
        args: &[&str],
    ) -> Result<T, StateError> {
        let mut invocation = script.prepare_invoke();
        for k in keys {
            invocation.key(k);
        }
        for a in args {
            invocation.arg(*a);
        }
        let mut connection = self.connection.clone();
        bounded(&self.server, self.timeout, invocation.invoke_async(&mut connection)).await
    }

    /// Runs `script` on the state `key` with `args` (its lifetime appended).
    async fn eval<T: FromRedisValue>(&self, script: &Script, key: &StateKey, args: &[&str]) -> Result<T, StateError> {
        let ttl = self.ttl(key);
        let args: Vec<&str> = args.iter().copied().chain([ttl.as_str()]).collect();
        self.invoke(script, &self.keys(key), &args).await
    }

    /// Runs a nonce script on `nonce` with `args` after it.
    async fn nonce_script(&self, script: &Script, nonce: &str, args: &[&str]) -> Result<i64, StateError> {
        let keys = [format!("{}:nonces", self.prefix), format!("{}:nonce:{nonce}", self.prefix)];
        let args: Vec<&str> = [nonce].into_iter().chain(args.iter().copied()).collect();
        self.invoke(script, &keys, &args).await
    }

    /// Runs a rules script with `args`.
    async fn rules_script<T: FromRedisValue>(&self, script: &Script, args: &[&str]) -> Result<T, StateError> {
        let keys = [format!("{}:rules", self.prefix), format!("{}:rules:version", self.prefix)];
        self.invoke(script, &keys, args).await
    }

    /// Runs a replica script on `id` with `args` after it.
    async fn replica_script<T: FromRedisValue>(
        &self,
        script: &Script,
        id: &str,
        args: &[&str],
    ) -> Result<T, StateError> {
        let keys = [format!("{}:replica:{id}", self.prefix), format!("{}:replicas", self.prefix)];
        let args: Vec<&str> = [id].into_iter().chain(args.iter().copied()).collect();
        self.invoke(script, &keys, &args).await
    }

    /// Runs one command.
    async fn query<T: FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, StateError> {
        let mut connection = self.connection.clone();
        bounded(&self.server, self.timeout, command.query_async(&mut connection)).await
    }

    fn corrupt(&self, key: &StateKey, what: &str, e: impl std::fmt::Display) -> StateError {
        StateError::Refused(format!(
            "the {what} of state {key} in {} is not what toolhost writes ({e}); remove the keys {}:state:{key}:* to \
             start it afresh",
            self.server, self.prefix
        ))
    }

    fn parse_groups(&self, key: &StateKey, text: Option<String>) -> Result<Vec<String>, StateError> {
        text.map_or(Ok(Vec::new()), |t| serde_json::from_str(&t).map_err(|e| self.corrupt(key, "active groups", e)))
    }

    async fn store_value(
        &self,
        key: &StateKey,
        name: &str,
        expected: Option<Option<serde_json::Value>>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateError> {
        let (mode, has_expected, expected) = match &expected {
            None => ("set", "0", String::new()),
            Some(None) => ("cas", "0", String::new()),
            Some(Some(v)) => ("cas", "1", canonical_json(v)),
        };
        let value = canonical_json(&value);
        let (max_bytes, max_keys) = (bounds.max_bytes.to_string(), bounds.max_keys.to_string());
        let args = [name, mode, has_expected, &expected, &value, &max_bytes, &max_keys];
        let reply: Vec<i64> = self.eval(&scripts::SET, key, &args).await?;
        match reply.as_slice() {
            [1] => Ok(true),
            [0] => Ok(false),
            [-1] => Err(StateFull::Keys { key: name.to_string(), limit: bounds.max_keys }.into()),
            [-2, after] => Err(StateFull::Bytes {
                key: name.to_string(),
                after: u64::try_from(*after).unwrap_or(0),
                limit: bounds.max_bytes,
            }
            .into()),
            other => Err(self.corrupt(key, "answer to a set", format!("{other:?}"))),
        }
    }
}

/// `work`, bounded by `timeout`; its error or the timeout is the store
/// being unavailable.
async fn bounded<T>(
    server: &str,
    timeout: Duration,
    work: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, StateError> {
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(StateError::Unavailable(format!("{server}: {e}"))),
        Err(_) => Err(StateError::Unavailable(format!(
            "{server} did not answer within {} ms ([state.redis] command_timeout_ms)",
            timeout.as_millis()
        ))),
    }
}

/// The subscription's side of a [`RedisStore`]: what it wakes.
struct Follower {
    /// The store's own tag: its own messages are skipped.
    origin: String,
    listeners: Weak<Listeners>,
    bus: tokio::sync::broadcast::Sender<BusMessage>,
}

impl Follower {
    /// Follows the deployment's channel for as long as the store lives
    /// ([`Follower::take`] each message, unless this store published it).
    /// After a lost subscription, re-subscribes with back-off and tells
    /// every listener and bus subscriber once.
    async fn follow(self, client: redis::Client, channel: String, subscribed: tokio::sync::oneshot::Sender<()>) {
        let mut subscribed = Some(subscribed);
        let mut delay = Duration::from_millis(100);
        loop {
            match subscribe(&client, &channel).await {
                Ok(mut pubsub) => {
                    delay = Duration::from_millis(100);
                    match subscribed.take() {
                        Some(first) => drop(first.send(())),
                        None => {
                            let Some(listeners) = self.listeners.upgrade() else { return };
                            for sender in listeners.lock_unpoisoned().values() {
                                sender.send_modify(|generation| *generation += 1);
                            }
                            let _ = self.bus.send(BusMessage::Reconnected);
                        }
                    }
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        let Ok(text) = message.get_payload::<String>() else { continue };
                        if !self.take(&text) {
                            return;
                        }
                    }
                }
                Err(e) => tracing::debug!("subscribing to {channel} failed: {e}"),
            }
            if self.listeners.strong_count() == 0 {
                return;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    /// Acts on one message of the channel: `groups ORIGIN KEY` wakes the
    /// state's listeners, `bus ORIGIN TEXT` goes to the bus's subscribers.
    /// `false` once the store is gone.
    fn take(&self, text: &str) -> bool {
        let mut words = text.splitn(3, ' ');
        let (Some(kind), Some(from), Some(rest)) = (words.next(), words.next(), words.next()) else { return true };
        if from == self.origin {
            return true;
        }
        match kind {
            "groups" => {
                let Some(listeners) = self.listeners.upgrade() else { return false };
                let listeners = listeners.lock_unpoisoned();
                if let Some(sender) = listeners.iter().find(|(k, _)| k.as_str() == rest).map(|(_, s)| s) {
                    sender.send_modify(|generation| *generation += 1);
                }
            }
            "bus" if rest.len() <= MAX_MESSAGE_BYTES => {
                let _ = self.bus.send(BusMessage::Message(rest.into()));
            }
            _ => {}
        }
        true
    }
}

async fn subscribe(client: &redis::Client, channel: &str) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    Ok(pubsub)
}

#[async_trait::async_trait]
impl StateStore for RedisStore {
    async fn open(&self, _key: &StateKey) -> Result<(), StateError> {
        self.check().await
    }

    async fn get(&self, key: &StateKey, name: &str) -> Result<Option<serde_json::Value>, StateError> {
        let text: Option<String> = self.eval(&scripts::GET, key, &[name]).await?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| self.corrupt(key, "value", e))).transpose()
    }

    async fn set(
        &self,
        key: &StateKey,
        name: &str,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<(), StateError> {
        self.store_value(key, name, None, value, bounds).await.map(drop)
    }

    async fn compare_and_set(
        &self,
        key: &StateKey,
        name: &str,
        expected: Option<serde_json::Value>,
        value: serde_json::Value,
        bounds: StateBounds,
    ) -> Result<bool, StateError> {
        self.store_value(key, name, Some(expected), value, bounds).await
    }

    async fn cache_file(&self, key: &StateKey, entry: CachedFile) -> Result<(), StateError> {
        let record = serde_json::to_string(&entry).map_err(|e| self.corrupt(key, "read-cache record", e))?;
        let (size, files, bytes) = (entry.size.to_string(), MAX_CACHE_FILES.to_string(), MAX_CACHE_BYTES.to_string());
        self.eval::<i64>(&scripts::CACHE_FILE, key, &[&entry.path, &record, &size, &files, &bytes]).await.map(drop)
    }

    async fn cached_file(&self, key: &StateKey, path: &str) -> Result<Option<CachedFile>, StateError> {
        let record: Option<String> = self.eval(&scripts::CACHED_FILE, key, &[path]).await?;
        record.map(|r| serde_json::from_str(&r).map_err(|e| self.corrupt(key, "read-cache record", e))).transpose()
    }

    async fn forget_file(&self, key: &StateKey, path: &str) -> Result<(), StateError> {
        self.eval::<i64>(&scripts::FORGET_FILE, key, &[path]).await.map(drop)
    }

    async fn active_groups(&self, key: &StateKey) -> Result<Vec<String>, StateError> {
        let text: Option<String> = self.eval(&scripts::ACTIVE_GROUPS, key, &[]).await?;
        self.parse_groups(key, text)
    }

    async fn set_active_groups(&self, key: &StateKey, groups: Vec<String>) -> Result<bool, StateError> {
        let json = serde_json::Value::from(groups).to_string();
        let message = format!("groups {} {key}", self.origin);
        let changed: i64 = self.eval(&scripts::SET_ACTIVE_GROUPS, key, &[&json, &self.channel, &message]).await?;
        if changed == 1 {
            // This process's listeners are told at once, not by the echo.
            if let Some(sender) = self.listeners.lock_unpoisoned().get(key) {
                sender.send_modify(|generation| *generation += 1);
            }
        }
        Ok(changed == 1)
    }

    fn group_changes(&self, key: &StateKey) -> watch::Receiver<u64> {
        let mut listeners = self.listeners.lock_unpoisoned();
        listeners.retain(|k, sender| k == key || sender.receiver_count() > 0);
        listeners.entry(key.clone()).or_insert_with(|| watch::Sender::new(0)).subscribe()
    }

    async fn snapshot(&self, key: &StateKey) -> Result<StateData, StateError> {
        let (values, groups, records): (Vec<String>, Option<String>, Vec<String>) =
            self.eval(&scripts::SNAPSHOT, key, &[]).await?;
        let mut data = StateData::empty();
        for pair in values.chunks(2) {
            if let [name, text] = pair {
                let value = serde_json::from_str(text).map_err(|e| self.corrupt(key, "value", e))?;
                data.values.insert(name.clone(), value);
            }
        }
        data.active_groups = self.parse_groups(key, groups)?;
        for record in records {
            data.read_cache.push(serde_json::from_str(&record).map_err(|e| self.corrupt(key, "read-cache record", e))?);
        }
        Ok(data)
    }

    async fn end(&self, key: &StateKey) -> Result<(), StateError> {
        self.query::<i64>(redis::cmd("DEL").arg(&self.keys(key))).await.map(drop)
    }

    fn location(&self, key: &StateKey) -> Option<String> {
        Some(format!("redis:{}:state:{key}", self.prefix))
    }

    async fn check(&self) -> Result<(), StateError> {
        self.query::<String>(&redis::cmd("PING")).await.map(drop)
    }
}

#[async_trait::async_trait]
impl NonceStore for RedisStore {
    async fn issue(&self, nonce: &str, ttl: Duration) -> Result<(), StateError> {
        let ttl = ttl.as_millis().max(1).to_string();
        let max = self.max_pending_questions.to_string();
        match self.nonce_script(&scripts::ISSUE_NONCE, nonce, &[&ttl, &max]).await? {
            1 => Ok(()),
            0 => Err(too_many_questions()),
            _ => Err(StateError::Refused(format!("the nonce {nonce} is already pending; ask again"))),
        }
    }

    async fn consume(&self, nonce: &str) -> Result<bool, StateError> {
        Ok(self.nonce_script(&scripts::CONSUME_NONCE, nonce, &[]).await? == 1)
    }
}

#[async_trait::async_trait]
impl RuleStore for RedisStore {
    async fn rules_version(&self) -> Result<u64, StateError> {
        let version: Option<u64> = self.query(redis::cmd("GET").arg(format!("{}:rules:version", self.prefix))).await?;
        Ok(version.unwrap_or(0))
    }

    async fn remembered_rules(&self) -> Result<(u64, Vec<RememberedRule>), StateError> {
        let (version, records): (u64, Vec<String>) = self.rules_script(&scripts::REMEMBERED_RULES, &[]).await?;
        let corrupt = |e: serde_json::Error| {
            StateError::Refused(format!(
                "a remembered rule in {} under {}:rules is not what toolhost writes ({e}); forget it with `toolhost \
                 rules --forget RULE`",
                self.server, self.prefix
            ))
        };
        let rules = records.iter().map(|r| serde_json::from_str(r).map_err(corrupt)).collect::<Result<_, _>>()?;
        Ok((version, rules))
    }

    async fn remember_rule(&self, rule: RememberedRule) -> Result<(), StateError> {
        let record = serde_json::to_string(&rule).map_err(|e| StateError::Refused(e.to_string()))?;
        self.rules_script::<u64>(&scripts::REMEMBER_RULE, &[&rule.rule, &record]).await.map(drop)
    }

    async fn forget_rule(&self, rule: &str) -> Result<bool, StateError> {
        Ok(self.rules_script::<i64>(&scripts::FORGET_RULE, &[rule]).await? == 1)
    }
}

#[async_trait::async_trait]
impl ReplicaRegistry for RedisStore {
    async fn heartbeat(&self, record: &ReplicaRecord, ttl: Duration) -> Result<Option<ReplicaRecord>, StateError> {
        let text = serde_json::to_string(record).map_err(|e| StateError::Refused(e.to_string()))?;
        let ttl = ttl.as_millis().max(1).to_string();
        let other: Option<String> =
            self.replica_script(&scripts::HEARTBEAT, &record.id, &[&record.instance, &text, &ttl]).await?;
        // A record another process wrote that does not parse still names a
        // clash: its id is held by someone else.
        Ok(other.map(|o| {
            serde_json::from_str(&o).unwrap_or_else(|_| ReplicaRecord {
                host: "(a record toolhost cannot read)".to_string(),
                pid: 0,
                ..record.clone()
            })
        }))
    }

    async fn replicas(&self) -> Result<Vec<ReplicaRecord>, StateError> {
        let keys = [format!("{}:replicas", self.prefix)];
        let records: Vec<String> =
            self.invoke(&scripts::REPLICAS, &keys, &[&format!("{}:replica:", self.prefix)]).await?;
        // A record that does not parse (another version, a forgery) is left
        // out rather than failing the whole list.
        let mut replicas: Vec<ReplicaRecord> = records.iter().filter_map(|r| serde_json::from_str(r).ok()).collect();
        replicas.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(replicas)
    }

    async fn leave(&self, id: &str, instance: &str) -> Result<(), StateError> {
        self.replica_script::<i64>(&scripts::LEAVE, id, &[instance]).await.map(drop)
    }
}

#[async_trait::async_trait]
impl EventBus for RedisStore {
    async fn publish(&self, message: &str) -> Result<(), StateError> {
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(StateError::Refused(format!(
                "a message of {} bytes is more than the {MAX_MESSAGE_BYTES} the deployment's channel carries",
                message.len()
            )));
        }
        let text = format!("bus {} {message}", self.origin);
        self.query::<i64>(redis::cmd("PUBLISH").arg(&self.channel).arg(text)).await.map(drop)
    }

    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<BusMessage> {
        self.bus.subscribe()
    }
}

#[async_trait::async_trait]
impl RecordStore for RedisStore {
    async fn put_record(&self, key: &str, value: &str, ttl: Duration) -> Result<(), StateError> {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        self.query::<()>(redis::cmd("SET").arg(format!("{}:record:{key}", self.prefix)).arg(value).arg("PX").arg(ttl))
            .await
    }

    async fn record(&self, key: &str, ttl: Duration) -> Result<Option<String>, StateError> {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        self.query(redis::cmd("GETEX").arg(format!("{}:record:{key}", self.prefix)).arg("PX").arg(ttl)).await
    }

    async fn drop_record(&self, key: &str) -> Result<bool, StateError> {
        let removed: i64 = self.query(redis::cmd("DEL").arg(format!("{}:record:{key}", self.prefix))).await?;
        Ok(removed == 1)
    }
}

#[async_trait::async_trait]
impl EventLog for RedisStore {
    async fn append(&self, stream: &str, data: &[u8], ttl: Duration) -> Result<String, StateError> {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut invocation = scripts::APPEND_EVENT.prepare_invoke();
        invocation.key(format!("{}:events:{stream}", self.prefix)).arg(data).arg(MAX_LOGGED_EVENTS).arg(ttl);
        let mut connection = self.connection.clone();
        bounded(&self.server, self.timeout, invocation.invoke_async(&mut connection)).await
    }

    async fn read_after(&self, stream: &str, after: &str, max: usize) -> Result<Vec<LoggedEvent>, StateError> {
        let key = format!("{}:events:{stream}", self.prefix);
        let reply: redis::streams::StreamRangeReply =
            self.query(redis::cmd("XRANGE").arg(key).arg(format!("({after}")).arg("+").arg("COUNT").arg(max)).await?;
        Ok(reply
            .ids
            .into_iter()
            .filter_map(|entry| {
                let data: Vec<u8> = entry.get("d")?;
                Some(LoggedEvent { id: entry.id, data })
            })
            .collect())
    }
}
