//! Pinned hashes on the façade: with `locked = true` (`--locked`) a
//! plugin or middleware whose SHA-256 is not in `toolhost.lock` is refused,
//! on load and on reload, before its bytes are compiled.
//!
//! **A component file where tools write needs its pin, locked or not.** A
//! plugin file that is a link into a working directory (`plugins/x.wasm`
//! → `<workdir>/build/x.wasm`, the usual way to try a tool one is
//! writing), that lies in one, that is reached through a link lying in
//! one, or that has another hard link in one (looked for, up to
//! 100 000 entries; past that it needs its pin), can be rewritten by a tool's
//! process: the engine's check of a command is lexical (`cp evil.wasm
//! build/*.wasm` names no file) and the process sandbox cannot take one
//! file out of a folder it lets a command write. Its new code would run
//! with the plugin's grants at the next reload or start. So such a file
//! loads only when the SHA-256 of its bytes is pinned in the lock file,
//! at start and on every reload; the refusal names the file, where it
//! leads and `toolhost lock`. "Where tools write" is every working
//! directory, every root a `[grants.NAME]` table lets a tool write, and
//! where the backend lets every process write, `[backend.local]
//! allow_write` ([`crate::settings::Settings::tool_writable_roots`] over
//! [`crate::backend::BackendOptions::writable_paths`]).
//! The bytes checked are the bytes compiled: they are read once
//! ([`Catalog::read_component`], bounded, regular files only).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};

use super::catalog::Catalog;
use crate::catalog::tool::LoadError;
use crate::lockfile::{LockFile, sha256_hex};
use crate::oci::resolve::judge;
use crate::oci::signature;
use crate::oci::store::Store;
use crate::own_file::OwnFile;
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

impl Catalog {
    /// The lock file as last read (`None`: there is none).
    pub fn lock_file(&self) -> Option<Arc<LockFile>> {
        self.lock.read_unpoisoned().clone()
    }

    /// Where this host reads its lock file.
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    /// Reads the lock file again (a watching host does when it changes).
    /// A lock that no longer reads is an error, and the last good one stays.
    pub(crate) fn reread_lock(&self) -> Result<()> {
        let lock = read_lock(&self.lock_path, self.settings.locked)?;
        *self.lock.write_unpoisoned() = lock;
        Ok(())
    }

    /// Reads the plugin or middleware file `path` (`what`: "plugin",
    /// "middleware") whole: a regular file of at most `[limits]
    /// max_component_bytes`, checked on the opened file before a byte is
    /// read (a FIFO, a device or a huge sparse file is refused, not waited
    /// on or read into memory).
    pub(crate) fn read_component(&self, path: &Path, what: &'static str) -> Result<OwnFile, LoadError> {
        crate::own_file::read(path, self.settings.limits.component_bound()).map_err(|error| LoadError::Read {
            what,
            path: path.to_path_buf(),
            error,
        })
    }

    /// Refuses the bytes read from `file` unless their SHA-256 is pinned,
    /// when this host is locked or the file lies where tools write (see
    /// the module docs). `own` is what [`Catalog::read_component`] read.
    pub(crate) fn check_component(&self, file: &Path, own: &OwnFile, label: &str) -> Result<(), LoadError> {
        self.check_signature(file, &own.bytes, label)?;
        if self.settings.locked {
            return self.check_pinned(&own.bytes, label);
        }
        let Some(reason) = pin_reason(file, &own.meta, &self.writable_roots) else { return Ok(()) };
        let sha256 = sha256_hex(&own.bytes);
        if self.lock_file().is_some_and(|lock| lock.by_hash(&sha256).is_some()) {
            return Ok(());
        }
        Err(LoadError::UnpinnedWhereToolsWrite {
            label: label.to_string(),
            reason,
            sha256,
            lock_file: self.lock_path.clone(),
        })
    }

    /// With `[trust] require_signature`, refuses the bytes read from `file`
    /// unless its detached signature beside it (`FILE.sig`, cosign
    /// `sign-blob` format) is valid by a key of `[trust] keys`. A component
    /// of the content store was verified when it was pulled.
    pub(crate) fn check_signature(&self, file: &Path, bytes: &[u8], label: &str) -> Result<(), LoadError> {
        let trust = &self.settings.trust;
        if !trust.require_signature || file.starts_with(Store::new(&self.settings.cache_dir()).root()) {
            return Ok(());
        }
        let judged = signature::trusted_keys(&trust.keys)
            .and_then(|keys| signature::verify_file(&keys, file, bytes))
            .and_then(|verdict| judge(&verdict, true, label));
        judged.map(drop).map_err(|e| LoadError::Signature(format!("{e:#}")))
    }

    /// With `locked`, refuses `bytes` unless their SHA-256 is pinned.
    pub(crate) fn check_pinned(&self, bytes: &[u8], label: &str) -> Result<(), LoadError> {
        if !self.settings.locked {
            return Ok(());
        }
        let sha256 = sha256_hex(bytes);
        if self.lock_file().is_some_and(|lock| lock.by_hash(&sha256).is_some()) {
            return Ok(());
        }
        Err(LoadError::NotPinned { label: label.to_string(), sha256, lock_file: self.lock_path.clone() })
    }
}

