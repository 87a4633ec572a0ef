//! The `backend` interface: every call checks the tool's grants first, then
//! goes to the active [`Backend`](crate::backend::Backend) with the tool's
//! filesystem scope, which refuses any path outside it.

use std::time::Duration;

use wasmtime::component::Resource;

use crate::backend::{self as be, BackendError};
use crate::runtime::CallState;
use crate::runtime::bindings::tool::toolhost::tool::backend as wit;
use crate::runtime::bindings::wit_types::ToolError;

/// A process started by a guest, held in the store's resource table.
pub struct ProcessHandle(Box<dyn be::Process>);

impl From<BackendError> for ToolError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Denied(m) => ToolError::Denied(format!("denied: {m}")),
            BackendError::NotFound(m) => ToolError::NotFound(m),
            BackendError::Timeout(m) => ToolError::Timeout(m),
            BackendError::Invalid(m) => ToolError::InvalidInput(m),
            BackendError::Io(m) => ToolError::Io(m),
            BackendError::Unsupported(m) => ToolError::Unsupported(m),
        }
    }
}

fn kind(k: be::EntryKind) -> wit::EntryKind {
    match k {
        be::EntryKind::File => wit::EntryKind::File,
        be::EntryKind::Directory => wit::EntryKind::Directory,
        be::EntryKind::Symlink => wit::EntryKind::Symlink,
        be::EntryKind::Other => wit::EntryKind::Other,
    }
}

fn entry(e: be::DirEntry) -> wit::DirEntry {
    wit::DirEntry { path: e.path, kind: kind(e.kind), size: e.size, mtime_ns: e.mtime_ns }
}

fn walk_options(o: wit::WalkOptions) -> be::WalkOptions {
    be::WalkOptions {
        root: o.root,
        globs: o.globs,
        file_type: o.file_type,
        hidden: o.hidden,
        respect_ignore_files: o.respect_ignore_files,
        follow_symlinks: o.follow_symlinks,
        max_entries: o.max_entries,
        match_names: o.match_names,
    }
}

impl CallState {
    /// Makes a relative path absolute against the backend's cwd, so scope
    /// checks always see absolute paths.
    pub(super) fn absolute(&self, path: &str) -> String {
        let expanded = self.backend.expand_user(path);
        if expanded.starts_with('/') {
            expanded
        } else {
            format!("{}/{}", self.backend.cwd().trim_end_matches('/'), expanded)
        }
    }
}

/// A process's working directory: `abs` with its symlinks resolved, which
/// must lie inside `scope` (the tool's granted roots).
async fn process_cwd(
    backend: &dyn be::Backend,
    scope: &be::FsScope,
    tool: &str,
    abs: String,
) -> Result<String, ToolError> {
    backend.real_path(scope, &abs).await.map_err(|e| {
        ToolError::Denied(format!(
            "denied: the working directory {abs} is not inside the roots granted to tool '{tool}'; pass a cwd inside them, or none for the backend's working directory ({e})"
        ))
    })
}

/// The whole environment of a spawned process: the scrubbed base of the
/// grants, then the variables the tool asked for.
fn process_env(base: &[(String, String)], requested: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut env = base.to_vec();
    for (name, value) in requested {
        env.retain(|(k, _)| *k != name);
        env.push((name, value));
    }
    env
}

impl wit::Host for CallState {
    async fn os(&mut self) -> wasmtime::Result<wit::OsFamily> {
        Ok(match self.backend.os() {
            be::OsFamily::Posix => wit::OsFamily::Posix,
            be::OsFamily::Windows => wit::OsFamily::Windows,
        })
    }

    async fn cwd(&mut self) -> wasmtime::Result<String> {
        Ok(self.backend.cwd())
    }

    async fn expand_user(&mut self, path: String) -> wasmtime::Result<String> {
        Ok(self.backend.expand_user(&path))
    }

    async fn read_file(&mut self, path: String) -> wasmtime::Result<Result<Vec<u8>, ToolError>> {
        let path = self.absolute(&path);
        Ok(self.backend.read_file(&self.grants.fs, &path).await.map_err(Into::into))
    }

    async fn write_file(&mut self, path: String, contents: Vec<u8>) -> wasmtime::Result<Result<(), ToolError>> {
        let path = self.absolute(&path);
        Ok(self.backend.write_file(&self.grants.fs, &path, &contents).await.map_err(Into::into))
    }

    async fn stat(&mut self, path: String) -> wasmtime::Result<Result<wit::FileStat, ToolError>> {
        let path = self.absolute(&path);
        Ok(self
            .backend
            .stat(&self.grants.fs, &path)
            .await
            .map(|s| wit::FileStat { kind: kind(s.kind), size: s.size, mtime_ns: s.mtime_ns })
            .map_err(Into::into))
    }

    async fn list_dir(&mut self, path: String) -> wasmtime::Result<Result<Vec<wit::DirEntry>, ToolError>> {
        let path = self.absolute(&path);
        Ok(self
            .backend
            .list_dir(&self.grants.fs, &path)
            .await
            .map(|v| v.into_iter().map(entry).collect())
            .map_err(Into::into))
    }

