//! Execution backends: where a tool's file and process operations happen.
//!
//! A [`Backend`] is the host side of the WIT `backend` interface. The tools do
//! not change when the backend does: the local machine today, a Docker
//! container next. Every operation receives the [`FsScope`] granted to the
//! calling tool; a backend must refuse any path outside it, and it is the only
//! place where paths are resolved, so the capability check lives here once.

pub(crate) mod denied;
pub mod docker;
pub(crate) mod factory;
pub mod local;
pub(crate) mod scope;

use std::time::Duration;

use async_trait::async_trait;

pub use denied::DeniedBackend;
pub use factory::{BackendFactories, BackendOptions, BackendSetup, LocalOptions, ReadOptions};
pub use scope::{Access, FsScope, Root};

/// The kind of a filesystem entry (mirrors WIT `entry-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (only reported where links are not followed).
    Symlink,
    /// Anything else (sockets, devices, fifos).
    Other,
}

/// What `stat` reports (mirrors WIT `file-stat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    /// What the path is, symlinks followed.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Last modification, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
}

/// One entry of `list_dir` (a name) or `walk` (an absolute path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// File name for `list_dir`, absolute path for `walk`.
    pub path: String,
    /// Entry kind, symlinks not followed.
    pub kind: EntryKind,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Last modification, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
}

/// How `walk` and `search` select files (mirrors WIT `walk-options`).
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Start directory (or, for search, a single file).
    pub root: String,
    /// gitignore-syntax globs; empty means every file.
    pub globs: Vec<String>,
    /// A ripgrep file type name (`rust`, `py`, ...).
    pub file_type: Option<String>,
    /// Include dot files and directories.
    pub hidden: bool,
    /// Honour `.gitignore`, `.ignore`, `.rgignore`.
    pub respect_ignore_files: bool,
    /// Follow symlinks (never outside the scope).
    pub follow_symlinks: bool,
    /// Stop after this many entries (0 = unlimited).
    pub max_entries: u32,
    /// Only files whose name matches one of these globs (empty: every name);
    /// never overrides the ignore rules.
    pub match_names: Vec<String>,
}

/// What `search` returns per file (mirrors WIT `search-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// Matching lines with optional context.
    #[default]
    Content,
    /// File names only.
    FilesWithMatches,
    /// Matching-line counts per file.
    Count,
}

/// A native search request (mirrors WIT `search-request`).
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// Which files.
    pub files: WalkOptions,
    /// Regex in Rust `regex` syntax.
    pub pattern: String,
    /// Case-insensitive matching.
    pub case_insensitive: bool,
    /// Patterns may span lines; `.` matches newlines.
    pub multiline: bool,
    /// What to return.
    pub mode: SearchMode,
    /// Context lines before each match.
    pub before_context: u32,
    /// Context lines after each match.
    pub after_context: u32,
    /// Longer lines are replaced by a notice (0 = no limit).
    pub max_columns: u32,
}

/// One line of a content search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchLine {
    /// 1-based line number.
    pub line_number: u64,
    /// Text without the line ending.
    pub text: String,
    /// A context line rather than a match.
    pub is_context: bool,
    /// A `--` separator precedes this line.
    pub gap_before: bool,
}

/// The matches in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchFile {
    /// The file's path (absolute).
    pub path: String,
    /// Matching lines in this file.
    pub count: u64,
    /// Lines, in content mode.
    pub lines: Vec<SearchLine>,
}

/// A request to run a program (mirrors WIT `exec-request`).
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// Program and arguments; no shell unless argv names one.
    pub argv: Vec<String>,
    /// Working directory; `None` = the backend's cwd.
    pub cwd: Option<String>,
    /// The whole environment of the process: it inherits nothing else
    /// (the host scrubs it, see [`crate::capability::process_env`]).
    pub env: Vec<(String, String)>,
    /// Kill the whole process group after this long.
    pub timeout: Duration,
    /// Per-stream collection cap in bytes.
    pub max_output_bytes: u64,
    /// Where the process may write on a backend that confines processes,
    /// besides the working directories: the calling tool's writable roots
    /// ([`FsScope::write_roots`]). A backend that does not confine ignores it.
    pub write_roots: Vec<std::path::PathBuf>,
    /// The call was admitted as read-only: a backend that confines
    /// processes lets this one write nowhere (but its private temporary
    /// directory).
    pub read_only: bool,
}

