//! Plugins shipped through OCI registries (issue 35): `toolhost push` /
//! `pull` / `sign`, `oci://` entries of `plugins` pulled into the content
//! store by digest, pinned by `toolhost lock`, and cosign-compatible
//! signatures checked before anything is compiled.
//!
//! - `registry.rs`: one bounded conversation with a registry (pull, push).
//! - `credentials.rs`: credentials as the Docker CLI finds them.
//! - `store.rs`: the content store in the compile cache folder.
//! - `signature.rs`: the cosign signature formats, signing and verifying.
//! - `resolve.rs`: the trust rules from a `plugins` entry to a file.

pub(crate) mod credentials;
pub mod registry;
pub mod resolve;
pub mod signature;
pub(crate) mod store;

use anyhow::Result;
use registry::RegistryOptions;
use resolve::{Resolved, Resolver};

use crate::lockfile::LockFile;
use crate::settings::Settings;

/// Replaces each `oci://` entry of `settings.plugins` by the link to its
/// verified component in the content store (pulled when not there),
/// following the lock (see [`resolve`]); answers what each resolved to.
pub async fn resolve_plugins(settings: &mut Settings, lock: Option<&LockFile>) -> Result<Vec<Resolved>> {
    let entries = resolve::references(settings);
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let resolver = Resolver::new(settings, RegistryOptions::from_settings(settings))?;
    let mut resolved = Vec::new();
    for entry in entries {
        let r = resolver.resolve(&entry, lock, settings.locked).await?;
        if let Some(slot) = settings.plugins.iter_mut().find(|p| p.as_os_str() == entry.as_str()) {
            *slot = resolver.store().link(&entry, &r.file)?;
        }
        resolved.push(r);
    }
    Ok(resolved)
}

/// Polls the tags of `entries` (`oci://` entries of `settings.plugins`)
/// every `[registry] poll_ms`, for ever: each tag that now points to
/// another manifest is pulled and verified beside the running version,
/// then its link in the content store is pointed at it, which a watching
/// host reloads as a changed file. An entry `skip` says is pinned (by
/// digest, or by the lock as read now) is not followed. Failures are
/// logged and tried again at the next poll.
pub async fn poll_tags(settings: Settings, entries: Vec<String>, skip: impl Fn(&str) -> bool) {
    let interval = std::time::Duration::from_millis(settings.registry.poll_ms.max(50));
    let resolver = match Resolver::new(&settings, RegistryOptions::from_settings(&settings)) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("not polling the registries: {e:#}");
            return;
        }
    };
    loop {
        tokio::time::sleep(interval).await;
        for entry in entries.iter().filter(|e| !skip(e)) {
            if resolve::parse(entry).is_ok_and(|r| r.digest().is_some()) {
                continue;
            }
            match resolver.follow_tag(entry).await {
                Ok(r) => {
                    if let Err(e) = resolver.store().link(entry, &r.file) {
                        tracing::warn!("{entry}: {e:#}");
                    }
                }
                Err(e) => tracing::warn!("polling {entry}: {e:#}"),
            }
        }
    }
}
