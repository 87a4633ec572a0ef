//! The local backend: file operations on this machine, confined with
//! `cap-std`, and processes run as local process groups.
//!
//! # Security model
//!
//! * Every path is located in the caller's [`FsScope`] first (relative paths
//!   are joined onto the backend's cwd, `..` is resolved lexically), then
//!   opened **relative to a `cap_std::fs::Dir` opened on the granted root**.
//!   Ambient authority is used only to open the root directories themselves.
//!   `cap-std` refuses any resolution that leaves the root: `..` past it,
//!   absolute symlinks, symlinks leading outside.
//! * A symlink whose real target lies in a granted root (the same one through
//!   an absolute link, or another root) is followed: the target is resolved
//!   on the real filesystem, located in the scope again (with the same access
//!   check) and the operation is redone relative to that root, so `cap-std`
//!   still guards it. A target outside every root is refused with
//!   [`BackendError::Denied`].
//! * Writes go to a fresh temporary file in the target's directory, are
//!   fsynced and renamed over the target, so a failed write leaves the old
//!   file untouched. A write to a regular file with more than one hard link is
//!   refused: another link to the same inode may live outside the roots, and
//!   the caller would not see that the file is shared. (Reads through hard
//!   links are allowed: the link itself is inside the root.)
//! * `remove` never follows a symlink: removing a link removes the link, and a
//!   granted root itself cannot be removed.
//! * `walk` and `search` read through real paths (the `ignore` crate uses
//!   `std::fs`): the start directory must resolve inside the scope, symlinks
//!   are not followed unless asked, and when they are, entries whose real path
//!   leaves the scope's roots are dropped. Ignore files of the start
//!   directory's ancestors are read (only to filter), as ripgrep does.
//!   A concurrent process that swaps a directory for a symlink during a walk
//!   could race this check; tools have no API to create symlinks.
//! * toolhost's own files ([`crate::protected`]: the settings files, the
//!   configured plugin and middleware components and plugin folders, the
//!   session state folder, the compile cache) are refused to every scope,
//!   whatever its roots: an operation on one of them or below one of them
//!   (as given, symlinks resolved, or through another hard link to a
//!   protected file) fails with a `denied` error naming what the path is;
//!   removing a folder that contains one is refused too. Walks and
//!   searches skip them silently, as they skip what lies outside the roots.
//!   A process started with `exec` is not confined by this (it runs with
//!   the user's rights); the process sandbox ([`sandbox`],
//!   `[backend.local] sandbox = "on"`) is what contains it.
//! * A granted root is opened only while its real path is the one it had
//!   when the grant was made ([`Root::real`]) and when this backend first
//!   opened it: a root folder swapped for a symlink is refused.
//! * Process execution is not path-scoped: the caller checks the
//!   `process-exec` grant before [`Backend::spawn`]. Each process gets its own
//!   process group, which is killed as a whole at the timeout, when the main
//!   child exits, and when the [`Process`] handle is dropped.

mod process;
pub use process::detach as detach_child;
pub mod sandbox;
mod search;

use crate::sync::MutexExt;
use std::collections::HashMap;
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt as _, OpenOptions, OpenOptionsExt as _};

use super::scope::{Access, Root, normalize_lexically};
use super::{
    Backend, BackendError, DirEntry, EntryKind, ExecRequest, FileStat, FsScope, OsFamily, Process, SearchFile,
    SearchRequest, WalkOptions,
};
use crate::protected::ProtectedPaths;
use sandbox::Sandbox;

