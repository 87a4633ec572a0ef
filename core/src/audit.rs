//! The `[audit]` table of `toolhost.toml` and the names of the log's files
//! (the log itself is the host's, `toolhost::audit`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The `[audit]` table of `toolhost.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    /// The log file (JSON lines); no audit log when unset.
    pub path: Option<PathBuf>,
    /// The size at which the file is rotated (renamed `FILE.1`, the older
    /// ones shifted up).
    pub max_bytes: u64,
    /// How many rotated files are kept (`FILE.1` … `FILE.N`).
    pub keep: u32,
    /// Records the writer thread may have waiting; past that, records are
    /// dropped and counted.
    pub queue: usize,
}

impl Default for AuditSettings {
    /// No log; 64 MiB per file, 5 files kept, 4 096 records queued.
    fn default() -> Self {
        AuditSettings { path: None, max_bytes: 64 * 1024 * 1024, keep: 5, queue: 4096 }
    }
}

impl AuditSettings {
    /// The files of the log: the live one and every rotated one that may
    /// exist (`FILE`, `FILE.1` … `FILE.keep`).
    pub fn files(&self) -> Vec<PathBuf> {
        let Some(path) = &self.path else { return Vec::new() };
        let mut files = vec![path.clone()];
        files.extend((1..=self.keep).map(|n| rotated(path, n)));
        files
    }
}

/// `FILE.n`: the `n`th rotated file of the log at `path`.
pub fn rotated(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}
