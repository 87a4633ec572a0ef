//! The resident helper's executable (built by `host/build.rs` from
//! `host/docker-helper/main.rs`), written once per backend into a private
//! folder and bound read-only into the container at [`PATH_IN_CONTAINER`].

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::BackendError;

/// The static helper binary.
const HELPER: &[u8] = include_bytes!(env!("TOOLHOST_DOCKER_HELPER"));

/// Where the container runs it.
pub const PATH_IN_CONTAINER: &str = "/.toolhost-helper";

/// The helper on the host: a private folder (mode 0700, removed on drop)
/// holding the executable (mode 0555).
pub struct HelperFile {
    dir: PathBuf,
}

impl HelperFile {
    /// Writes the helper into a fresh folder under the temporary directory.
    pub fn write() -> Result<Self, BackendError> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let dir = loop {
            let dir =
                base.join(format!("toolhost-docker-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(BackendError::Io(format!(
                        "cannot create a folder for the Docker helper under {}: {e}; set TMPDIR to a writable folder",
                        base.display()
                    )));
                }
            }
        };
        let file = Self { dir };
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o555)
            .open(file.path())
            .and_then(|mut f| f.write_all(HELPER).map(|_| f));
        if let Ok(f) = &mut out {
            let _ = f.sync_all();
        }
        out.map_err(|e| BackendError::Io(format!("cannot write the Docker helper {}: {e}", file.path().display())))?;
        Ok(file)
    }

    /// The executable.
    pub fn path(&self) -> PathBuf {
        self.dir.join("helper")
    }
}

impl Drop for HelperFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