/// Per-stream output cap applied when an [`ExecRequest`] asks for 0 bytes
/// (WIT: "0 means the host's output cap"): 16 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The local machine as a backend.
///
/// Security defaults: paths are confined to the caller's [`FsScope`] through
/// `cap-std` (see the module docs); nothing outside a granted root is read or
/// written, symlinks never lead out, writes are atomic and refuse hard-linked
/// files; processes run in their own process group with stdin closed and
/// exactly the request's environment (nothing inherited), and are killed
/// as a group at their timeout.
pub struct LocalBackend {
    cwd: PathBuf,
    home: PathBuf,
    max_output_bytes: u64,
    /// Opened root directories, keyed by root path, with the real path
    /// each had when first opened; revalidated on use.
    roots: Mutex<HashMap<PathBuf, (Arc<Dir>, PathBuf)>>,
    /// toolhost's own files: refused to every tool whatever its scope.
    protected: Arc<ProtectedPaths>,
    /// What confines the processes it starts (none: the user's rights).
    sandbox: Option<Arc<Sandbox>>,
}

impl LocalBackend {
    /// A backend whose relative paths and processes start in `cwd`, and
    /// whose `~` is `home`. Relative `cwd`/`home` are made absolute against
    /// the host's current directory. No root is opened until a scope uses it.
    pub fn new(cwd: PathBuf, home: PathBuf) -> Self {
        Self {
            cwd: absolutize(cwd),
            home: absolutize(home),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            roots: Mutex::new(HashMap::new()),
            protected: Arc::default(),
            sandbox: None,
        }
    }

