//! The on-disk compile cache.
//!
//! An entry is keyed by the BLAKE3 hash of the component bytes and the
//! engine's compatibility hash (wasmtime version, target, settings), so a new
//! engine never loads an old artifact. Each entry carries the BLAKE3 hash of
//! the artifact itself, checked before deserialising: a tampered or truncated
//! entry is detected, discarded and recompiled, never executed. (BLAKE3
//! rather than SHA-256 because it is checked on every start: it hashes the
//! built-ins' artifacts several times faster.)
//!
//! **Bounded.** The folder holds at most `max_bytes` of entries (default
//! [`DEFAULT_MAX_BYTES`]): a hit marks its entry used (its modification
//! time), and storing an entry that takes the folder over the bound removes
//! the least recently used entries until it is at nine tenths of it. A
//! long-running host that reloads plugins leaves a bounded folder.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, Result};
use wasmtime::Engine;
use wasmtime::component::Component;

/// What the cache did for one compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded a verified artifact.
    Hit,
    /// Compiled and stored a new artifact.
    Miss,
    /// An entry existed but failed verification; recompiled.
    Recompiled,
    /// No cache configured.
    Disabled,
}

const MAGIC: &[u8; 8] = b"THCACHE2";

/// The default bound of a cache folder: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// A directory of verified precompiled components.
pub struct CompileCache {
    dir: PathBuf,
    engine_key: String,
    max_bytes: u64,
    /// Components loaded from the cache so far (`toolhost_compile_cache_hits_total`).
    hits: std::sync::atomic::AtomicU64,
}

impl CompileCache {
    /// Components loaded from this cache so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Opens (creating) the cache directory for this engine.
    pub fn open(dir: &Path, engine: &Engine) -> Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("creating the compile cache directory {}", dir.display()))?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(Self {
            dir: dir.to_path_buf(),
            engine_key: format!("{:016x}", hasher.finish()),
            max_bytes: DEFAULT_MAX_BYTES,
            hits: Default::default(),
        })
    }

    /// Bounds the folder to `max_bytes` of entries.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The path of the entry for `bytes`.
    pub fn entry_path(&self, bytes: &[u8]) -> PathBuf {
        let content = blake3::hash(bytes).to_hex();
        self.dir.join(format!("{}-{}.cwasm", &content[..32], self.engine_key))
    }

    /// Loads a verified artifact, or compiles (with `compile`) and stores
    /// one.
    pub fn get_or_compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        compile: impl FnOnce() -> Result<Component>,
    ) -> Result<(Component, CacheOutcome)> {
        let (found, outcome) = self.lookup(engine, bytes);
        if let Some(component) = found {
            return Ok((component, outcome));
        }
        let component = compile()?;
        self.put(bytes, &component);
        Ok((component, outcome))
    }

    /// The verified artifact for `bytes`, if there is one: `(Some, Hit)`,
    /// or `(None, Miss)` when there is no entry, `(None, Recompiled)` when
    /// the entry failed verification.
    pub fn lookup(&self, engine: &Engine, bytes: &[u8]) -> (Option<Component>, CacheOutcome) {
        let path = self.entry_path(bytes);
        let Ok(stored) = fs::read(&path) else {
            return (None, CacheOutcome::Miss);
        };
        match verified_artifact(&stored) {
            // SAFETY: the artifact was produced by `Component::serialize`
            // for an engine with this compatibility hash (the file name),
            // and its BLAKE3 hash matches the one written with it, so it
            // is byte-for-byte what this host wrote.
            Some(artifact) => match unsafe { Component::deserialize(engine, artifact) } {
                Ok(component) => {
                    mark_used(&path);
                    self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    return (Some(component), CacheOutcome::Hit);
                }
                Err(e) => tracing::warn!("cache entry {} unusable ({e:#}); recompiling", path.display()),
            },
            None => tracing::warn!("cache entry {} failed verification; recompiling", path.display()),
        }
        (None, CacheOutcome::Recompiled)
    }

    /// Stores the compiled `component` of `bytes`. A read-only or full disk
    /// costs speed, not correctness: a failure is logged, not returned.
    pub fn put(&self, bytes: &[u8], component: &Component) {
        let path = self.entry_path(bytes);
        if let Err(e) = self.store(&path, component) {
            tracing::warn!("could not write cache entry {}: {e:#}", path.display());
        }
        self.prune(&path);
    }

    /// Removes the least recently used entries (never `keep`) while the
    /// folder holds more than `max_bytes`, down to nine tenths of it.
    fn prune(&self, keep: &Path) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        let entries: Vec<fs::DirEntry> = entries.flatten().collect();
        // A store cut short (the process killed mid-write) leaves its
        // temporary file; one an hour old belongs to no store still running.
        let stale = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for e in &entries {
            let temporary = e.path().extension().is_some_and(|x| x.to_string_lossy().starts_with("tmp"));
            if temporary && e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < stale) {
                let _ = fs::remove_file(e.path());
            }
        }
        let mut found: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
            .iter()
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = found.iter().map(|(_, len, _)| len).sum();
        if total <= self.max_bytes {
            return;
        }
        found.sort();
        let target = self.max_bytes / 10 * 9;
        for (_, len, path) in found {
            if total <= target {
                break;
            }
            if path != keep && fs::remove_file(&path).is_ok() {
                total -= len;
                tracing::debug!("pruned the least recently used cache entry {}", path.display());
            }
        }
    }

    fn store(&self, path: &Path, component: &Component) -> Result<()> {
        let artifact = component.serialize()?;
        let digest = blake3::hash(&artifact);
        // One temporary name per store: two threads of one process may
        // store the same entry at once.
        static STORES: AtomicU64 = AtomicU64::new(0);
        let n = STORES.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
        let written = (|| {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(MAGIC)?;
            file.write_all(digest.as_bytes())?;
            file.write_all(&artifact)?;
            file.sync_all()?;
            fs::rename(&tmp, path)
        })();
        if written.is_err() {
            // A full disk must not leave a half-written entry behind.
            let _ = fs::remove_file(&tmp);
        }
        Ok(written?)
    }
}

