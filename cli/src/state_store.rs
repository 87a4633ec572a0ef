//! The agent-state store `[state]` names, made ready for a command: none of
//! its own for `local` (named sessions are files, MCP sessions live in the
//! process), or the deployment's Redis, checked before it is reached; and
//! the keyring its processes seal pending questions with.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use toolhost::settings::{Settings, StoreKind};
use toolhost::state::StateError;
use toolhost_mcp::Keyring;
use toolhost_redis::{RedisOptions, RedisStore};

use crate::args::{Global, KeyringNewArgs, RulesArgs};
use crate::out::outln;

/// The most a password file may hold.
const MAX_PASSWORD_BYTES: u64 = 4096;
/// The most a CA file may hold (a bundle of certificates).
const MAX_CA_BYTES: u64 = 1 << 20;

/// The file `[state.redis] KEY` names, read as toolhost's own files are: a
/// regular file within `max` bytes (a FIFO or a device in its place is
/// refused, not waited on).
fn own_file(file: &std::path::Path, key: &str, max: u64) -> Result<Vec<u8>> {
    let bound = toolhost::own_file::Bound { max, name: "the most that file may hold" };
    let own = toolhost::own_file::read(file, bound)
        .with_context(|| format!("reading [state.redis] {key} {}", file.display()))?;
    Ok(own.bytes)
}

/// The shared store of `settings`, or `None` for `store = "local"`.
/// `patient`: wait for Redis up to `[state.redis] startup_timeout_ms`
/// (`serve`), else give up after one try (a one-shot command).
/// Reached once per process: every later call gets the same store.
pub async fn shared(settings: &Settings, patient: bool) -> Result<Option<Arc<RedisStore>>> {
    static SHARED: tokio::sync::OnceCell<Option<Arc<RedisStore>>> = tokio::sync::OnceCell::const_new();
    SHARED.get_or_try_init(|| connect(settings, patient)).await.cloned()
}

async fn connect(settings: &Settings, patient: bool) -> Result<Option<Arc<RedisStore>>> {
    if settings.state.store == StoreKind::Local {
        return Ok(None);
    }
    if !settings.state.allow_unconfined
        && let Err(why) = toolhost::backend::BackendFactories::default()
            .contains_processes(&settings.backend.kind, &settings.backend.options)
    {
        bail!(
            "[state] store = \"redis\" is refused while tool processes are not contained: {why}. An unconfined \
             process can read toolhost's environment and reach Redis, and whoever writes Redis changes what every \
             process allows. Contain them, or accept it with [state] allow_unconfined = true"
        );
    }
    let options = options(settings)?;
    let deadline = Instant::now() + Duration::from_millis(settings.state.redis.startup_timeout_ms);
    let mut delay = Duration::from_millis(100);
    loop {
        match RedisStore::connect(&options).await {
            Ok(store) => return Ok(Some(Arc::new(store))),
            Err(e @ StateError::Unavailable(_)) if patient && Instant::now() + delay < deadline => {
                tracing::info!("waiting for the state store: {e}");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(e @ StateError::Unavailable(_)) if patient => {
                bail!("{e} (waited {} ms: [state.redis] startup_timeout_ms)", settings.state.redis.startup_timeout_ms)
            }
            Err(e) => bail!("{e}"),
        }
    }
}

/// The Redis options of `settings`, credentials from the environment or the
/// password file.
fn options(settings: &Settings) -> Result<RedisOptions> {
    let redis = &settings.state.redis;
    let Some(url) = redis.url.clone() else {
        bail!("[state] store = \"redis\" needs the server: set [state.redis] url, --redis-url or TOOLHOST_REDIS_URL");
    };
    let Some(prefix) = redis.key_prefix.clone() else {
        bail!(
            "[state] store = \"redis\" needs [state.redis] key_prefix (or --redis-key-prefix): every key of this \
             deployment starts with it, one prefix per deployment"
        );
    };
    let mut options = RedisOptions::new(url, prefix);
    options.username = std::env::var("TOOLHOST_REDIS_USERNAME").ok().or_else(|| redis.username.clone());
    options.password = match (std::env::var("TOOLHOST_REDIS_PASSWORD"), &redis.password_file) {
        (Ok(password), _) => Some(password),
        (Err(_), Some(file)) => {
            let bytes = own_file(file, "password_file", MAX_PASSWORD_BYTES)?;
            let text = String::from_utf8(bytes)
                .with_context(|| format!("[state.redis] password_file {} is not UTF-8 text", file.display()))?;
            Some(text.trim_end_matches(['\n', '\r']).to_string())
        }
        (Err(_), None) => None,
    };
    if let Some(file) = &redis.ca_file {
        options.ca_pem = Some(own_file(file, "ca_file", MAX_CA_BYTES)?);
    }
    options.allow_plaintext = redis.allow_plaintext;
    options.command_timeout = Duration::from_millis(redis.command_timeout_ms);
    options.idle = Duration::from_millis(settings.state.session_idle_ms);
    Ok(options)
}

/// The keyring of a deployment (`[state] keyring_file`), required with a
/// shared store: every process must seal with the same keys.
pub fn keyring(settings: &Settings) -> Result<Keyring> {
    let Some(file) = &settings.state.keyring_file else {
        bail!(
            "[state] store = \"redis\" needs [state] keyring_file (or --state-keyring): every process of the \
             deployment seals pending questions with the same keys, so that one asked through a process is answered \
             through any; make one with `toolhost keyring new > FILE` and give the same file to each"
        );
    };
    Keyring::read(file)
}

/// `toolhost keyring new`: one fresh line for a keyring file.
pub fn new_key(args: KeyringNewArgs) -> Result<u8> {
    let id = args.id.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        format!("k{}", now.as_secs())
    });
    outln!("{}", Keyring::new_line(&id)?);
    Ok(crate::exit::OK)
}