    /// Confines every process this backend starts in `sandbox`.
    pub fn with_sandbox(mut self, sandbox: Arc<Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The sandbox of its processes, if any.
    pub fn sandbox(&self) -> Option<&Sandbox> {
        self.sandbox.as_deref()
    }

    /// Refuses every operation on these paths (toolhost's own files) and
    /// leaves them out of walks and searches, for every scope.
    pub fn with_protected(mut self, protected: Arc<ProtectedPaths>) -> Self {
        self.protected = protected;
        self
    }

    /// Refuses `abs` when it is, or lies below, a protected path: as given,
    /// with its symlinks resolved (the final one only when `follow_final`),
    /// or as another hard link to a protected file.
    fn guard(&self, abs: &str, follow_final: bool) -> Result<(), BackendError> {
        if self.protected.is_empty() {
            return Ok(());
        }
        let lexical = normalize_lexically(Path::new(abs));
        let real = resolve_real(&lexical, follow_final);
        for form in std::iter::once(&lexical).chain(real.as_ref()) {
            if let Some(entry) = self.protected.covering(form) {
                return Err(BackendError::Denied(entry.refusal(form)));
            }
        }
        let meta = if follow_final { std::fs::metadata(&lexical) } else { std::fs::symlink_metadata(&lexical) };
        if let Ok(meta) = meta
            && meta.is_file()
            && std::os::unix::fs::MetadataExt::nlink(&meta) > 1
            && let Some(entry) = self.protected.entries().iter().find(|e| same_file(&e.path, &meta))
        {
            return Err(BackendError::Denied(format!(
                "{abs} is a hard link to {}; {}",
                entry.path.display(),
                entry.refusal(&entry.path)
            )));
        }
        Ok(())
    }

    /// Replaces [`DEFAULT_MAX_OUTPUT_BYTES`], the per-stream cap used when a
    /// request passes 0.
    pub fn with_default_max_output_bytes(mut self, bytes: u64) -> Self {
        self.max_output_bytes = bytes.max(1);
        self
    }

    /// `path` made absolute against the backend cwd (`""` is the cwd).
    fn absolute(&self, path: &str) -> String {
        if path.is_empty() {
            return self.cwd.display().to_string();
        }
        let p = Path::new(path);
        if p.is_absolute() { path.to_string() } else { self.cwd.join(p).display().to_string() }
    }

    /// The opened `Dir` of a granted root (cached; reopened if the directory
    /// at that path was replaced since). A root is (re)opened only while its
    /// real path is the one it had when granted ([`Root::real`]) and when
    /// this backend first opened it: a root folder swapped for a symlink
    /// (to `~`, say) is refused, not followed.
    fn root_dir(&self, root: &Root) -> Result<Arc<Dir>, BackendError> {
        let path = root.path.as_path();
        let current = std::fs::metadata(path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                BackendError::NotFound(format!(
                    "granted root {} does not exist; create it or grant an existing directory",
                    path.display()
                ))
            } else {
                BackendError::Io(format!("cannot open granted root {}: {e}", path.display()))
            }
        })?;
        let mut cache = self.roots.lock_unpoisoned();
        if let Some((dir, _)) = cache.get(path)
            && let Ok(meta) = dir.dir_metadata()
            && meta.dev() == std::os::unix::fs::MetadataExt::dev(&current)
            && meta.ino() == std::os::unix::fs::MetadataExt::ino(&current)
        {
            return Ok(dir.clone());
        }
        let real = std::fs::canonicalize(path)
            .map_err(|e| BackendError::Io(format!("cannot resolve granted root {}: {e}", path.display())))?;
        let first = cache.get(path).map(|(_, first)| first);
        if let Some(expected) = root.real.as_ref().into_iter().chain(first).find(|e| **e != real) {
            return Err(BackendError::Denied(format!(
                "granted root {} now leads to {}, not to {} where it led when it was granted (replaced by a symlink?); restore it, or restart toolhost to grant what it is now",
                path.display(),
                real.display(),
                expected.display()
            )));
        }
        let dir = Dir::open_ambient_dir(&real, ambient_authority()).map_err(|e| {
            BackendError::Io(format!("cannot open granted root {} as a directory: {e}", path.display()))
        })?;
        let dir = Arc::new(dir);
        cache.insert(path.to_path_buf(), (dir.clone(), real));
        Ok(dir)
    }

    /// Locates `path` in `scope` and runs `op` on the root's `Dir` with the
    /// root-relative path. If `cap-std` refuses because a symlink leads out of
    /// that root, the real target is resolved (the final component only when
    /// `follow_final`), located in the scope again, and `op` is retried once
    /// relative to the target's root.
    fn run<T>(
        &self,
        scope: &FsScope,
        path: &str,
        access: Access,
        follow_final: bool,
        what: &str,
        op: impl Fn(&Dir, &Path) -> io::Result<T>,
    ) -> Result<T, BackendError> {
        let abs = self.absolute(path);
        let (root, rel) = scope.locate(&abs, access)?;
        self.guard(&abs, follow_final)?;
        let dir = self.root_dir(root)?;
        match op(&dir, &dot_if_empty(&rel)) {
            Ok(v) => Ok(v),
            Err(e) if is_escape(&e) => {
                let lexical = normalize_lexically(Path::new(&abs));
                let Some(real) = resolve_real(&lexical, follow_final) else {
                    return Err(escape_denied(scope, &abs, None, access));
                };
                let Some(real_str) = real.to_str() else {
                    return Err(escape_denied(scope, &abs, Some(&real), access));
                };
                let Ok((root2, rel2)) = scope.locate(real_str, access) else {
                    return Err(escape_denied(scope, &abs, Some(&real), access));
                };
                let dir2 = self.root_dir(root2)?;
                op(&dir2, &dot_if_empty(&rel2)).map_err(|e| {
                    if is_escape(&e) { escape_denied(scope, &abs, Some(&real), access) } else { map_io(e, what, &abs) }
                })
            }
            Err(e) => Err(map_io(e, what, &abs)),
        }
    }

    /// The canonical forms of the scope's roots (plus their lexical forms),
    /// for checking real paths met during a walk.
    fn real_roots(scope: &FsScope) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for r in scope.roots() {
            if let Some(real) = r.real.clone().or_else(|| std::fs::canonicalize(&r.path).ok()) {
                out.push(real);
            }
            out.push(r.path.clone());
        }
        out
    }

    /// Checks that a walk or search start path resolves inside the scope,
    /// and returns where to walk from ([`WalkStart`]): toolhost's own files
    /// are seen from the real path found here, as
    /// [`LocalBackend::protected_seen_from`] would.
    fn walk_start(&self, scope: &FsScope, root: &str) -> Result<WalkStart, BackendError> {
        let abs = self.absolute(root);
        // cap-std resolution: refuses escapes, reports a missing start.
        self.run(scope, &abs, Access::Read, true, "walk", |d, r| d.metadata(r))?;
        let lexical = normalize_lexically(Path::new(&abs));
        let real = std::fs::canonicalize(&lexical).map_err(|e| map_io(e, "walk", &abs))?;
        let inside = real.to_str().is_some_and(|s| scope.locate(s, Access::Read).is_ok())
            || Self::real_roots(scope).iter().any(|r| real.starts_with(r));
        if !inside {
            return Err(escape_denied(scope, &abs, Some(&real), Access::Read));
        }
        let is_link = std::fs::symlink_metadata(&lexical).map(|m| m.is_symlink()).unwrap_or(false);
        let protected = self.protected.seen_through(&lexical, &real);
        let (dir, alias) = if is_link { (real.clone(), Some((real, lexical))) } else { (lexical, None) };
        Ok(WalkStart { dir, alias, protected })
    }
}