/// Why the component file `file` (whose opened descriptor said `meta`)
/// must be pinned to load, if it must: it has other hard links, or the
/// resolution of its path passes through a place under one of
/// `writable` (real paths): the file it resolves to, or a symbolic link on
/// the way (which a tool could point elsewhere).
fn pin_reason(file: &Path, meta: &std::fs::Metadata, writable: &[PathBuf]) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    if meta.nlink() > 1 {
        // Cargo's outputs are hard links of `deps/` files: only another
        // name where tools write is a way in.
        let roots = writable.iter().filter(|r| std::fs::metadata(r).is_ok_and(|m| m.dev() == meta.dev()));
        match other_link(roots, meta.dev(), meta.ino()) {
            Search::Found(other) => {
                return Some(format!(
                    "{} has {} hard links, and one of them, {}, lies where tools may write",
                    file.display(),
                    meta.nlink(),
                    other.display()
                ));
            }
            Search::TooLarge => {
                return Some(format!(
                    "{} has {} hard links, and the folders where tools may write hold more than {MAX_SEARCHED} \
                     entries to look for the others in",
                    file.display(),
                    meta.nlink()
                ));
            }
            Search::NotFound => {}
        }
    }
    let (hops, target) = resolution(file);
    let under = |place: &Path| writable.iter().find(|root| place.starts_with(root)).cloned();
    if let Some(root) = under(&target) {
        let what = if hops.is_empty() {
            file.display().to_string()
        } else {
            format!("{} resolves to {}, which", file.display(), target.display())
        };
        return Some(format!("{what} lies inside {}, where tools may write", root.display()));
    }
    hops.iter().find_map(|hop| {
        under(hop).map(|root| {
            format!(
                "{} leads to {} through the link {}, which lies inside {}, where tools may write",
                file.display(),
                target.display(),
                hop.display(),
                root.display()
            )
        })
    })
}

/// The most entries of the folders where tools write looked at for
/// another hard link of a component file; past it the file needs its pin.
const MAX_SEARCHED: usize = 100_000;

/// What a search for another hard link found.
enum Search {
    Found(PathBuf),
    NotFound,
    TooLarge,
}

/// Looks under `roots` (symbolic links not followed) for a file that is
/// the inode `ino` of device `dev`, at most [`MAX_SEARCHED`] entries.
fn other_link<'a>(roots: impl Iterator<Item = &'a PathBuf>, dev: u64, ino: u64) -> Search {
    use std::os::unix::fs::MetadataExt as _;
    let mut pending: Vec<PathBuf> = roots.cloned().collect();
    let mut seen = 0;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_SEARCHED {
                return Search::TooLarge;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.dev() == dev && meta.ino() == ino {
                return Search::Found(entry.path());
            }
        }
    }
    Search::NotFound
}

/// How `path` resolves: every symbolic link met on the way (each at its
/// real place: the folders before it resolved), and the real path it ends
/// at. At most 40 links are followed, as the kernel does; past that, or
/// at a part that does not exist, the rest is taken as written.
fn resolution(path: &Path) -> (Vec<PathBuf>, PathBuf) {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut todo: Vec<OsString> = Vec::new();
    push_parts(&mut todo, &abs);
    let mut done = PathBuf::from("/");
    let mut hops = Vec::new();
    while let Some(part) = todo.pop() {
        if part == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&part);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() && hops.len() < 40 => {
                let Ok(target) = std::fs::read_link(&next) else {
                    done = next;
                    continue;
                };
                hops.push(next);
                if target.is_absolute() {
                    done = PathBuf::from("/");
                }
                push_parts(&mut todo, &target);
            }
            _ => done = next,
        }
    }
    (hops, done)
}

/// Pushes the parts of `path` onto `todo` so that they pop in order
/// (`.` dropped, `..` kept as a part).
fn push_parts(todo: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_pinned_when_it_or_a_link_on_its_way_lies_where_tools_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (work, plugins, elsewhere) = (root.join("work"), root.join("plugins"), root.join("elsewhere"));
        for d in [&work, &plugins, &elsewhere, &work.join("build")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(work.join("build/x.wasm"), "x").unwrap();
        std::fs::write(elsewhere.join("y.wasm"), "y").unwrap();
        std::fs::write(plugins.join("plain.wasm"), "p").unwrap();
        std::os::unix::fs::symlink(work.join("build/x.wasm"), plugins.join("x.wasm")).unwrap();
        // Outside, but through a link in the working directory.
        std::os::unix::fs::symlink(elsewhere.join("y.wasm"), work.join("y-link.wasm")).unwrap();
        std::os::unix::fs::symlink("../work/y-link.wasm", plugins.join("y.wasm")).unwrap();
        std::fs::hard_link(plugins.join("plain.wasm"), work.join("twin.wasm")).unwrap();
        // A hard link outside (cargo's `deps/` copy) needs no pin.
        std::fs::write(plugins.join("cargo.wasm"), "c").unwrap();
        std::fs::hard_link(plugins.join("cargo.wasm"), elsewhere.join("cargo-1234.wasm")).unwrap();
        std::fs::write(plugins.join("alone.wasm"), "a").unwrap();
        let writable = [work.clone()];
        let reason = |name: &str| {
            let path = plugins.join(name);
            pin_reason(&path, &std::fs::metadata(&path).unwrap(), &writable)
        };
        let x = reason("x.wasm").expect("a link into the working directory");
        assert!(
            x.contains(&work.join("build/x.wasm").display().to_string()) && x.contains("where tools may write"),
            "{x}"
        );
        let y = reason("y.wasm").expect("a link in the working directory on the way");
        assert!(y.contains(&work.join("y-link.wasm").display().to_string()), "{y}");
        let twin = reason("plain.wasm").expect("a hard link in the working directory");
        assert!(
            twin.contains("2 hard links") && twin.contains(&work.join("twin.wasm").display().to_string()),
            "{twin}"
        );
        assert_eq!(reason("cargo.wasm"), None);
        assert_eq!(reason("alone.wasm"), None);
        let inside = work.join("build/x.wasm");
        assert!(pin_reason(&inside, &std::fs::metadata(&inside).unwrap(), &writable).is_some());
    }
}