/// `builder` with the shared store of `settings` as its rule store, when
/// there is one. `patient`: as for [`shared`].
pub async fn with_rule_store(
    builder: toolhost::ToolhostBuilder,
    settings: &Settings,
    patient: bool,
) -> Result<toolhost::ToolhostBuilder> {
    Ok(match shared(settings, patient).await? {
        Some(store) => builder.rule_store(store),
        None => builder,
    })
}

/// This process's replica id: `explicit` (`serve --replica-id`), else
/// `TOOLHOST_REPLICA_ID`, else, for a process that keeps serving,
/// `HOSTNAME-PID`; a one-shot command without either has none.
pub fn replica_id(explicit: Option<&str>, serving: bool) -> Option<String> {
    explicit
        .map(str::to_string)
        .or_else(|| std::env::var("TOOLHOST_REPLICA_ID").ok().filter(|id| !id.is_empty()))
        .or_else(|| serving.then(toolhost::replica::default_for_process))
}

/// `toolhost rules [--forget RULE]`.
pub async fn rules(global: &Global, args: RulesArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let Some(store) = shared(&settings, false).await? else {
        bail!(
            "with [state] store = \"local\", remembered rules are the [permissions] allow entries of the settings \
             file \"allow and remember\" writes to; `toolhost rules` lists those of a shared store ([state] store = \
             \"redis\")"
        );
    };
    if let Some(rule) = &args.forget {
        if !toolhost::coordination::RuleStore::forget_rule(&*store, rule).await? {
            bail!("no rule `{rule}` is remembered; `toolhost rules` lists them as they are written");
        }
        outln!("forgot {rule}");
        return Ok(crate::exit::OK);
    }
    let (_, mut rules) = toolhost::coordination::RuleStore::remembered_rules(&*store).await?;
    rules.sort_by(|a, b| a.at.cmp(&b.at));
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rules)?);
    } else if rules.is_empty() {
        outln!("no remembered rules");
    } else {
        for r in &rules {
            outln!("{} {}  (by {}, {})", r.behavior, crate::shown::line(&r.rule), crate::shown::line(&r.by), r.at);
        }
    }
    Ok(crate::exit::OK)
}