impl LocalBackend {
    /// The entries of the directory `path`, toolhost's own files included.
    fn list_unfiltered(&self, scope: &FsScope, path: &str) -> Result<Vec<DirEntry>, BackendError> {
        self.run(scope, path, Access::Read, true, "list", |d, r| {
            let mut out = Vec::new();
            for entry in d.read_dir(r)? {
                let entry = entry?;
                let meta = match entry.metadata() {
                    Ok(m) => m,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // vanished
                    Err(e) => return Err(e),
                };
                let kind = kind_of(meta.file_type());
                out.push(DirEntry {
                    path: entry.file_name().to_string_lossy().into_owned(),
                    kind,
                    size: if kind == EntryKind::Directory { 0 } else { meta.len() },
                    mtime_ns: mtime_ns(&meta),
                });
            }
            Ok(out)
        })
    }

    /// The protected paths as a walk from `root` spells them: their own
    /// forms plus, when the start's real path differs from the path given,
    /// the same paths under the given one (entries are compared lexically).
    fn protected_seen_from(&self, root: &str) -> ProtectedPaths {
        let given = normalize_lexically(Path::new(&self.absolute(root)));
        match resolve_real(&given, true) {
            Some(real) => self.protected.seen_through(&given, &real),
            None => ProtectedPaths::clone(&self.protected),
        }
    }
}

/// Whether `path` is the file `meta` describes (same device and inode).
fn same_file(path: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
}

/// Maps a result path under a symlinked start back under the path given.
fn under_given(path: &str, alias: Option<&(PathBuf, PathBuf)>) -> String {
    match alias {
        Some((real, given)) => match Path::new(path).strip_prefix(real) {
            Ok(rest) if rest.as_os_str().is_empty() => given.display().to_string(),
            Ok(rest) => given.join(rest).display().to_string(),
            Err(_) => path.to_string(),
        },
        None => path.to_string(),
    }
}

#[async_trait]
impl Backend for LocalBackend {
    fn os(&self) -> OsFamily {
        if cfg!(windows) { OsFamily::Windows } else { OsFamily::Posix }
    }

    fn cwd(&self) -> String {
        self.cwd.display().to_string()
    }

    fn home(&self) -> String {
        self.home.display().to_string()
    }

    async fn read_file(&self, scope: &FsScope, path: &str, max_bytes: u64) -> Result<Vec<u8>, BackendError> {
        self.run(scope, path, Access::Read, true, "read", |d, r| read_bounded(d, r, max_bytes))
    }

