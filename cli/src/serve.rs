//! `toolhost serve`: a long-running host that agents reach over MCP.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use toolhost::coordination::ReplicaRegistry;
use toolhost::presence::{Presence, PresenceOptions};
use toolhost::settings::StoreKind;
use toolhost::state::SessionStates;
use toolhost::state::{MemoryStore, StateStore};
use toolhost_mcp::{HttpOptions, McpFront};

use super::args::{Global, ServeArgs};
use super::{call, exit};

pub async fn serve(global: &Global, args: ServeArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let metrics_addr = match args.metrics {
        Some(addr) => Some(addr),
        None => settings.telemetry.metrics_addr.as_deref().map(parse_addr).transpose()?,
    };
    // With a shared store the keyring is read (and refused) before Redis
    // is waited for.
    let keyring = match settings.state.store {
        StoreKind::Redis => Some(crate::state_store::keyring(&settings)?),
        StoreKind::Local => None,
    };
    let host = global.host_for_serve(metrics_addr.is_some(), args.replica_id.as_deref()).await?;
    report_background_loads(&host);
    // Bound before serving starts, so a scraper started after "listening"
    // finds it.
    if let Some(addr) = metrics_addr {
        let bound = toolhost_mcp::serve_metrics(host.clone(), addr, args.metrics_token.clone()).await?;
        eprintln!("toolhost serve: metrics on http://{bound}/metrics");
    }
    let telemetry = host.telemetry().cloned();
    let shared = crate::state_store::shared(host.settings(), true).await?;
    let store: Option<Arc<dyn StateStore>> = shared.clone().map(|s| s as Arc<dyn StateStore>);
    let registry: Option<Arc<dyn ReplicaRegistry>> = shared.clone().map(|s| s as Arc<dyn ReplicaRegistry>);
    let states = match (&args.session, store) {
        (Some(name), store) => {
            let state = call::open_session_in(host.settings(), store, name).await?;
            SessionStates::shared(state.store().clone(), state.key().clone())
        }
        (None, Some(store)) => SessionStates::per_session(store).across_processes(),
        (None, None) => SessionStates::per_session(Arc::new(MemoryStore::default())),
    };
    let watcher = if args.watch || host.settings().watch { Some(watch(&host).await?) } else { None };
    let session_idle = std::time::Duration::from_millis(host.settings().state.session_idle_ms);
    let front = match (&shared, keyring) {
        (Some(shared), Some(keyring)) => {
            let front = McpFront::for_deployment(host, states, shared.clone(), &keyring)?;
            front.share_events(shared.clone());
            front.share_sessions(shared.clone(), &keyring, session_idle);
            front
        }
        _ => McpFront::new(host, states)?,
    };
    if let Some((watcher, _)) = &watcher {
        front.forward_reload_errors(watcher.reload_errors());
    }
    let presence = match &registry {
        Some(registry) => {
            Some(register_replica(front.host(), registry.clone(), watcher.as_ref().map(|(w, _)| w)).await?)
        }
        None => None,
    };
    let grace = seconds("--grace", args.grace)?;
    match args.http {
        None => toolhost_mcp::serve_stdio(front, grace, stopped()).await?,
        Some(addr) => {
            let mut options = HttpOptions::new(addr);
            options.grace = grace;
            options.token = token(args.token, args.token_file.as_ref())?;
            options.allowed_origins = args.allowed_origins;
            options.allowed_hosts = args.allowed_hosts;
            options.max_body_bytes = args.max_body_bytes.unwrap_or(options.max_body_bytes);
            options.max_connections = args.max_connections.unwrap_or(options.max_connections);
            options.max_streams = args.max_streams.unwrap_or(options.max_streams);
            options.max_streams_per_peer = args.max_streams_per_peer.unwrap_or(options.max_streams_per_peer);
            options.max_sessions = args.max_sessions.unwrap_or(options.max_sessions);
            for (value, flag, field) in [
                (args.write_timeout, "--write-timeout", &mut options.write_timeout),
                (args.session_idle_timeout, "--session-idle-timeout", &mut options.session_idle_timeout),
                (args.unused_session_timeout, "--unused-session-timeout", &mut options.unused_session_timeout),
            ] {
                if let Some(value) = value {
                    *field = seconds(flag, value)?;
                }
            }
            let announce = |bound| eprintln!("toolhost serve: listening on http://{bound}/mcp");
            toolhost_mcp::serve_http(front, options, announce, stopped()).await?;
        }
    }
    if let Some(presence) = presence
        && let Err(e) = presence.leave().await
    {
        eprintln!("warning: this replica's record stays in the state store until it expires: {e}");
    }
    if let Some((_watcher, status)) = watcher {
        let _ = std::fs::remove_file(status);
    }
    if let Some(telemetry) = telemetry {
        telemetry.flush(std::time::Duration::from_secs(5)).await;
    }
    Ok(exit::OK)
}

