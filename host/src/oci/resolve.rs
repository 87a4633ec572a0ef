//! From a `plugins` entry `oci://…` to a verified component file in the
//! content store: the trust rules of references.
//!
//! - A reference the lock file holds is pulled by the digest locked for
//!   it, never by its tag (a tag that moved moves nothing), and its layer
//!   must be the bytes locked (SHA-256).
//! - With `locked`, a reference the lock does not hold is refused.
//! - Otherwise a tag is resolved at the registry; a digest is taken as
//!   written.
//! - Every manifest and layer is checked against its digest; the
//!   signature (when `[trust]` asks for one) before the layer is fetched;
//!   nothing is stored, and so nothing compiled, before both checks.
//! - What the store holds serves without the registry (offline starts).

use std::path::PathBuf;

use anyhow::{Context as _, Result, anyhow, bail};
use oci_client::Reference;

use super::registry::{Manifest, Registry, RegistryOptions, WASM_LAYER, check_digest_syntax};
use super::signature::{self, TrustedKey, Verdict};
use super::store::Store;
use crate::lockfile::LockFile;
use crate::own_file::Bound;
use crate::registry::oci_reference;
use crate::settings::Settings;

/// A reference resolved: where its verified component lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The `plugins` entry (`oci://…`).
    pub entry: String,
    /// The manifest digest it resolved to.
    pub digest: String,
    /// The component in the content store.
    pub file: PathBuf,
    /// SHA-256 of the component, lowercase hex (its layer digest).
    pub sha256: String,
    /// The trusted key whose signature it carries, if one does.
    pub signed_by: Option<String>,
}

/// Resolves references under one set of settings.
pub struct Resolver {
    registry: Registry,
    store: Store,
    keys: Vec<TrustedKey>,
    require_signature: bool,
}

impl Resolver {
    /// A resolver for `settings` (its cache folder, `[registry]`, `[trust]`)
    /// with the registry `options`.
    pub fn new(settings: &Settings, options: RegistryOptions) -> Result<Self> {
        Ok(Self {
            registry: Registry::new(options)?,
            store: Store::new(&settings.cache_dir()),
            keys: signature::trusted_keys(&settings.trust.keys)?,
            require_signature: settings.trust.require_signature,
        })
    }

    /// The registry client.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The content store.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Resolves `entry` for loading: by the lock's digest when the lock
    /// holds it, refused when `locked` and it does not, else as written.
    pub async fn resolve(&self, entry: &str, lock: Option<&LockFile>, locked: bool) -> Result<Resolved> {
        let reference = parse(entry)?;
        if let Some(pinned) = lock.and_then(|l| l.by_reference(entry)) {
            let digest = pinned.digest.as_deref().ok_or_else(|| {
                anyhow!("the lock entry of {entry} has no digest; write the lock again with `toolhost lock`")
            })?;
            let by_digest = reference.clone_with_digest(digest.to_string());
            return self.fetch(entry, &by_digest, digest, None, Some(&pinned.sha256)).await;
        }
        if locked {
            bail!(
                "{entry} is refused: it is not in the lock file and this host is locked (locked = true or --locked); \
                 pin it with `toolhost lock`"
            );
        }
        match reference.digest() {
            Some(digest) => self.fetch(entry, &reference, digest, None, None).await,
            None => self.follow_tag(entry).await,
        }
    }

    /// Resolves `entry`'s tag at the registry now (what `toolhost lock`
    /// records and `serve --watch` polls); a reference by digest is taken
    /// as written.
    pub async fn follow_tag(&self, entry: &str) -> Result<Resolved> {
        let reference = parse(entry)?;
        if let Some(digest) = reference.digest() {
            return self.fetch(entry, &reference, digest, None, None).await;
        }
        let manifest = self
            .registry
            .manifest(&reference)
            .await
            .with_context(|| format!("resolving {entry}"))?
            .ok_or_else(|| anyhow!("{entry}: registry {} has no such tag", reference.resolve_registry()))?;
        let digest = manifest.digest.clone();
        let by_digest = reference.clone_with_digest(digest.clone());
        self.fetch(entry, &by_digest, &digest, Some(manifest), None).await
    }

    /// The manifest `digest` of `reference` (`manifest`: already read),
    /// its signature judged, its component in the store; `sha256`: the
    /// component bytes it must be (a lock's pin).
    async fn fetch(
        &self,
        entry: &str,
        reference: &Reference,
        digest: &str,
        manifest: Option<Manifest>,
        sha256: Option<&str>,
    ) -> Result<Resolved> {
        check_digest_syntax(digest)?;
        let max = self.registry.options().max_manifest_bytes;
        let (bytes, fresh) = match (manifest, self.store.manifest(digest, max)) {
            (Some(m), _) => (m.bytes, true),
            (None, Some(stored)) => (stored, false),
            (None, None) => {
                let m = self
                    .registry
                    .manifest(reference)
                    .await
                    .with_context(|| format!("pulling {entry} ({digest}); it is not in the cache"))?
                    .ok_or_else(|| {
                        anyhow!("{entry}: registry {} has no manifest {digest}", reference.resolve_registry())
                    })?;
                (m.bytes, true)
            }
        };
        let layer = wasm_layer(entry, &bytes, self.registry.options().max_layer_bytes)?;
        if let Some(pinned) = sha256
            && layer.trim_start_matches("sha256:") != pinned
        {
            bail!(
                "{entry} is refused: its manifest {digest} holds the component {layer}, not the sha256:{pinned} the lock pins"
            );
        }
        let signed_by = self.signature(entry, reference, digest, fresh).await?;
        let what = format!("the component of {entry}");
        let bound = Bound { max: self.registry.options().max_layer_bytes, name: "[limits] max_component_bytes" };
        let file = if self.store.has_component(&layer, bound) {
            self.store.component_path(&layer)?
        } else {
            let blob = self
                .registry
                .blob(reference, &layer, bound.max, &what)
                .await
                .with_context(|| format!("pulling {entry}; its component is not in the cache"))?;
            self.store.put_component(&layer, &blob)?
        };
        if fresh {
            self.store.put_manifest(digest, &bytes)?;
        }
        Ok(Resolved {
            entry: entry.to_string(),
            digest: digest.to_string(),
            file,
            sha256: layer.trim_start_matches("sha256:").to_string(),
            signed_by,
        })
    }

