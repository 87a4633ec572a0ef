//! How to reach the Redis of a deployment ([`RedisOptions`]), checked
//! before anything connects.

use std::time::Duration;

use redis::{ConnectionAddr, IntoConnectionInfo as _};
use toolhost::state::StateError;

/// Where the state lives and how to reach it. Built from the settings'
/// `[state.redis]` by the front end; the password comes from the
/// environment or a file, never from the URL in a settings file.
#[derive(Clone)]
pub struct RedisOptions {
    /// `redis://HOST:PORT/DB` or `rediss://…` (TLS).
    pub url: String,
    /// Every key starts with `<key_prefix>:`; one prefix per deployment.
    pub key_prefix: String,
    /// The ACL user, if any.
    pub username: Option<String>,
    /// The password, if any.
    pub password: Option<String>,
    /// A private CA (PEM) for `rediss://`; the system roots otherwise.
    pub ca_pem: Option<Vec<u8>>,
    /// Allows a plain `redis://` URL to a host that is not loopback
    /// (default `false`: the state and the password would cross the
    /// network in clear).
    pub allow_plaintext: bool,
    /// One store operation, connecting included; past it the operation
    /// ends with [`StateError::Unavailable`] (default 1 s).
    pub command_timeout: Duration,
    /// A state that is not named (an MCP session's, the sessionless one)
    /// is dropped after this long unused (default 30 min); named sessions
    /// are kept.
    pub idle: Duration,
    /// The most questions pending at once in the whole deployment (default
    /// [`toolhost::coordination::MAX_PENDING_QUESTIONS`]).
    pub max_pending_questions: usize,
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOptions")
            .field("url", &self.describe())
            .field("key_prefix", &self.key_prefix)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<set>"))
            .field("allow_plaintext", &self.allow_plaintext)
            .field("command_timeout", &self.command_timeout)
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

impl RedisOptions {
    /// Options for `url` under `key_prefix`, with the defaults above.
    pub fn new(url: impl Into<String>, key_prefix: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            key_prefix: key_prefix.into(),
            username: None,
            password: None,
            ca_pem: None,
            allow_plaintext: false,
            command_timeout: Duration::from_secs(1),
            idle: Duration::from_secs(30 * 60),
            max_pending_questions: toolhost::coordination::MAX_PENDING_QUESTIONS,
        }
    }

    /// The URL without any credential (`redis://host:6379/0`), for errors
    /// and logs.
    pub fn describe(&self) -> String {
        match self.url.as_str().into_connection_info() {
            Ok(info) => {
                let db = info.redis_settings().db();
                match info.addr() {
                    ConnectionAddr::Tcp(host, port) => format!("redis://{host}:{port}/{db}"),
                    ConnectionAddr::TcpTls { host, port, .. } => format!("rediss://{host}:{port}/{db}"),
                    ConnectionAddr::Unix(path) => format!("redis+unix://{}", path.display()),
                    _ => "a Redis server".to_string(),
                }
            }
            Err(_) => "a Redis URL that does not parse".to_string(),
        }
    }

    /// The client, after every check: the prefix, the URL (a password in
    /// it is never repeated), plain text to a remote host.
    pub(crate) fn client(&self) -> Result<redis::Client, StateError> {
        let refused = |why: String| Err(StateError::Refused(why));
        let prefix_ok = !self.key_prefix.is_empty()
            && self.key_prefix.len() <= 128
            && self.key_prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
        if !prefix_ok {
            return refused(format!(
                "the Redis key prefix '{}' must be 1 to 128 letters, digits, '-', '_', '.' or ':'; set \
                 [state.redis] key_prefix (one per deployment, e.g. \"toolhost:team-a\")",
                self.key_prefix
            ));
        }
        let info = match self.url.as_str().into_connection_info() {
            Ok(info) => info,
            // The URL may hold a password: the error never repeats it.
            Err(_) => {
                return refused(
                    "the Redis URL does not parse; give it as redis://HOST:PORT/DB or rediss://HOST:PORT/DB \
                     ([state.redis] url, --redis-url or TOOLHOST_REDIS_URL)"
                        .to_string(),
                );
            }
        };
        let (host, tls) = match info.addr() {
            ConnectionAddr::Tcp(host, _) => (host.clone(), false),
            ConnectionAddr::TcpTls { host, .. } => (host.clone(), true),
            _ => ("localhost".to_string(), false),
        };
        if !tls && !self.allow_plaintext && !is_loopback(&host) {
            return refused(format!(
                "{} is reached in plain text over the network (the agent state and the password would cross it in \
                 clear); use rediss:// or, on a network you trust, set [state.redis] allow_plaintext = true",
                self.describe()
            ));
        }
        let mut settings = info.redis_settings().clone();
        if let Some(username) = &self.username {
            settings = settings.set_username(username);
        }
        if let Some(password) = &self.password {
            settings = settings.set_password(password);
        }
        // RESP3: the connection tells its manager when it drops, so an idle
        // process reconnects in the background instead of failing the first
        // command after Redis comes back.
        let info = info.set_redis_settings(settings.set_protocol(redis::ProtocolVersion::RESP3));
        let built = match (&self.ca_pem, tls) {
            (Some(ca), true) => redis::Client::build_with_tls(
                info,
                redis::TlsCertificates { client_tls: None, root_cert: Some(ca.clone()) },
            ),
            _ => redis::Client::open(info),
        };
        built.map_err(|e| StateError::Refused(format!("{}: {e}", self.describe())))
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare == "localhost" || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_appears_in_a_description_or_an_error() {
        let options = RedisOptions::new("redis://user:hunter2@10.0.0.5:6380/2", "team");
        assert_eq!(options.describe(), "redis://10.0.0.5:6380/2");
        let err = options.client().unwrap_err().to_string();
        assert!(err.contains("plain text") && err.contains("allow_plaintext") && !err.contains("hunter2"), "{err}");
        let bad = RedisOptions::new("redis://user:hunter2@[::1", "team");
        let err = bad.client().unwrap_err().to_string();
        assert!(err.contains("does not parse") && !err.contains("hunter2"), "{err}");
        assert!(!format!("{bad:?}").contains("hunter2"));
    }

    #[test]
    fn plain_text_is_for_loopback_unless_allowed_and_the_prefix_is_required() {
        assert!(RedisOptions::new("redis://127.0.0.1:6379/0", "team").client().is_ok());
        assert!(RedisOptions::new("redis://localhost:6379", "team").client().is_ok());
        assert!(RedisOptions::new("rediss://redis.internal:6379", "team").client().is_ok());
        let mut remote = RedisOptions::new("redis://redis.internal:6379", "team");
        assert!(remote.client().is_err());
        remote.allow_plaintext = true;
        assert!(remote.client().is_ok());
        for prefix in ["", "a b", "x*"] {
            let err = RedisOptions::new("redis://127.0.0.1", prefix).client().unwrap_err().to_string();
            assert!(err.contains("key_prefix"), "{prefix}: {err}");
        }
    }
}