/// Registers this replica in the shared store, with a heartbeat until it
/// stops; warns of live replicas that decide under another policy.
async fn register_replica(
    host: &toolhost::Toolhost,
    registry: Arc<dyn ReplicaRegistry>,
    watcher: Option<&toolhost::reload::Watcher>,
) -> Result<Presence> {
    let id = host.replica_id().context("a serving host has a replica id")?;
    let mut options = PresenceOptions::new(id);
    options.reload_errors = watcher.map(toolhost::reload::Watcher::error_lines);
    let presence = host
        .announce(registry, options)
        .await
        .with_context(|| format!("registering the replica {id} in the state store"))?;
    for (other, parts) in &presence.other_policies {
        eprintln!(
            "warning: the live replica {} ({}) decides under another policy ({}): a question asked through one is \
             refused by the other; give every replica the same settings",
            crate::shown::line(&other.id),
            crate::shown::line(&other.process()),
            parts.join(", ")
        );
    }
    Ok(presence)
}

/// `[telemetry] metrics_addr` as a socket address.
fn parse_addr(text: &str) -> Result<std::net::SocketAddr> {
    text.parse().map_err(|e| {
        anyhow::anyhow!("[telemetry] metrics_addr = \"{text}\" is not an address like 127.0.0.1:9464: {e}")
    })
}

/// Serves at once while plugins load in the background (clients are sent
/// `tools/list_changed` as each arrives, and a failure as a log message);
/// says on stderr what loads and how it ended.
fn report_background_loads(host: &toolhost::Toolhost) {
    let pending = host.pending_loads();
    if pending.is_empty() {
        return;
    }
    let files: Vec<String> = pending.iter().map(|p| p.file.display().to_string()).collect();
    eprintln!(
        "toolhost serve: serving; {} plugin file(s) not in the compile cache load in the background: {}",
        files.len(),
        files.join(", ")
    );
    let host = host.clone();
    tokio::spawn(async move {
        match host.ready().await {
            Ok(()) => eprintln!("toolhost serve: every plugin is loaded"),
            Err(failures) => eprintln!("error: {}", crate::shown::block(&failures.to_string())),
        }
        crate::args::warn_unknown_rules(&host);
    });
}

/// Starts watching the plugin files; returns the watch and its status file.
async fn watch(host: &toolhost::Toolhost) -> Result<(toolhost::reload::Watcher, PathBuf)> {
    let status = host.settings().serve_status_dir().join(format!("{}.json", std::process::id()));
    let options = toolhost::reload::WatchOptions { status_file: Some(status.clone()), ..Default::default() };
    let watcher = host.watch(options).await?;
    eprintln!("toolhost serve: watching the plugin files for changes (status: toolhost status)");
    Ok((watcher, status))
}

/// `value` seconds of `flag` as a duration: a number, 0 or more.
fn seconds(flag: &str, value: f64) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(value)
        .map_err(|_| anyhow::anyhow!("{flag} takes a number of seconds, 0 or more (got {value})"))
}

/// The token from --token or the first line of --token-file.
fn token(token: Option<String>, file: Option<&PathBuf>) -> Result<Option<String>> {
    match (token, file) {
        (Some(_), Some(_)) => bail!("give the token once: --token or --token-file, not both"),
        (Some(t), None) => Ok(Some(t)),
        (None, Some(path)) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading the token from {}", path.display()))?;
            Ok(Some(text.lines().next().unwrap_or_default().trim().to_string()))
        }
        (None, None) => Ok(None),
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn stopped() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("warning: cannot watch for SIGTERM ({e}); stop with SIGINT");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    eprintln!("toolhost serve: stopping");
}
