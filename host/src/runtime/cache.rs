//! The on-disk compile cache.
//!
//! An entry is keyed by the BLAKE3 hash of the component bytes and the
//! engine's compatibility hash (wasmtime version, target, settings), so a new
//! engine never loads an old artifact. Each entry carries the BLAKE3 hash of
//! the artifact itself, checked before deserialising: a tampered or truncated
//! entry is detected, discarded and recompiled, never executed. (BLAKE3
//! rather than SHA-256 because it is checked on every start: it hashes the
//! built-ins' artifacts several times faster.)

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

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

/// A directory of verified precompiled components.
pub struct CompileCache {
    dir: PathBuf,
    engine_key: String,
}

impl CompileCache {
    /// Opens (creating) the cache directory for this engine.
    pub fn open(dir: &Path, engine: &Engine) -> Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("creating the compile cache directory {}", dir.display()))?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(Self { dir: dir.to_path_buf(), engine_key: format!("{:016x}", hasher.finish()) })
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
                Ok(component) => return (Some(component), CacheOutcome::Hit),
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
    }

    fn store(&self, path: &Path, component: &Component) -> Result<()> {
        let artifact = component.serialize()?;
        let digest = blake3::hash(&artifact);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut file = fs::File::create(&tmp)?;
        file.write_all(MAGIC)?;
        file.write_all(digest.as_bytes())?;
        file.write_all(&artifact)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        Ok(())
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