    async fn write_file(&self, scope: &FsScope, path: &str, contents: &[u8]) -> Result<(), BackendError> {
        let abs = self.absolute(path);
        // Refuse directories and hard-linked files before writing anything.
        match self.run(scope, &abs, Access::Write, true, "write", |d, r| d.metadata(r)) {
            Ok(meta) if meta.is_dir() => {
                return Err(BackendError::Invalid(format!("cannot write {abs}: it is a directory; pass a file path")));
            }
            Ok(meta) if meta.is_file() && meta.nlink() > 1 => {
                return Err(BackendError::Denied(format!(
                    "refusing to write {abs}: it has {} hard links, and another link to the same \
                     file may be outside the granted roots; remove the extra links (or copy the \
                     file to a new name) before writing it",
                    meta.nlink()
                )));
            }
            Ok(_) | Err(BackendError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        self.run(scope, &abs, Access::Write, true, "write", |d, r| write_atomic(d, r, contents))
    }

    async fn stat(&self, scope: &FsScope, path: &str) -> Result<FileStat, BackendError> {
        let meta = self.run(scope, path, Access::Read, true, "stat", |d, r| d.metadata(r))?;
        Ok(FileStat { kind: kind_of(meta.file_type()), size: meta.len(), mtime_ns: mtime_ns(&meta) })
    }

    async fn list_dir(&self, scope: &FsScope, path: &str) -> Result<Vec<DirEntry>, BackendError> {
        let mut entries = self.list_unfiltered(scope, path)?;
        if !self.protected.is_empty() {
            // toolhost's own files are left out, as in walks.
            let dir = normalize_lexically(Path::new(&self.absolute(path)));
            let seen = self.protected_seen_from(path);
            entries.retain(|e| seen.covering(&dir.join(&e.path)).is_none());
        }
        Ok(entries)
    }

    async fn create_dir(&self, scope: &FsScope, path: &str) -> Result<(), BackendError> {
        self.run(scope, path, Access::Write, true, "create directory", |d, r| d.create_dir_all(r))
    }

    async fn remove(&self, scope: &FsScope, path: &str) -> Result<(), BackendError> {
        let abs = normalize_lexically(Path::new(&self.absolute(path)));
        for form in std::iter::once(abs.clone()).chain(resolve_real(&abs, false)) {
            if let Some(entry) = self.protected.below(&form) {
                return Err(BackendError::Denied(entry.refusal(&form)));
            }
        }
        self.run(scope, path, Access::Write, false, "remove", |d, r| {
            if r == Path::new(".") {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "refusing to remove a granted root itself; remove the entries inside it instead",
                ));
            }
            let meta = d.symlink_metadata(r)?;
            if meta.is_dir() { d.remove_dir_all(r) } else { d.remove_file(r) }
        })
    }

    async fn real_path(&self, scope: &FsScope, path: &str) -> Result<String, BackendError> {
        let abs = self.absolute(path);
        let lexical = normalize_lexically(Path::new(&abs));
        // The path must be in the scope as given before anything is resolved.
        scope.locate(&lexical.display().to_string(), Access::Read)?;
        self.guard(&abs, true)?;
        let real = match std::fs::canonicalize(&lexical) {
            Ok(real) => real,
            Err(_) => {
                let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) else {
                    return Err(BackendError::NotFound(abs));
                };
                std::fs::canonicalize(parent).map_err(|e| map_io(e, "real-path", &abs))?.join(name)
            }
        };
        if Self::real_roots(scope).iter().any(|r| real.starts_with(r)) {
            Ok(real.display().to_string())
        } else {
            Err(escape_denied(scope, &abs, Some(&real), Access::Read))
        }
    }

    async fn walk(&self, scope: &FsScope, options: &WalkOptions) -> Result<Vec<DirEntry>, BackendError> {
        let WalkStart { dir: start, alias, protected } = self.walk_start(scope, &options.root)?;
        let roots = Self::real_roots(scope);
        let options = options.clone();
        let mut entries = tokio::task::spawn_blocking(move || search::walk(&start, &options, &roots, &protected))
            .await
            .map_err(|e| BackendError::Io(format!("walk task failed: {e}")))??;
        for e in &mut entries {
            e.path = under_given(&e.path, alias.as_ref());
        }
        Ok(entries)
    }

    async fn search(&self, scope: &FsScope, request: &SearchRequest) -> Result<Vec<SearchFile>, BackendError> {
        // Validate the pattern before touching the filesystem.
        let matcher = search::build_matcher(request)?;
        let WalkStart { dir: start, alias, protected } = self.walk_start(scope, &request.files.root)?;
        let roots = Self::real_roots(scope);
        let request = request.clone();
        let mut files =
            tokio::task::spawn_blocking(move || search::search(&start, &request, &roots, &protected, matcher))
                .await
                .map_err(|e| BackendError::Io(format!("search task failed: {e}")))??;
        for f in &mut files {
            f.path = under_given(&f.path, alias.as_ref());
        }
        Ok(files)
    }

    async fn spawn(&self, request: &ExecRequest) -> Result<Box<dyn Process>, BackendError> {
        let cwd = match &request.cwd {
            Some(c) => PathBuf::from(self.absolute(c)),
            None => self.cwd.clone(),
        };
        let cap = if request.max_output_bytes == 0 { self.max_output_bytes } else { request.max_output_bytes };
        let confinement = match &self.sandbox {
            Some(sandbox) => Some(sandbox.confine(request)?),
            None => None,
        };
        process::spawn(&cwd, request, cap, confinement)
    }
}

