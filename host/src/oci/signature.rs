//! Cosign-compatible keyed signatures: ECDSA P-256 over SHA-256, the
//! signature DER-encoded and base64'd, as `cosign sign --key` and
//! `cosign sign-blob --key` make them. The crypto is RustCrypto's `p256`
//! (none of our own); the `sigstore` crate was not taken: it brings
//! Fulcio/Rekor clients and their TLS stacks for the keyless flow, which
//! toolhost does not offer yet.
//!
//! - **A pulled reference** is signed like a container image: a manifest
//!   tagged `sha256-<hex>.sig` in the same repository, whose layers (media
//!   type [`SIMPLESIGNING`]) each hold the simple-signing payload naming
//!   the signed manifest digest, with the signature in the layer's
//!   annotation [`SIGNATURE_ANNOTATION`].
//! - **A plugin file** is signed by a detached signature beside it,
//!   `FILE.sig`: the base64 signature over the file's bytes (`cosign
//!   sign-blob --key KEY --output-signature FILE.sig FILE`).
//!
//! Private keys are PEM PKCS#8 (`BEGIN PRIVATE KEY`) or SEC1 (`BEGIN EC
//! PRIVATE KEY`), as `openssl` writes them; cosign's own encrypted key
//! format is not read (`cosign import-key-pair --key key.pem` makes a
//! cosign key of the same pair). Public keys are PEM SubjectPublicKeyInfo,
//! as `cosign.pub` is.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _};

/// The media type of a cosign signature layer.
pub const SIMPLESIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `type` of a cosign simple-signing payload.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The largest signature payload read (they are a few hundred bytes).
pub const MAX_PAYLOAD_BYTES: u64 = 64 * 1024;
/// The most signature layers looked at.
pub const MAX_SIGNATURES: usize = 16;

/// A private key to sign with.
pub struct Key(SigningKey);

impl Key {
    /// Reads a PEM private key (PKCS#8 or SEC1, P-256).
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::own_file::read_to_string(path, crate::own_file::SETTINGS_BOUND)
            .with_context(|| format!("reading the signing key {}", path.display()))?;
        if text.contains("ENCRYPTED SIGSTORE PRIVATE KEY") || text.contains("ENCRYPTED COSIGN PRIVATE KEY") {
            bail!(
                "{} is cosign's encrypted key format, which toolhost does not read; sign with a PEM P-256 key \
                 (`openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out key.pem`; \
                 `cosign import-key-pair --key key.pem` gives cosign the same pair)",
                path.display()
            );
        }
        let secret = p256::SecretKey::from_pkcs8_pem(&text)
            .or_else(|_| p256::SecretKey::from_sec1_pem(&text))
            .map_err(|_| anyhow::anyhow!("{} is not a PEM P-256 private key (PKCS#8 or SEC1)", path.display()))?;
        Ok(Self(SigningKey::from(secret)))
    }

    /// The base64 DER signature of `bytes`.
    pub fn sign(&self, bytes: &[u8]) -> String {
        let signature: Signature = self.0.sign(bytes);
        base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
    }
}

/// A public key of `[trust] keys`.
pub struct TrustedKey {
    /// Its file, as the settings name it (what the lock records).
    pub name: String,
    key: VerifyingKey,
}

/// Reads every key of `[trust] keys`; a key that does not read is an error
/// naming it.
pub fn trusted_keys(paths: &[PathBuf]) -> Result<Vec<TrustedKey>> {
    paths
        .iter()
        .map(|path| {
            let text = crate::own_file::read_to_string(path, crate::own_file::SETTINGS_BOUND)
                .with_context(|| format!("reading the trusted key {} ([trust] keys)", path.display()))?;
            let key = VerifyingKey::from_public_key_pem(&text).map_err(|_| {
                anyhow::anyhow!("{} ([trust] keys) is not a PEM P-256 public key like cosign.pub", path.display())
            })?;
            Ok(TrustedKey { name: path.display().to_string(), key })
        })
        .collect()
}

