//! [`Hold`]: one process's exclusive claim on one of toolhost's own files
//! (a named session, an audit log), so that a second process is refused at
//! open instead of silently overwriting the first one's writes.
//!
//! The claim is an advisory lock (`flock`) on `<file>.lock`, which holds the
//! holder's pid for the refusal of anyone else. The lock file stays when
//! released (removing it would race a process that opened it meanwhile).
//! The kernel drops the lock with the process, so a killed holder never
//! leaves a stale claim.
//!
//! The lock file is written, so it is opened as nothing but a regular file
//! of its own: not through a symbolic link (`O_NOFOLLOW`; a link planted
//! there would have its target truncated), not a FIFO or a terminal
//! (`O_NONBLOCK`, `O_NOCTTY`, then the descriptor's type checked), not a
//! hard link to another file (its link count).

use std::fs::File;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

/// A held claim; dropping it releases the claim.
#[derive(Debug)]
pub(crate) struct Hold {
    _lock: File,
}

impl Hold {
    /// Claims `file` for this process. `Ok(Err(holder))` when another
    /// process holds it, `holder` naming it (`toolhost pid N`) for the
    /// caller's refusal; `Err` when the lock file cannot be used.
    pub(crate) fn take(file: &Path) -> Result<std::result::Result<Hold, String>> {
        use std::io::{Read as _, Seek as _, Write as _};
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        let lock_path = toolhost_core::own_file::lock_path(file);
        if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let mut lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&lock_path)
            .with_context(|| {
                format!(
                    "opening the lock {} (it must be a regular file, not a symbolic link; remove it)",
                    lock_path.display()
                )
            })?;
        let meta = lock.metadata().with_context(|| format!("reading {}", lock_path.display()))?;
        toolhost_core::own_file::check_regular(&meta, &lock_path)?;
        if meta.nlink() > 1 {
            bail!(
                "the lock {} has {} hard links, so writing it could change another file; remove it",
                lock_path.display(),
                meta.nlink()
            );
        }
        match lock.try_lock() {
            Ok(()) => {
                // Best effort: the pid only names the holder in a refusal.
                let _ = lock.set_len(0).and_then(|()| lock.write_all(format!("{}\n", std::process::id()).as_bytes()));
                Ok(Ok(Hold { _lock: lock }))
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                // The holder's pid, from the descriptor checked above.
                let mut text = String::new();
                let _ = lock.rewind().and_then(|()| (&mut lock).take(32).read_to_string(&mut text));
                let holder = text
                    .trim()
                    .parse::<u32>()
                    .map_or_else(|_| "another toolhost process".to_string(), |pid| format!("toolhost pid {pid}"));
                Ok(Err(holder))
            }
            Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("locking {}", lock_path.display())),
        }
    }
}
