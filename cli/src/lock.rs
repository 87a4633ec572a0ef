//! `toolhost lock`: pins every configured plugin and middleware component in
//! `toolhost.lock` (name, file, SHA-256, declared capabilities), approving
//! what each now declares. A registry reference (`oci://…`) is resolved at
//! its registry now and pinned by the manifest digest it points to; the key
//! that signed a plugin (`[trust] keys`) is recorded.

use anyhow::{Context as _, Result};
use toolhost::lockfile::{LOCK_VERSION, LockFile, LockedPlugin, sha256_hex};
use toolhost::middleware::load_middleware_component;
use toolhost::oci::resolve::{Resolver, judge};
use toolhost::oci::signature;
use toolhost::settings::Settings;
use toolhost::tool::{Origin, load_component};

use super::args::{Global, LockArgs};
use super::exit;
use super::shown::line;
use crate::out::outln;

pub async fn lock(global: &Global, args: LockArgs) -> Result<u8> {
    let (settings, read) = global.settings()?;
    let path = settings.lock_path(Some(&Settings::remember_path(read.as_deref())?));
    let runtime = super::inspect::standalone_runtime(&settings)?;
    let mut lock = LockFile { version: LOCK_VERSION, plugins: Vec::new() };
    let references = toolhost::oci::resolve::references(&settings);
    if !references.is_empty() {
        let resolver = Resolver::new(&settings, super::registry::options(&settings, &args.registry)?)?;
        for entry in references {
            let resolved = resolver.follow_tag(&entry).await?;
            let bytes = read_component(&settings, &resolved.file, "plugin")?;
            let info = load_component(&runtime, &bytes, Origin::File(resolved.file.clone()), &entry).await?.tool.info;
            lock.plugins.push(LockedPlugin {
                name: info.name,
                kind: "tool".into(),
                file: resolved.file,
                sha256: resolved.sha256,
                declared: info.capabilities,
                signature: None,
                reference: Some(entry),
                digest: Some(resolved.digest),
                signed_by: resolved.signed_by,
            });
        }
    }
    let keys = signature::trusted_keys(&settings.trust.keys)?;
    for file in settings.plugin_files()? {
        let bytes = read_component(&settings, &file, "plugin")?;
        let file = std::path::absolute(&file)?;
        let label = file.display().to_string();
        let verdict = signature::verify_file(&keys, &file, &bytes)?;
        let signed_by = judge(&verdict, settings.trust.require_signature, &label)?;
        let info = load_component(&runtime, &bytes, Origin::File(file.clone()), &label).await?.tool.info;
        let sha256 = sha256_hex(&bytes);
        lock.plugins.push(LockedPlugin {
            name: info.name,
            kind: "tool".into(),
            file,
            sha256,
            declared: info.capabilities,
            signature: None,
            reference: None,
            digest: None,
            signed_by,
        });
    }
    for file in &settings.middleware.files {
        let bytes = read_component(&settings, file, "middleware")?;
        let file = std::path::absolute(file)?;
        let label = file.display().to_string();
        let info = load_middleware_component(&runtime, &bytes, Origin::File(file.clone()), &label).await?.info;
        lock.plugins.push(LockedPlugin {
            name: info.name,
            kind: "middleware".into(),
            file,
            sha256: sha256_hex(&bytes),
            declared: Default::default(),
            signature: None,
            reference: None,
            digest: None,
            signed_by: None,
        });
    }
    lock.save(&path)?;
    outln!("locked {} component(s) in {}", lock.plugins.len(), path.display());
    for p in &lock.plugins {
        let source = p.reference.clone().unwrap_or_else(|| p.file.display().to_string());
        let digest = p.digest.as_deref().map(|d| format!(" @{d}")).unwrap_or_default();
        let signer = p.signed_by.as_deref().map(|k| format!("  signed by {k}")).unwrap_or_default();
        outln!("  {}  {}  {}{digest}{signer}", line(&p.name), p.sha256, line(&source));
    }
    Ok(exit::OK)
}

/// A component file's bytes, read as the host reads them (a regular file
/// within `[limits] max_component_bytes`).
fn read_component(settings: &Settings, file: &std::path::Path, what: &str) -> Result<Vec<u8>> {
    let own = toolhost::own_file::read(file, settings.limits.component_bound())
        .with_context(|| format!("reading {what} {}", file.display()))?;
    Ok(own.bytes)
}