    /// The trusted key that signed manifest `digest`: from the store when
    /// it was verified before and the key is still trusted, else asked of
    /// the registry (when keys are configured); refused when a signature is
    /// required and none is by a trusted key.
    async fn signature(&self, entry: &str, reference: &Reference, digest: &str, fresh: bool) -> Result<Option<String>> {
        if self.keys.is_empty() && !self.require_signature {
            return Ok(None);
        }
        if !fresh
            && let Some(signer) = self.store.signer(digest)
            && self.keys.iter().any(|k| k.name == signer)
        {
            return Ok(Some(signer));
        }
        let verdict = self
            .remote_verdict(reference, digest)
            .await
            .with_context(|| format!("checking the signature of {entry} ({digest})"))?;
        let signer = judge(&verdict, self.require_signature, entry)?;
        if let Some(signer) = &signer {
            self.store.put_signer(digest, signer)?;
        }
        Ok(signer)
    }

    /// The cosign signatures of manifest `digest` in `reference`'s
    /// repository, judged against the trusted keys.
    async fn remote_verdict(&self, reference: &Reference, digest: &str) -> Result<Verdict> {
        let tag = signature::signature_tag(digest);
        let sig_ref = Reference::with_tag(reference.registry().to_string(), reference.repository().to_string(), tag);
        let Some(manifest) = self.registry.manifest(&sig_ref).await? else { return Ok(Verdict::Unsigned) };
        let mut seen = false;
        for layer in manifest
            .parsed
            .layers
            .iter()
            .filter(|l| l.media_type == signature::SIMPLESIGNING)
            .take(signature::MAX_SIGNATURES)
        {
            let Some(sig) = layer.annotations.as_ref().and_then(|a| a.get(signature::SIGNATURE_ANNOTATION)) else {
                continue;
            };
            seen = true;
            let payload = self
                .registry
                .blob(&sig_ref, &layer.digest, signature::MAX_PAYLOAD_BYTES, "a signature payload")
                .await?;
            if !signature::payload_names(&payload, digest) {
                continue;
            }
            if let Some(key) = signature::verify(&self.keys, &payload, sig) {
                return Ok(Verdict::SignedBy(key));
            }
        }
        Ok(if seen { Verdict::Untrusted } else { Verdict::Unsigned })
    }
}

/// The trusted key of `verdict` on `what`; an error when `required` and no
/// trusted key signed it, naming why and the fix.
pub fn judge(verdict: &Verdict, required: bool, what: &str) -> Result<Option<String>> {
    match verdict {
        Verdict::SignedBy(key) => Ok(Some(key.clone())),
        Verdict::Untrusted if required => bail!(
            "{what} is refused: it is signed, but by no key of [trust] keys, and [trust] require_signature = true; \
             add the signer's public key to [trust] keys if you trust it, or have it signed (`toolhost sign`) by a trusted key"
        ),
        Verdict::Unsigned if required => bail!(
            "{what} is refused: it carries no signature and [trust] require_signature = true; \
             sign it with `toolhost sign … --key KEY` by a key whose public half is in [trust] keys"
        ),
        _ => Ok(None),
    }
}

/// The reference of the `plugins` entry `entry` (`oci://…`).
pub fn parse(entry: &str) -> Result<Reference> {
    let text = oci_reference(std::path::Path::new(entry)).unwrap_or(entry);
    text.parse::<Reference>().with_context(|| {
        format!("'{entry}' is not a registry reference (oci://host[:port]/name[:tag] or oci://host/name@sha256:…)")
    })
}

/// The digest of the one wasm layer of the manifest `bytes`; an error
/// naming what is wrong for any other layout, or a layer over `max` bytes.
fn wasm_layer(entry: &str, bytes: &[u8], max: u64) -> Result<String> {
    let manifest: oci_client::manifest::OciImageManifest =
        serde_json::from_slice(bytes).with_context(|| format!("{entry}: the manifest is not an OCI image manifest"))?;
    let wasm: Vec<_> = manifest.layers.iter().filter(|l| l.media_type == WASM_LAYER).collect();
    let [layer] = wasm.as_slice() else {
        bail!(
            "{entry} is not a wasm component artifact: its manifest has {} `{WASM_LAYER}` layers (one expected; push it with `toolhost push` or `wkg oci push`)",
            wasm.len()
        );
    };
    if layer.size < 0 || layer.size as u64 > max {
        bail!(
            "{entry}: its component is {} bytes, more than [limits] max_component_bytes ({max}); refused",
            layer.size
        );
    }
    check_digest_syntax(&layer.digest)?;
    Ok(layer.digest.clone())
}

/// Every `oci://` entry of `settings.plugins`.
pub fn references(settings: &Settings) -> Vec<String> {
    settings.plugins.iter().filter_map(|p| oci_reference(p).map(|_| p.display().to_string())).collect()
}
