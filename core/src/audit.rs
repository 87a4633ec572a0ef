//! The `[audit]` table of `toolhost.toml` and the names of the log's files
//! (the log itself is the host's, `toolhost::audit`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::replica::PLACEHOLDER;

/// The `[audit]` table of `toolhost.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    /// The log file (JSON lines); no audit log when unset. Its file name
    /// may hold `{replica}`, written as the process's replica id (`serve
    /// --replica-id`): one file per replica, as two serving processes are
    /// refused one file. The folder of such a log is then toolhost's own
    /// as a whole (no tool reads or writes in it), since the files of
    /// other replicas lie there too.
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

/// The most rotated files `[audit] keep` may ask for: every one is a
/// protected path, and rotating renames each.
pub const MAX_KEEP: u32 = 1000;

/// The most records `[audit] queue` may hold: the queue's slots are
/// allocated when the log opens.
pub const MAX_QUEUE: usize = 1 << 16;

impl AuditSettings {
    /// Checks the bounds of `keep` and `queue`; the error names the key,
    /// the value and the limit.
    pub fn validate(&self) -> Result<(), String> {
        if self.keep > MAX_KEEP {
            return Err(format!(
                "[audit] keep = {} is more than {MAX_KEEP} rotated files; keep fewer (a larger max_bytes holds more per file)",
                self.keep
            ));
        }
        if let Some(path) = &self.path
            && path.parent().is_some_and(|dir| dir.to_string_lossy().contains(PLACEHOLDER))
        {
            return Err(format!(
                "[audit] path = {:?} has {PLACEHOLDER} in a folder; it may only be in the file name \
                 (\"logs/audit-{PLACEHOLDER}.jsonl\")",
                path.display().to_string()
            ));
        }
        if self.queue > MAX_QUEUE {
            return Err(format!(
                "[audit] queue = {} is more than {MAX_QUEUE} records; a queue that large is allocated when the log opens, so give {MAX_QUEUE} or less",
                self.queue
            ));
        }
        Ok(())
    }

    /// Whether the file name holds `{replica}` (one log per replica).
    pub fn per_replica(&self) -> bool {
        self.path.as_deref().and_then(Path::file_name).is_some_and(|name| name.to_string_lossy().contains(PLACEHOLDER))
    }

    /// These settings for the process `replica` (a valid replica id):
    /// `{replica}` in the file name written as it.
    pub fn for_replica(&self, replica: &str) -> AuditSettings {
        let mut settings = self.clone();
        if self.per_replica()
            && let Some(path) = &self.path
        {
            let name = path.file_name().unwrap_or_default().to_string_lossy().replace(PLACEHOLDER, replica);
            settings.path = Some(path.with_file_name(name));
        }
        settings
    }

    /// The folder that is toolhost's own as a whole: that of a log with a
    /// file per replica.
    pub fn own_folder(&self) -> Option<&Path> {
        self.path.as_deref().filter(|_| self.per_replica()).and_then(Path::parent)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Found while checking what the `settings_toml` fuzz target reaches
    /// (1.1 M executions had not hit it): `files()` lists every rotated
    /// file, so `keep = 4000000000` asked for 4 billion paths and aborted on
    /// memory when the settings' protected paths were computed; a huge
    /// `queue` did the same when the log opened.
    #[test]
    fn keep_and_queue_are_bounded() {
        let huge_keep =
            AuditSettings { path: Some("/l/audit.jsonl".into()), keep: 4_000_000_000, ..Default::default() };
        let err = huge_keep.validate().unwrap_err();
        assert!(err.contains("[audit] keep = 4000000000") && err.contains("1000"), "{err}");
        let huge_queue = AuditSettings { queue: 1 << 40, ..Default::default() };
        assert!(huge_queue.validate().unwrap_err().contains("[audit] queue"));
        let most = AuditSettings { path: Some("/l/a".into()), keep: MAX_KEEP, queue: MAX_QUEUE, ..Default::default() };
        assert!(most.validate().is_ok());
        assert_eq!(most.files().len(), MAX_KEEP as usize + 1);
    }

    #[test]
    fn a_replica_placeholder_names_one_file_per_replica_and_only_in_the_file_name() {
        let shared = AuditSettings { path: Some("/l/audit-{replica}.jsonl".into()), ..Default::default() };
        assert!(shared.per_replica() && shared.validate().is_ok());
        assert_eq!(shared.for_replica("r2").path.unwrap(), Path::new("/l/audit-r2.jsonl"));
        assert_eq!(shared.own_folder(), Some(Path::new("/l")));
        let plain = AuditSettings { path: Some("/l/audit.jsonl".into()), ..Default::default() };
        assert!(!plain.per_replica() && plain.own_folder().is_none());
        assert_eq!(plain.for_replica("r2"), plain);
        let in_folder = AuditSettings { path: Some("/l/{replica}/audit.jsonl".into()), ..Default::default() };
        assert!(in_folder.validate().unwrap_err().contains("only be in the file name"));
    }
}
