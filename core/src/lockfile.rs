//! `toolhost.lock`: the plugins a user pinned, each by name, file and the
//! SHA-256 of its bytes, with the capabilities it declared when it was
//! locked (what its grants were given for; see `toolhost::capability_diff`).
//!
//! ```toml
//! # written by `toolhost lock`
//! version = 1
//!
//! [[plugin]]
//! name = "WordCount"
//! kind = "tool"
//! file = "/work/plugins/word_count.wasm"
//! sha256 = "9f86d08…"
//! declared = { fs_read = ["$WORKDIRS"], fs_write = [], process_exec = false, network = false, state = false }
//! # signature = "…"   (reserved: a detached signature over sha256, checked when a policy asks)
//! ```
//!
//! With `locked = true` (or `--locked`) a plugin or middleware whose bytes
//! hash to no entry of its name is refused, on load and on reload, before
//! its bytes are compiled. The file is toolhost's own: off limits to every
//! tool like the settings file ([`crate::protected`]).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::capability::Declared;

/// The lock file's name, beside the settings file.
pub const LOCK_FILE: &str = "toolhost.lock";

/// The format version this toolhost writes and reads.
pub const LOCK_VERSION: u32 = 1;

/// The whole lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// The format version ([`LOCK_VERSION`]).
    pub version: u32,
    /// One entry per locked component file.
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<LockedPlugin>,
}

/// One pinned component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPlugin {
    /// The name it reports (a tool or middleware name).
    pub name: String,
    /// `tool` or `middleware`.
    pub kind: String,
    /// The file it was locked from (absolute).
    pub file: PathBuf,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
    /// The capabilities it declared when locked (a middleware declares
    /// none: its grants are its `[grants.NAME]` table).
    #[serde(default)]
    pub declared: Declared,
    /// Reserved for a detached signature over `sha256`; not checked yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The registry reference it was pulled from, as written in `plugins`
    /// (`oci://host/ns/tool:tag`); `file` is then its copy in the content
    /// store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The manifest digest the reference resolved to when locked
    /// (`sha256:…`): a locked reference is pulled by it, never by its tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The trusted public key (its file, as `[trust] keys` names it) whose
    /// signature it carried when locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
}

impl LockFile {
    /// Reads `path`; `Ok(None)` when there is no such file (also when a
    /// folder on its path is a file: nothing can be locked there). A file of
    /// another format version, or one that does not parse, is an error
    /// naming the file and the fix.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        let text = match crate::own_file::read_to_string(path, crate::own_file::LOCK_BOUND) {
            Ok(text) => text,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                return Ok(None);
            }
            Err(e) => return Err(e).with_context(|| format!("reading the lock file {}", path.display())),
        };
        let lock: LockFile = toml::from_str(&text).with_context(|| {
            format!("the lock file {} is invalid; write it again with `toolhost lock`", path.display())
        })?;
        if lock.version != LOCK_VERSION {
            bail!(
                "the lock file {} has format version {}, which this toolhost does not read (it reads {LOCK_VERSION}); write it again with `toolhost lock`",
                path.display(),
                lock.version
            );
        }
        Ok(Some(lock))
    }

    /// Writes the lock to `path` atomically (a temporary file beside it,
    /// then a rename), so a watching host never reads half of it.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = format!(
            "# Pinned plugins: written by `toolhost lock`; with `locked = true` (or --locked) any other bytes are refused.\n{}",
            toml::to_string(self).context("writing the lock file")?
        );
        let tmp = path.with_extension(format!("lock.tmp{}", std::process::id()));
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
    }

    /// The entry pinning bytes of SHA-256 `sha256`, if any.
    pub fn by_hash(&self, sha256: &str) -> Option<&LockedPlugin> {
        self.plugins.iter().find(|p| p.sha256 == sha256)
    }

    /// The entry of the registry reference `reference` (as written in
    /// `plugins`, `oci://…`), if any.
    pub fn by_reference(&self, reference: &str) -> Option<&LockedPlugin> {
        self.plugins.iter().find(|p| p.reference.as_deref() == Some(reference))
    }

    /// The declaration locked for the tool `name` (the newest entry of
    /// that name), if any.
    pub fn declared(&self, name: &str) -> Option<&Declared> {
        self.plugins.iter().rev().find(|p| p.name == name && p.kind == "tool").map(|p| &p.declared)
    }
}

/// SHA-256 of `bytes`, lowercase hex (as [`LockedPlugin::sha256`] and
/// `ToolInfo::sha256` hold it).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_round_trips_and_a_missing_file_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        assert_eq!(LockFile::load(&path).unwrap(), None);
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(LockFile::load(&file.join(LOCK_FILE)).unwrap(), None, "a folder on the path that is a file");
        let lock = LockFile {
            version: LOCK_VERSION,
            plugins: vec![LockedPlugin {
                name: "Swap".into(),
                kind: "tool".into(),
                file: "/p/swap.wasm".into(),
                sha256: sha256_hex(b"x"),
                declared: Declared { fs_read: vec!["$WORKDIRS".into()], ..Declared::default() },
                signature: None,
                reference: None,
                digest: None,
                signed_by: None,
            }],
        };
        lock.save(&path).unwrap();
        let read = LockFile::load(&path).unwrap().unwrap();
        assert_eq!(read, lock);
        assert_eq!(read.by_hash(&sha256_hex(b"x")).unwrap().name, "Swap");
        assert!(read.by_hash(&sha256_hex(b"y")).is_none());
        assert_eq!(read.declared("Swap").unwrap().fs_read, ["$WORKDIRS"]);
    }

    #[test]
    fn another_version_or_garbage_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        std::fs::write(&path, "version = 7\n").unwrap();
        let err = format!("{:#}", LockFile::load(&path).unwrap_err());
        assert!(err.contains("version 7") && err.contains("toolhost lock"), "{err}");
        std::fs::write(&path, "version = 1\n[[plugin]]\nname = 3\n").unwrap();
        let err = format!("{:#}", LockFile::load(&path).unwrap_err());
        assert!(err.contains("invalid") && err.contains("toolhost lock"), "{err}");
    }
}
