//! Agent state kept in Redis ([`RedisStore`]), so that every process of a
//! deployment — several `toolhost serve` replicas, a `toolhost call
//! --session` beside them — shares it: a compare-and-set made through one
//! process is atomic against every other, a `reset_tools` through one
//! reaches the listeners of all. The same store keeps the deployment's
//! nonces of pending questions (`toolhost::coordination::NonceStore`), so
//! an answer is taken once, by whichever process it reaches, the rules
//! remembered by "allow and remember" (`RuleStore`) and the live replicas
//! (`ReplicaRegistry`).
//!
//! Security-relevant defaults:
//! - every key starts with the deployment's `key_prefix`, which is
//!   required ([`RedisOptions::new`]): two deployments on one Redis see
//!   nothing of each other;
//! - no secret is in a key (an MCP session is named by a digest of its
//!   id) and no file content is stored (the read cache holds path, mtime,
//!   size and SHA-256 only);
//! - a plain `redis://` URL to a host that is not loopback is refused
//!   unless [`RedisOptions::allow_plaintext`]; credentials never appear in
//!   an error or a log line ([`RedisOptions::describe`]);
//! - every operation ends within [`RedisOptions::command_timeout`] with
//!   [`StateError::Unavailable`], never a silent empty state.

mod options;
mod scripts;
mod store;

pub use options::RedisOptions;
pub use store::RedisStore;

#[doc(no_inline)]
pub use toolhost::state::StateError;
