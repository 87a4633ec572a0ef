//! The `[state]` table: where agent state lives — this process (and named
//! sessions as files), or a Redis every process of a deployment shares —
//! and the checks made before anything connects.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where agent state is kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// This process's memory; named sessions as files in the state folder,
    /// one process at a time (the default).
    #[default]
    Local,
    /// A Redis server (`[state.redis]`), shared by every process that
    /// names it.
    Redis,
}

impl std::str::FromStr for StoreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(Self::Local),
            "redis" => Ok(Self::Redis),
            other => Err(format!("the state store must be \"local\" or \"redis\", not \"{other}\"")),
        }
    }
}

/// The `[state]` table of `toolhost.toml`.
///
/// ```toml
/// [state]
/// store = "redis"                 # "local" (default) or "redis"; or --state-store
/// keyring_file = "secrets/state-keyring"   # required with redis; or --state-keyring
/// session_idle_ms = 1800000       # an MCP session's state is dropped after this long unused
/// allow_unconfined = false        # redis with unconfined tool processes is refused unless true
///
/// [state.redis]
/// url = "redis://127.0.0.1:6379/0"      # or --redis-url / TOOLHOST_REDIS_URL; never a password here
/// key_prefix = "toolhost:team-a"        # required; or --redis-key-prefix
/// password_file = "secrets/redis-password"   # or TOOLHOST_REDIS_PASSWORD
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateSettings {
    /// Where agent state lives.
    pub store: StoreKind,
    /// The keys that seal the MCP request states of pending questions, one
    /// `ID BASE64` per line (`toolhost keyring new`); the same file on
    /// every process of a deployment, so a question asked through one is
    /// answered through any. Required with `redis`; no tool may read it.
    pub keyring_file: Option<PathBuf>,
    /// A state that is not a named session (an MCP session's, the
    /// sessionless one) is dropped after this long unused, with `redis`
    /// (default 30 minutes); in this process's memory it ends with its
    /// session.
    pub session_idle_ms: u64,
    /// Allows `redis` while tool processes are not contained (the default
    /// local backend without its sandbox). Such a process can read
    /// toolhost's environment and reach Redis, and whoever writes Redis
    /// can change what every replica allows; refused unless `true`.
    pub allow_unconfined: bool,
    /// How to reach Redis.
    pub redis: RedisSettings,
}

impl Default for StateSettings {
    fn default() -> Self {
        Self {
            store: StoreKind::Local,
            keyring_file: None,
            session_idle_ms: 30 * 60 * 1000,
            allow_unconfined: false,
            redis: Default::default(),
        }
    }
}

/// The `[state.redis]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisSettings {
    /// `redis://HOST:PORT/DB`, or `rediss://` for TLS (`TOOLHOST_REDIS_URL`
    /// and `--redis-url` win). A password in it is refused here.
    pub url: Option<String>,
    /// Every key starts with it: one per deployment (required).
    pub key_prefix: Option<String>,
    /// The ACL user (or `TOOLHOST_REDIS_USERNAME`).
    pub username: Option<String>,
    /// A file holding the password (or `TOOLHOST_REDIS_PASSWORD`); no tool
    /// may read it.
    pub password_file: Option<PathBuf>,
    /// A private CA (PEM) for `rediss://`.
    pub ca_file: Option<PathBuf>,
    /// Allows a plain `redis://` URL to a host that is not loopback.
    pub allow_plaintext: bool,
    /// How long a process waits for Redis at start before it gives up
    /// (default 30 s).
    pub startup_timeout_ms: u64,
    /// The longest one store operation may take (default 1 s); past it the
    /// call gets the store's error and changed nothing.
    pub command_timeout_ms: u64,
}

impl Default for RedisSettings {
    fn default() -> Self {
        Self {
            url: None,
            key_prefix: None,
            username: None,
            password_file: None,
            ca_file: None,
            allow_plaintext: false,
            startup_timeout_ms: 30_000,
            command_timeout_ms: 1_000,
        }
    }
}

impl StateSettings {
    /// Checks what can be checked without the environment: no password in
    /// the URL of a settings file, timeouts that are not zero.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(url) = &self.redis.url
            && url_has_password(url)
        {
            return Err(
                "[state.redis] url holds a password, and a settings file is no place for one: give the URL without \
                 it, and the password in TOOLHOST_REDIS_PASSWORD or a file named by [state.redis] password_file"
                    .to_string(),
            );
        }
        if self.redis.command_timeout_ms == 0 || self.session_idle_ms == 0 {
            return Err("[state.redis] command_timeout_ms and [state] session_idle_ms must be above 0".to_string());
        }
        Ok(())
    }
}

/// Whether `url` carries a password (`scheme://user:password@host…`).
pub fn url_has_password(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else { return false };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.rsplit_once('@').is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_refused_without_repeating_it() {
        assert!(url_has_password("redis://:s3cret@host:6379/0"));
        assert!(url_has_password("rediss://user:s3cret@host"));
        assert!(!url_has_password("redis://user@host:6379"));
        assert!(!url_has_password("redis://host:6379/0"));
        let mut s = StateSettings::default();
        s.redis.url = Some("redis://u:s3cret@host".into());
        let err = s.validate().unwrap_err();
        assert!(err.contains("password_file") && !err.contains("s3cret"), "{err}");
    }

    #[test]
    fn the_table_parses_with_its_defaults() {
        let s: StateSettings = toml::from_str("store = \"redis\"\n[redis]\nkey_prefix = \"t\"").unwrap();
        assert_eq!(
            (s.store, s.redis.key_prefix.as_deref(), s.redis.command_timeout_ms),
            (StoreKind::Redis, Some("t"), 1000)
        );
        assert!(toml::from_str::<StateSettings>("store = \"etcd\"").is_err());
    }
}