/// Where a walk or search starts ([`LocalBackend::walk_start`]).
struct WalkStart {
    /// The directory to walk: the path as given, or its real path when it
    /// is a symlink.
    dir: PathBuf,
    /// For a symlinked start, (real, given): results are shown under the
    /// path the caller gave.
    alias: Option<(PathBuf, PathBuf)>,
    /// toolhost's own files as seen from the start.
    protected: ProtectedPaths,
}

fn absolutize(p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        return normalize_lexically(&p);
    }
    match std::env::current_dir() {
        Ok(cur) => normalize_lexically(&cur.join(p)),
        Err(_) => p,
    }
}

fn dot_if_empty(rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() { PathBuf::from(".") } else { rel.to_path_buf() }
}

/// `cap-std`'s refusal of a resolution that leaves its directory (its own
/// check, or `EXDEV` from `openat2(RESOLVE_BENEATH)`, which it maps).
fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
        && e.raw_os_error().is_none()
        && e.to_string().contains("outside of the filesystem")
}

/// The real path of `path`: the longest existing prefix canonicalized, the
/// rest appended. With `follow_final` false the last component is kept as is.
fn resolve_real(path: &Path, follow_final: bool) -> Option<PathBuf> {
    if !follow_final {
        let parent = path.parent()?;
        let name = path.file_name()?;
        return Some(resolve_real(parent, true)?.join(name));
    }
    crate::protected::real_form(path)
}

/// The refusal of a path whose symlinks lead out of the scope. The built-in
/// file tools recognise it by "a symbolic link on the way" (file-common's
/// `real_path`): keep that wording.
fn escape_denied(scope: &FsScope, path: &str, real: Option<&Path>, access: Access) -> BackendError {
    let verb = match access {
        Access::Read => "read",
        Access::Write => "write",
    };
    let target = real.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(path));
    let why = match scope.refusal(&target, access) {
        BackendError::Denied(text) => text,
        other => other.to_string(),
    };
    let via = match real {
        Some(r) => format!("a symbolic link on the way resolves to {}", r.display()),
        None => "a symbolic link on the way points outside".to_string(),
    };
    BackendError::Denied(format!("{verb} access to {path} refused: {via}; {why}"))
}

/// An I/O error as a [`BackendError`] naming the operation and the path.
fn map_io(e: io::Error, what: &str, path: &str) -> BackendError {
    use io::ErrorKind as K;
    match e.kind() {
        K::NotFound => BackendError::NotFound(format!("{path}: no such file or directory")),
        K::PermissionDenied => BackendError::Denied(format!(
            "cannot {what} {path}: permission denied by the operating system (file mode or owner)"
        )),
        K::IsADirectory => BackendError::Invalid(format!("cannot {what} {path}: it is a directory")),
        K::NotADirectory => {
            BackendError::Invalid(format!("cannot {what} {path}: a component of the path is not a directory"))
        }
        K::AlreadyExists => BackendError::Invalid(format!("cannot {what} {path}: it already exists")),
        K::InvalidInput => BackendError::Invalid(format!("cannot {what} {path}: {e}")),
        _ if e.raw_os_error() == Some(libc::ELOOP) => {
            BackendError::Invalid(format!("cannot {what} {path}: too many levels of symbolic links"))
        }
        _ => BackendError::Io(format!("cannot {what} {path}: {e}")),
    }
}

