//! The `backend` interface, version-neutral: every call checks the tool's
//! grants first, then goes to the active [`Backend`](crate::backend::Backend)
//! with the tool's filesystem scope, which refuses any path outside it.
//! Each WIT version's adapters ([`crate::runtime::bindings`]) convert their
//! records and call these.

use std::time::Duration;

use wasmtime::component::Resource;

use super::HostError;
use crate::backend as be;
use crate::runtime::CallState;
use crate::types::ToolError;

/// A process started by a guest, held in the store's resource table.
pub struct ProcessHandle(Box<dyn be::Process>);

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

/// Refuses what no process can be started with, whatever the backend: a
/// NUL byte in an argument or a variable, and a variable name that is
/// empty or holds `=` (it would set another variable than it names).
fn check_exec_request(request: &ExecRequest) -> Result<(), ToolError> {
    if let Some(arg) = request.argv.iter().find(|a| a.contains('\0')) {
        let shown: String = arg.escape_debug().take(80).collect();
        return Err(ToolError::InvalidInput(format!(
            "the argument \"{shown}\" holds a NUL byte, which no program can receive; remove it"
        )));
    }
    for (name, value) in &request.env {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            let shown: String = name.escape_debug().take(80).collect();
            return Err(ToolError::InvalidInput(format!(
                "the environment variable \"{shown}\" cannot be set: a name must be non-empty without `=` or NUL \
                 bytes, and a value without NUL bytes"
            )));
        }
    }
    Ok(())
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

/// What a guest asks `spawn` for (the WIT `exec-request`).
pub(crate) struct ExecRequest {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// The working directory; the backend's when `None`.
    pub cwd: Option<String>,
    /// Variables set on top of the grants' scrubbed base.
    pub env: Vec<(String, String)>,
    /// How long it may run.
    pub timeout_ms: u64,
    /// The most output kept; 0 for the call's cap.
    pub max_output_bytes: u64,
}

/// The backend's OS family.
pub(crate) fn os(cx: &CallState) -> be::OsFamily {
    cx.backend.os()
}

/// The backend's working directory.
pub(crate) fn cwd(cx: &CallState) -> String {
    cx.backend.cwd()
}

/// `path` with a leading `~` taken in the backend's home.
pub(crate) fn expand_user(cx: &CallState, path: &str) -> String {
    cx.backend.expand_user(path)
}

/// A file's bytes, within the tool's scope.
pub(crate) async fn read_file(cx: &mut CallState, path: &str) -> Result<Vec<u8>, HostError> {
    let path = cx.absolute(path);
    // More than the guest's memory could never reach it: refused unread.
    let max = cx.call_limits.max_memory_bytes;
    Ok(cx.backend.read_file(&cx.grants.fs, &path, max).await?)
}

/// Writes a file, within the tool's scope.
pub(crate) async fn write_file(cx: &mut CallState, path: &str, contents: &[u8]) -> Result<(), HostError> {
    let path = cx.absolute(path);
    Ok(cx.backend.write_file(&cx.grants.fs, &path, contents).await?)
}

/// A path's metadata, within the tool's scope.
pub(crate) async fn stat(cx: &mut CallState, path: &str) -> Result<be::FileStat, HostError> {
    let path = cx.absolute(path);
    Ok(cx.backend.stat(&cx.grants.fs, &path).await?)
}

/// A folder's entries, within the tool's scope.
pub(crate) async fn list_dir(cx: &mut CallState, path: &str) -> Result<Vec<be::DirEntry>, HostError> {
    let path = cx.absolute(path);
    Ok(cx.backend.list_dir(&cx.grants.fs, &path).await?)
}

/// Creates a folder (and its parents), within the tool's scope.
pub(crate) async fn create_dir(cx: &mut CallState, path: &str) -> Result<(), HostError> {
    let path = cx.absolute(path);
    Ok(cx.backend.create_dir(&cx.grants.fs, &path).await?)
}

/// Removes a file or a folder, within the tool's scope.
pub(crate) async fn remove(cx: &mut CallState, path: &str) -> Result<(), HostError> {
    let path = cx.absolute(path);
    Ok(cx.backend.remove(&cx.grants.fs, &path).await?)
}

/// A path with its symlinks resolved.
pub(crate) async fn real_path(cx: &mut CallState, path: &str) -> Result<String, HostError> {
    // The lookup scope: a permission check may resolve symlinks (a
    // metadata lookup, no content) inside the roots its call may read.
    let path = cx.absolute(path);
    Ok(cx.backend.real_path(&cx.grants.lookup, &path).await?)
}

/// The entries of a walk, within the tool's scope.
pub(crate) async fn walk(cx: &mut CallState, mut options: be::WalkOptions) -> Result<Vec<be::DirEntry>, HostError> {
    options.root = cx.absolute(&options.root);
    Ok(cx.backend.walk(&cx.grants.fs, &options).await?)
}

/// The matches of a search, within the tool's scope.
pub(crate) async fn search(
    cx: &mut CallState,
    mut request: be::SearchRequest,
) -> Result<Vec<be::SearchFile>, HostError> {
    request.files.root = cx.absolute(&request.files.root);
    Ok(cx.backend.search(&cx.grants.fs, &request).await?)
}

/// Starts a process, if the grants allow processes, within the call's
/// limits; it is held in the store's resource table.
pub(crate) async fn spawn(cx: &mut CallState, request: ExecRequest) -> Result<Resource<ProcessHandle>, HostError> {
    cx.grants.exec_allowed().map_err(ToolError::Denied)?;
    check_exec_request(&request)?;
    let limit = cx.call_limits.max_process_timeout_ms;
    if request.timeout_ms > limit {
        return Err(ToolError::InvalidInput(format!(
            "a process timeout of {} ms exceeds the maximum of {limit} ms (limits.max_process_timeout_ms)",
            request.timeout_ms
        ))
        .into());
    }
    let cwd = match request.cwd {
        Some(cwd) => Some(process_cwd(&*cx.backend, &cx.grants.fs, &cx.tool, cx.absolute(&cwd)).await?),
        None => None,
    };
    let timeout = Duration::from_millis(request.timeout_ms);
    cx.deadline.extend_for(timeout);
    let cap = match request.max_output_bytes {
        0 => cx.call_limits.max_output_bytes,
        n => n.min(cx.call_limits.max_output_bytes),
    };
    let exec = be::ExecRequest {
        argv: request.argv,
        cwd,
        env: process_env(&cx.grants.env, request.env),
        timeout,
        max_output_bytes: cap,
        write_roots: cx.grants.fs.write_roots(),
        read_only: cx.grants.phase == crate::capability::Phase::ReadOnlyCall,
    };
    let process = cx.backend.spawn(&exec).await?;
    Ok(cx.table.push(ProcessHandle(process))?)
}

/// A process's next piece of output; `None` once it is all read.
pub(crate) async fn next_output(
    cx: &mut CallState,
    process: &Resource<ProcessHandle>,
) -> wasmtime::Result<Option<be::OutputPiece>> {
    Ok(cx.table.get_mut(process)?.0.next_output().await)
}

/// Waits for a process to end.
pub(crate) async fn wait(cx: &mut CallState, process: &Resource<ProcessHandle>) -> wasmtime::Result<be::ExitStatus> {
    Ok(cx.table.get_mut(process)?.0.wait().await)
}

/// Drops a process handle, which kills its process group.
pub(crate) fn drop_process(cx: &mut CallState, process: Resource<ProcessHandle>) -> wasmtime::Result<()> {
    cx.table.delete(process)?;
    Ok(())
}
