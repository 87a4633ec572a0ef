//! Pinned hashes on the façade: with `locked = true` (`--locked`) a
//! plugin or middleware whose SHA-256 is not in `toolhost.lock` is refused,
//! on load and on reload, before its bytes are compiled.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, bail};

use super::Toolhost;
use crate::lockfile::{LockFile, sha256_hex};
use crate::sync::RwLockExt;

/// Reads the lock file at `path`; with `locked`, a missing one is an error
/// that says how to write it.
pub(super) fn read_lock(path: &Path, locked: bool) -> Result<Option<Arc<LockFile>>> {
    let lock = LockFile::load(path)?;
    if locked && lock.is_none() {
        bail!(
            "locked = true (--locked) but there is no lock file at {}; pin the plugins you trust with `toolhost lock`, or leave out --locked",
            path.display()
        );
    }
    Ok(lock.map(Arc::new))
}

impl Toolhost {
    /// The lock file as last read (`None`: there is none).
    pub fn lock_file(&self) -> Option<Arc<LockFile>> {
        self.inner.lock.read_unpoisoned().clone()
    }

    /// Where this host reads its lock file.
    pub fn lock_path(&self) -> &Path {
        &self.inner.lock_path
    }

    /// Reads the lock file again (a watching host does when it changes).
    /// A lock that no longer reads is an error, and the last good one stays.
    pub(crate) fn reread_lock(&self) -> Result<()> {
        let lock = read_lock(&self.inner.lock_path, self.settings().locked)?;
        *self.inner.lock.write_unpoisoned() = lock;
        Ok(())
    }

    /// With `locked`, refuses `bytes` unless their SHA-256 is pinned.
    pub(crate) fn check_pinned(&self, bytes: &[u8], label: &str) -> Result<()> {
        if !self.settings().locked {
            return Ok(());
        }
        let sha256 = sha256_hex(bytes);
        if self.lock_file().is_some_and(|lock| lock.by_hash(&sha256).is_some()) {
            return Ok(());
        }
        bail!(
            "{label} is refused: its SHA-256 {sha256} is not in the lock file {} and this host is locked (locked = true or --locked); if you trust it, pin it with `toolhost lock`",
            self.inner.lock_path.display()
        )
    }
}