/// Marks an entry used now (its modification time), for pruning; a
/// read-only cache folder only loses the ordering.
fn mark_used(path: &Path) {
    if let Ok(file) = fs::File::options().append(true).open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

fn verified_artifact(stored: &[u8]) -> Option<&[u8]> {
    let rest = stored.strip_prefix(MAGIC.as_slice())?;
    if rest.len() < 32 {
        return None;
    }
    let (digest, artifact) = rest.split_at(32);
    (blake3::hash(artifact).as_bytes().as_slice() == digest).then_some(artifact)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty component with a custom section holding `tag`: distinct
    /// bytes, a distinct entry.
    fn component(engine: &Engine, tag: u8) -> (Vec<u8>, Component) {
        let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
        bytes.extend_from_slice(&[0, 3, 1, b't', tag]);
        let component = Component::new(engine, &bytes).unwrap();
        (bytes, component)
    }

    #[test]
    fn the_least_recently_used_entries_go_when_the_folder_is_over_its_bound() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        let probe = CompileCache::open(dir.path(), &engine).unwrap();
        let (a, ca) = component(&engine, 1);
        probe.put(&a, &ca);
        let entry = fs::metadata(probe.entry_path(&a)).unwrap().len();
        // Room for three entries (and a tenth to spare, not four).
        let cache = CompileCache::open(dir.path(), &engine).unwrap().with_max_bytes(entry * 3 + entry / 2);
        let (b, cb) = component(&engine, 2);
        let (c, cc) = component(&engine, 3);
        let (d, cd) = component(&engine, 4);
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for (i, (bytes, comp)) in [(&b, &cb), (&c, &cc)].into_iter().enumerate() {
            cache.put(bytes, comp);
            let file = fs::File::options().append(true).open(cache.entry_path(bytes)).unwrap();
            file.set_modified(old + std::time::Duration::from_secs(i as u64 + 1)).unwrap();
        }
        let file = fs::File::options().append(true).open(cache.entry_path(&a)).unwrap();
        file.set_modified(old).unwrap();
        // `a` is the oldest, but a hit makes it the most recently used.
        assert_eq!(cache.lookup(&engine, &a).1, CacheOutcome::Hit);
        cache.put(&d, &cd);
        let kept: Vec<bool> = [&a, &b, &c, &d].iter().map(|bytes| cache.entry_path(bytes).exists()).collect();
        assert_eq!(kept, [true, false, true, true], "b, the least recently used, is pruned");
    }
}