/// A piece of process output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputPiece {
    /// Bytes from standard output.
    Stdout(Vec<u8>),
    /// Bytes from standard error.
    Stderr(Vec<u8>),
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus {
    /// Exit code; -1 when killed by a signal or at the timeout.
    pub code: i32,
    /// Killed at its timeout.
    pub timed_out: bool,
    /// Output beyond the cap was dropped.
    pub truncated: bool,
}

/// Why a backend operation failed. Each variant maps onto WIT `tool-error`.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BackendError {
    /// Outside the granted scope, or a capability not granted. The text
    /// names the path or capability and the setting that would allow it.
    #[error("denied: {0}")]
    Denied(String),
    /// No such file or directory.
    #[error("not found: {0}")]
    NotFound(String),
    /// Ran out of time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// Input the backend cannot act on (a bad glob, regex, type name).
    #[error("invalid: {0}")]
    Invalid(String),
    /// Any other I/O failure.
    #[error("{0}")]
    Io(String),
    /// Not available on this backend.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// A running process. Dropping it kills its process group.
#[async_trait]
pub trait Process: Send {
    /// The next piece of output; `None` once both streams are closed.
    async fn next_output(&mut self) -> Option<OutputPiece>;
    /// Waits for the end (killing at the timeout); unread output is discarded.
    async fn wait(&mut self) -> ExitStatus;
}

/// The operating system a backend runs commands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsFamily {
    /// Linux, macOS, a container.
    Posix,
    /// Windows.
    Windows,
}

/// Filesystem and process operations of one execution environment.
///
/// Implementations must resolve every path against `scope` and refuse what
/// lies outside it (`..`, absolute paths, symlinks); the host relies on this
/// and checks nowhere else.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Which OS commands run on.
    fn os(&self) -> OsFamily;
    /// The backend's working directory (absolute): relative paths of tool
    /// calls, and `cwd` of the permission context.
    fn cwd(&self) -> String;
    /// The backend user's home directory (absolute): what `~` means to tool
    /// calls and to the permission context (`home`).
    fn home(&self) -> String;
    /// Expands a leading `~` or `~/`.
    fn expand_user(&self, path: &str) -> String {
        if path == "~" {
            self.home()
        } else if let Some(rest) = path.strip_prefix("~/") {
            format!("{}/{}", self.home().trim_end_matches('/'), rest)
        } else {
            path.to_string()
        }
    }

    /// Reads a whole regular file of at most `max_bytes` (what the caller
    /// can take: a tool's memory limit). A larger file, or one that is not
    /// a regular file (a FIFO, socket or device, which could block the
    /// reading thread for ever), is refused with [`BackendError::Invalid`]
    /// before its content is read.
    async fn read_file(&self, scope: &FsScope, path: &str, max_bytes: u64) -> Result<Vec<u8>, BackendError>;
    /// Writes a whole file atomically, creating parents.
    async fn write_file(&self, scope: &FsScope, path: &str, contents: &[u8]) -> Result<(), BackendError>;
    /// Stats a path (symlinks followed within the scope).
    async fn stat(&self, scope: &FsScope, path: &str) -> Result<FileStat, BackendError>;
    /// Lists a directory.
    async fn list_dir(&self, scope: &FsScope, path: &str) -> Result<Vec<DirEntry>, BackendError>;
    /// Creates a directory and missing parents.
    async fn create_dir(&self, scope: &FsScope, path: &str) -> Result<(), BackendError>;
    /// Removes a file or a whole directory tree.
    async fn remove(&self, scope: &FsScope, path: &str) -> Result<(), BackendError>;
    /// Resolves every symlink in `path` (a missing last component is kept
    /// as is); refuses a real path outside the scope.
    async fn real_path(&self, scope: &FsScope, path: &str) -> Result<String, BackendError>;
    /// Walks a tree (VCS directories skipped), returning files.
    async fn walk(&self, scope: &FsScope, options: &WalkOptions) -> Result<Vec<DirEntry>, BackendError>;
    /// Searches files natively.
    async fn search(&self, scope: &FsScope, request: &SearchRequest) -> Result<Vec<SearchFile>, BackendError>;
    /// Starts a process (the caller has checked the `process-exec` grant).
    async fn spawn(&self, request: &ExecRequest) -> Result<Box<dyn Process>, BackendError>;
}
