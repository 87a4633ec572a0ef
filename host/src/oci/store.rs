//! The content store of pulled plugins, in the compile cache folder
//! (`<cache_dir>/oci/`, toolhost's own: off limits to every tool): each
//! verified manifest and component by its digest, and the trusted key a
//! manifest's signature was verified with. Nothing enters it before its
//! digest (and, when asked, its signature) was checked; everything read
//! back is checked against its digest again. Offline starts read it.
//!
//! ```text
//! <cache_dir>/oci/manifests/sha256/<hex>     the manifest's bytes
//! <cache_dir>/oci/blobs/sha256/<hex>.wasm    the component (its layer)
//! <cache_dir>/oci/signers/sha256/<hex>       the key that signed the manifest
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::registry::{check_digest_syntax, sha256_digest};
use crate::own_file::Bound;

/// The content store under one cache folder.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store of the compile cache folder `cache_dir` (absolute, so no
    /// path it gives depends on the current directory).
    pub fn new(cache_dir: &Path) -> Self {
        let cache_dir = std::path::absolute(cache_dir).unwrap_or_else(|_| cache_dir.to_path_buf());
        Self { root: cache_dir.join("oci") }
    }

    /// The folder everything lies in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the component of layer `digest` lies (whether or not it is
    /// there yet).
    pub fn component_path(&self, digest: &str) -> Result<PathBuf> {
        Ok(self.root.join("blobs/sha256").join(format!("{}.wasm", check_digest_syntax(digest)?)))
    }

    /// Whether the component of layer `digest` is stored, its bytes still
    /// those of the digest.
    pub fn has_component(&self, digest: &str, bound: Bound<'_>) -> bool {
        self.component_path(digest).is_ok_and(|path| read_verified(&path, digest, bound).is_some())
    }

    /// Stores the component of layer `digest` (its bytes checked).
    pub fn put_component(&self, digest: &str, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.component_path(digest)?;
        put(&path, digest, bytes)?;
        Ok(path)
    }

    /// Points the link of the `plugins` entry `entry` at `target` (a stored
    /// component; an absolute path, so the link means the same from
    /// anywhere), replacing it atomically when it pointed elsewhere; answers
    /// the link. The host loads an entry through its link, so a watching
    /// host sees a new version arrive as a changed file and reloads it by
    /// the rules of a file (capability diff, atomic swap).
    pub fn link(&self, entry: &str, target: &Path) -> Result<PathBuf> {
        let name = hex::encode(&<sha2::Sha256 as sha2::Digest>::digest(entry.as_bytes())[..16]);
        let path = self.root.join("refs").join(format!("{name}.wasm"));
        let target = std::path::absolute(target).context("the absolute path of a stored component")?;
        if std::fs::read_link(&path).is_ok_and(|now| now == target) {
            return Ok(path);
        }
        let dir = path.parent().context("a store path has a folder")?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let tmp = dir.join(format!(".tmp{}-{}", std::process::id(), rand_suffix()));
        std::os::unix::fs::symlink(&target, &tmp).with_context(|| format!("linking {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("replacing {}", path.display()))?;
        Ok(path)
    }

    /// The stored manifest `digest`, if it is there and still its bytes.
    pub fn manifest(&self, digest: &str, max: u64) -> Option<Vec<u8>> {
        let path = self.root.join("manifests/sha256").join(check_digest_syntax(digest).ok()?);
        read_verified(&path, digest, Bound { max, name: "[registry] max_manifest_bytes" })
    }

    /// Stores the manifest `digest` (its bytes checked).
    pub fn put_manifest(&self, digest: &str, bytes: &[u8]) -> Result<()> {
        put(&self.root.join("manifests/sha256").join(check_digest_syntax(digest)?), digest, bytes)
    }

    /// The trusted key whose signature of manifest `digest` was verified.
    pub fn signer(&self, digest: &str) -> Option<String> {
        let path = self.root.join("signers/sha256").join(check_digest_syntax(digest).ok()?);
        let text = crate::own_file::read_to_string(&path, Bound { max: 4096, name: "a signer record" }).ok()?;
        Some(text.trim_end().to_string()).filter(|s| !s.is_empty())
    }

    /// Records that `key` signed the manifest `digest`.
    pub fn put_signer(&self, digest: &str, key: &str) -> Result<()> {
        let path = self.root.join("signers/sha256").join(check_digest_syntax(digest)?);
        write_atomically(&path, format!("{key}\n").as_bytes())
    }
}

/// The bytes of `path` when they hash to `digest`.
fn read_verified(path: &Path, digest: &str, bound: Bound<'_>) -> Option<Vec<u8>> {
    let own = crate::own_file::read(path, bound).ok()?;
    (sha256_digest(&own.bytes) == digest).then_some(own.bytes)
}

/// Writes `bytes` to `path` after checking they hash to `digest`.
fn put(path: &Path, digest: &str, bytes: &[u8]) -> Result<()> {
    let actual = sha256_digest(bytes);
    anyhow::ensure!(actual == digest, "digest mismatch: bytes of {actual} cannot be stored as {digest}");
    write_atomically(path, bytes)
}

/// A temporary file beside `path`, then a rename: a reader never sees half.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().context("a store path has a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(".tmp{}-{}", std::process::id(), rand_suffix()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("storing {}", path.display()))
}

/// A suffix that differs between writers of one process.
fn rand_suffix() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_stored_reads_back_only_while_it_matches_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let bound = Bound { max: 1024, name: "test" };
        let digest = sha256_digest(b"wasm");
        assert!(store.put_component(&digest, b"other").is_err(), "bytes of another digest");
        assert!(!store.has_component(&digest, bound));
        let path = store.put_component(&digest, b"wasm").unwrap();
        assert!(path.is_absolute() && store.has_component(&digest, bound));
        std::fs::write(&path, b"tampered").unwrap();
        assert!(!store.has_component(&digest, bound), "a changed file is not the stored component");
        store.put_manifest(&sha256_digest(b"{}"), b"{}").unwrap();
        assert_eq!(store.manifest(&sha256_digest(b"{}"), 1024), Some(b"{}".to_vec()));
        let link = store.link("oci://r/t:1", &path).unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), path, "an absolute target");
        assert_eq!(store.link("oci://r/t:1", &path).unwrap(), link);
        store.put_signer(&digest, "/keys/team.pub").unwrap();
        assert_eq!(store.signer(&digest).as_deref(), Some("/keys/team.pub"));
    }
}