    async fn create_dir(&mut self, path: String) -> wasmtime::Result<Result<(), ToolError>> {
        let path = self.absolute(&path);
        Ok(self.backend.create_dir(&self.grants.fs, &path).await.map_err(Into::into))
    }

    async fn remove(&mut self, path: String) -> wasmtime::Result<Result<(), ToolError>> {
        let path = self.absolute(&path);
        Ok(self.backend.remove(&self.grants.fs, &path).await.map_err(Into::into))
    }

    async fn real_path(&mut self, path: String) -> wasmtime::Result<Result<String, ToolError>> {
        // The lookup scope: a permission check may resolve symlinks (a
        // metadata lookup, no content) inside the roots its call may read.
        let path = self.absolute(&path);
        Ok(self.backend.real_path(&self.grants.lookup, &path).await.map_err(Into::into))
    }

    async fn walk(&mut self, options: wit::WalkOptions) -> wasmtime::Result<Result<Vec<wit::DirEntry>, ToolError>> {
        let mut options = walk_options(options);
        options.root = self.absolute(&options.root);
        Ok(self
            .backend
            .walk(&self.grants.fs, &options)
            .await
            .map(|v| v.into_iter().map(entry).collect())
            .map_err(Into::into))
    }

    async fn search(
        &mut self,
        request: wit::SearchRequest,
    ) -> wasmtime::Result<Result<Vec<wit::SearchFile>, ToolError>> {
        let mut files = walk_options(request.files);
        files.root = self.absolute(&files.root);
        let request = be::SearchRequest {
            files,
            pattern: request.pattern,
            case_insensitive: request.case_insensitive,
            multiline: request.multiline,
            mode: match request.mode {
                wit::SearchMode::Content => be::SearchMode::Content,
                wit::SearchMode::FilesWithMatches => be::SearchMode::FilesWithMatches,
                wit::SearchMode::Count => be::SearchMode::Count,
            },
            before_context: request.before_context,
            after_context: request.after_context,
            max_columns: request.max_columns,
        };
        Ok(self
            .backend
            .search(&self.grants.fs, &request)
            .await
            .map(|files| {
                files
                    .into_iter()
                    .map(|f| wit::SearchFile {
                        path: f.path,
                        count: f.count,
                        lines: f
                            .lines
                            .into_iter()
                            .map(|l| wit::SearchLine {
                                line_number: l.line_number,
                                text: l.text,
                                is_context: l.is_context,
                                gap_before: l.gap_before,
                            })
                            .collect(),
                    })
                    .collect()
            })
            .map_err(Into::into))
    }

    async fn spawn(
        &mut self,
        request: wit::ExecRequest,
    ) -> wasmtime::Result<Result<Resource<ProcessHandle>, ToolError>> {
        if let Err(message) = self.grants.exec_allowed() {
            return Ok(Err(ToolError::Denied(message)));
        }
        let limit = self.call_limits.max_process_timeout_ms;
        if request.timeout_ms > limit {
            return Ok(Err(ToolError::InvalidInput(format!(
                "a process timeout of {} ms exceeds the maximum of {limit} ms (limits.max_process_timeout_ms)",
                request.timeout_ms
            ))));
        }
        let cwd = match request.cwd {
            Some(cwd) => match process_cwd(&*self.backend, &self.grants.fs, &self.tool, self.absolute(&cwd)).await {
                Ok(real) => Some(real),
                Err(e) => return Ok(Err(e)),
            },
            None => None,
        };
        let timeout = Duration::from_millis(request.timeout_ms);
        self.deadline.extend_for(timeout);
        let cap = match request.max_output_bytes {
            0 => self.call_limits.max_output_bytes,
            n => n.min(self.call_limits.max_output_bytes),
        };
        let exec = be::ExecRequest {
            argv: request.argv,
            cwd,
            env: process_env(&self.grants.env, request.env),
            timeout,
            max_output_bytes: cap,
        };
        match self.backend.spawn(&exec).await {
            Ok(process) => Ok(Ok(self.table.push(ProcessHandle(process))?)),
            Err(e) => Ok(Err(e.into())),
        }
    }
}

impl wit::HostProcess for CallState {
    async fn next_output(&mut self, process: Resource<ProcessHandle>) -> wasmtime::Result<Option<wit::OutputPiece>> {
        let handle = self.table.get_mut(&process)?;
        Ok(handle.0.next_output().await.map(|piece| match piece {
            be::OutputPiece::Stdout(b) => wit::OutputPiece::Stdout(b),
            be::OutputPiece::Stderr(b) => wit::OutputPiece::Stderr(b),
        }))
    }

    async fn wait(&mut self, process: Resource<ProcessHandle>) -> wasmtime::Result<wit::ExitStatus> {
        let handle = self.table.get_mut(&process)?;
        let status = handle.0.wait().await;
        Ok(wit::ExitStatus { code: status.code, timed_out: status.timed_out, truncated: status.truncated })
    }

    async fn drop(&mut self, process: Resource<ProcessHandle>) -> wasmtime::Result<()> {
        // Dropping the handle kills the process group.
        self.table.delete(process)?;
        Ok(())
    }
}