fn kind_of(ft: cap_std::fs::FileType) -> EntryKind {
    if ft.is_symlink() {
        EntryKind::Symlink
    } else if ft.is_dir() {
        EntryKind::Directory
    } else if ft.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

fn mtime_ns(meta: &cap_std::fs::Metadata) -> u64 {
    let secs = meta.mtime();
    let nanos = meta.mtime_nsec();
    if secs < 0 { 0 } else { (secs as u64).saturating_mul(1_000_000_000).saturating_add(nanos.max(0) as u64) }
}

/// Reads the regular file `rel` of at most `max` bytes. It is opened
/// without blocking (opening a FIFO that has no writer would otherwise hold
/// the thread until one comes), refused unless it is a regular file, and
/// refused when larger than `max`, before its content is read (and again if
/// it grows past `max` while being read).
fn read_bounded(dir: &Dir, rel: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut opts = OpenOptions::new();
    opts.read(true).custom_flags(libc::O_NONBLOCK);
    let file = dir.open_with(rel, &opts)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::ErrorKind::IsADirectory.into());
    }
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file (a FIFO, socket or device); only regular files are read",
        ));
    }
    let too_big = |size: u64| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is {size} bytes, more than the {max} bytes a tool can take at once (limits.max_memory_bytes); \
                 read it with a process (exec) or in parts, or raise the limit"
            ),
        )
    };
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.into_std().take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Temp file, fsync, rename. The target's final symlink (inside `dir`) is
/// resolved first so the link's target is replaced, not the link.
fn write_atomic(dir: &Dir, rel: &Path, contents: &[u8]) -> io::Result<()> {
    let target = match dir.symlink_metadata(rel) {
        Ok(m) if m.is_symlink() => dir.canonicalize(rel)?,
        _ => rel.to_path_buf(),
    };
    let Some(name) = target.file_name().map(|n| n.to_os_string()) else {
        return Err(io::Error::new(io::ErrorKind::IsADirectory, "the path names a directory"));
    };
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
    let pdir = match parent {
        Some(p) => {
            dir.create_dir_all(p)?;
            dir.open_dir(p)?
        }
        None => dir.try_clone()?,
    };
    let existing = pdir.metadata(&name).ok().filter(|m| m.is_file());
    let mode = existing.as_ref().map(|m| m.mode() & 0o7777);
    let owner = existing.as_ref().map(|m| (m.uid(), m.gid()));

    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    let (tmp, file) = loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = format!(".toolhost-{}-{n}.tmp", std::process::id());
        match pdir.open_with(&tmp, &opts) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        let mut f = file.into_std();
        f.write_all(contents)?;
        // Keep the owner where we may (a user can only give a file to
        // itself, but root, or a container's helper user, writes others').
        if let Some((uid, gid)) = owner {
            use std::os::unix::fs::MetadataExt as _;
            let meta = f.metadata()?;
            if (meta.uid(), meta.gid()) != (uid, gid) {
                let _ = std::os::unix::fs::fchown(&f, Some(uid), Some(gid));
            }
        }
        if let Some(mode) = mode {
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        f.sync_all()?;
        drop(f);
        pdir.rename(&tmp, &pdir, &name)
    })();
    if result.is_err() {
        let _ = pdir.remove_file(&tmp);
        return result;
    }
    // Best effort: persist the rename.
    if let Ok(d) = pdir.open(".") {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests;