/// Whose signature something carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A valid signature by this trusted key (its name).
    SignedBy(String),
    /// Signatures, none valid by a trusted key.
    Untrusted,
    /// No signature at all.
    Unsigned,
}

impl Verdict {
    /// The trusted key that signed, if one did.
    pub fn signer(&self) -> Option<&str> {
        match self {
            Verdict::SignedBy(name) => Some(name),
            _ => None,
        }
    }
}

/// The trusted key whose signature `signature` (base64, DER or fixed
/// size) over `bytes` is valid, if any.
pub fn verify(keys: &[TrustedKey], bytes: &[u8], signature: &str) -> Option<String> {
    let raw = base64::engine::general_purpose::STANDARD.decode(signature.trim()).ok()?;
    let signature = Signature::from_der(&raw).or_else(|_| Signature::from_slice(&raw)).ok()?;
    keys.iter().find(|k| k.key.verify(bytes, &signature).is_ok()).map(|k| k.name.clone())
}

/// The detached signature file of a plugin file: `FILE.sig`.
pub fn detached_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(".sig");
    PathBuf::from(name)
}

/// The verdict on the plugin file `file` of bytes `bytes`, by its detached
/// signature beside it (none: [`Verdict::Unsigned`]).
pub fn verify_file(keys: &[TrustedKey], file: &Path, bytes: &[u8]) -> Result<Verdict> {
    let sig = detached_path(file);
    let text = match crate::own_file::read_to_string(&sig, crate::own_file::Bound { max: 4096, name: "a signature" }) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Verdict::Unsigned),
        Err(e) => return Err(e).with_context(|| format!("reading the signature {}", sig.display())),
    };
    Ok(verify(keys, bytes, &text).map_or(Verdict::Untrusted, Verdict::SignedBy))
}

/// The simple-signing payload cosign signs for the manifest `digest` of
/// the repository `docker_reference` (`host/ns/tool`).
pub fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": { "docker-reference": docker_reference },
            "image": { "docker-manifest-digest": digest },
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    }))
    .expect("a JSON value serialises")
}

/// Whether `payload` is a simple-signing payload for the manifest `digest`.
pub fn payload_names(payload: &[u8], digest: &str) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(payload) else { return false };
    value["critical"]["type"] == PAYLOAD_TYPE && value["critical"]["image"]["docker-manifest-digest"] == digest
}

/// The tag of the signatures of the manifest `digest`: `sha256-<hex>.sig`.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(dir: &Path, seed: u8) -> (Key, PathBuf) {
        let secret = p256::SecretKey::from_slice(&[seed; 32]).unwrap();
        let public = secret.public_key();
        let path = dir.join(format!("k{seed}.pub"));
        use p256::pkcs8::EncodePublicKey as _;
        std::fs::write(&path, public.to_public_key_pem(Default::default()).unwrap()).unwrap();
        (Key(SigningKey::from(secret)), path)
    }

    #[test]
    fn a_signature_verifies_only_under_its_key_and_over_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = pair(dir.path(), 7);
        let (_, other) = pair(dir.path(), 9);
        let sig = key.sign(b"component");
        let trusted = trusted_keys(std::slice::from_ref(&public)).unwrap();
        assert_eq!(verify(&trusted, b"component", &sig), Some(public.display().to_string()));
        assert_eq!(verify(&trusted, b"componenT", &sig), None);
        assert_eq!(verify(&trusted_keys(&[other]).unwrap(), b"component", &sig), None);
        assert_eq!(verify(&trusted, b"component", "not base64!"), None);
    }

    #[test]
    fn a_payload_names_its_digest() {
        let p = payload("127.0.0.1:5000/ns/t", "sha256:ab");
        assert!(payload_names(&p, "sha256:ab"));
        assert!(!payload_names(&p, "sha256:cd"));
        assert_eq!(signature_tag("sha256:ab"), "sha256-ab.sig");
    }
}
