//! `toolhost push`, `pull` and `sign`: components through OCI registries
//! (the library's `toolhost::oci`), with the credentials given here or the
//! Docker configuration's.

use std::io::BufRead as _;

use anyhow::{Context as _, Result, bail};
use toolhost::oci::registry::{Registry, RegistryOptions};
use toolhost::oci::resolve::{Resolver, parse};
use toolhost::oci::signature::{self, Key};
use toolhost::settings::Settings;

use super::args::{Global, PullArgs, PushArgs, RegistryArgs, SignArgs};
use super::exit;
use crate::out::outln;

/// The registry options of `settings` with the credentials of `args`.
pub fn options(settings: &Settings, args: &RegistryArgs) -> Result<RegistryOptions> {
    let mut options = RegistryOptions::from_settings(settings);
    if let Some(user) = &args.username {
        let mut password = String::new();
        std::io::stdin().lock().read_line(&mut password).context("reading the password from standard input")?;
        let password = password.trim_end_matches(['\r', '\n']).to_string();
        if password.is_empty() {
            bail!(
                "--password-stdin read an empty password; pipe it in, e.g. `echo \"$TOKEN\" | toolhost push … --username {user} --password-stdin`"
            );
        }
        options.credentials = Some((user.clone(), password));
    }
    Ok(options)
}

pub async fn push(global: &Global, args: PushArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let reference = parse(&args.reference)?;
    if reference.digest().is_some() {
        bail!("push to a tag (host/name:tag), not a digest: the registry names what it stores by its digest itself");
    }
    let bytes = toolhost::own_file::read(&args.file, settings.limits.component_bound())
        .with_context(|| format!("reading {}", args.file.display()))?
        .bytes;
    let registry = Registry::new(options(&settings, &args.registry)?)?;
    let digest = registry.push_component(&reference, bytes).await?;
    outln!("pushed {} to {reference}", args.file.display());
    outln!("digest {digest}");
    outln!("pin it with: oci://{}/{}@{digest}", reference.registry(), reference.repository());
    Ok(exit::OK)
}

pub async fn pull(global: &Global, args: PullArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let resolver = Resolver::new(&settings, options(&settings, &args.registry)?)?;
    let entry = entry_of(&args.reference);
    let resolved = resolver.follow_tag(&entry).await?;
    if let Some(out) = &args.out {
        std::fs::copy(&resolved.file, out).with_context(|| format!("writing {}", out.display()))?;
    }
    outln!("pulled {entry}");
    outln!("digest {}", resolved.digest);
    outln!("sha256 {}", resolved.sha256);
    if let Some(key) = &resolved.signed_by {
        outln!("signed by {key}");
    }
    outln!("file {}", args.out.as_ref().unwrap_or(&resolved.file).display());
    Ok(exit::OK)
}

pub async fn sign(global: &Global, args: SignArgs) -> Result<u8> {
    let (settings, _) = global.settings()?;
    let key = Key::load(&args.key)?;
    let file = std::path::Path::new(&args.target);
    if toolhost::registry::oci_reference(file).is_none() && file.exists() {
        let bytes = toolhost::own_file::read(file, settings.limits.component_bound())
            .with_context(|| format!("reading {}", file.display()))?
            .bytes;
        let sig = signature::detached_path(file);
        std::fs::write(&sig, key.sign(&bytes) + "\n").with_context(|| format!("writing {}", sig.display()))?;
        outln!("signed {} (SHA-256 {}) into {}", file.display(), toolhost::lockfile::sha256_hex(&bytes), sig.display());
        return Ok(exit::OK);
    }
    let reference = parse(&args.target)?;
    let registry = Registry::new(options(&settings, &args.registry)?)?;
    let manifest = registry
        .manifest(&reference)
        .await?
        .with_context(|| format!("{} has no manifest {reference} to sign", reference.resolve_registry()))?;
    let repository = format!("{}/{}", reference.registry(), reference.repository());
    let payload = signature::payload(&repository, &manifest.digest);
    let sig = key.sign(&payload);
    let sig_ref = registry.push_signature(&reference, &manifest.digest, payload, sig).await?;
    outln!("signed {repository}@{} (cosign signature {sig_ref})", manifest.digest);
    Ok(exit::OK)
}

/// `text` as a `plugins` entry (`oci://…`).
fn entry_of(text: &str) -> String {
    if text.starts_with(toolhost::registry::OCI_SCHEME) {
        text.to_string()
    } else {
        format!("{}{text}", toolhost::registry::OCI_SCHEME)
    }
}
