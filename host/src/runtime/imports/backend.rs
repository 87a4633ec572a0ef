//! The `backend` interface: every call checks the tool's grants first, then
//! goes to the active [`Backend`](crate::backend::Backend) with the tool's
//! filesystem scope, which refuses any path outside it.

use std::time::Duration;

use wasmtime::component::Resource;

use super::HostError;
use crate::backend as be;
use crate::runtime::CallState;
use crate::runtime::bindings::v0_1_0::backend as wit;
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
fn check_exec_request(request: &wit::ExecRequest) -> Result<(), ToolError> {
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

impl wit::Host for CallState {
    async fn os(&mut self) -> wasmtime::Result<wit::OsFamily> {
        Ok(self.backend.os().into())
    }

    async fn cwd(&mut self) -> wasmtime::Result<String> {
        Ok(self.backend.cwd())
    }

    async fn expand_user(&mut self, path: String) -> wasmtime::Result<String> {
        Ok(self.backend.expand_user(&path))
    }

    async fn read_file(&mut self, path: String) -> Result<Vec<u8>, HostError> {
        let path = self.absolute(&path);
        // More than the guest's memory could never reach it: refused unread.
        let max = self.call_limits.max_memory_bytes;
        Ok(self.backend.read_file(&self.grants.fs, &path, max).await?)
    }

    async fn write_file(&mut self, path: String, contents: Vec<u8>) -> Result<(), HostError> {
        let path = self.absolute(&path);
        Ok(self.backend.write_file(&self.grants.fs, &path, &contents).await?)
    }

    async fn stat(&mut self, path: String) -> Result<wit::FileStat, HostError> {
        let path = self.absolute(&path);
        Ok(self.backend.stat(&self.grants.fs, &path).await?.into())
    }

    async fn list_dir(&mut self, path: String) -> Result<Vec<wit::DirEntry>, HostError> {
        let path = self.absolute(&path);
        Ok(self.backend.list_dir(&self.grants.fs, &path).await?.into_iter().map(Into::into).collect())
    }

    async fn create_dir(&mut self, path: String) -> Result<(), HostError> {
        let path = self.absolute(&path);
        Ok(self.backend.create_dir(&self.grants.fs, &path).await?)
    }

    async fn remove(&mut self, path: String) -> Result<(), HostError> {
        let path = self.absolute(&path);
        Ok(self.backend.remove(&self.grants.fs, &path).await?)
    }

    async fn real_path(&mut self, path: String) -> Result<String, HostError> {
        // The lookup scope: a permission check may resolve symlinks (a
        // metadata lookup, no content) inside the roots its call may read.
        let path = self.absolute(&path);
        Ok(self.backend.real_path(&self.grants.lookup, &path).await?)
    }

    async fn walk(&mut self, options: wit::WalkOptions) -> Result<Vec<wit::DirEntry>, HostError> {
        let mut options = be::WalkOptions::from(options);
        options.root = self.absolute(&options.root);
        Ok(self.backend.walk(&self.grants.fs, &options).await?.into_iter().map(Into::into).collect())
    }

    async fn search(&mut self, request: wit::SearchRequest) -> Result<Vec<wit::SearchFile>, HostError> {
        let mut request = be::SearchRequest::from(request);
        request.files.root = self.absolute(&request.files.root);
        Ok(self.backend.search(&self.grants.fs, &request).await?.into_iter().map(Into::into).collect())
    }

    async fn spawn(&mut self, request: wit::ExecRequest) -> Result<Resource<ProcessHandle>, HostError> {
        self.grants.exec_allowed().map_err(ToolError::Denied)?;
        check_exec_request(&request)?;
        let limit = self.call_limits.max_process_timeout_ms;
        if request.timeout_ms > limit {
            return Err(ToolError::InvalidInput(format!(
                "a process timeout of {} ms exceeds the maximum of {limit} ms (limits.max_process_timeout_ms)",
                request.timeout_ms
            ))
            .into());
        }
        let cwd = match request.cwd {
            Some(cwd) => Some(process_cwd(&*self.backend, &self.grants.fs, &self.tool, self.absolute(&cwd)).await?),
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
            write_roots: self.grants.fs.write_roots(),
            read_only: self.grants.phase == crate::capability::Phase::ReadOnlyCall,
        };
        let process = self.backend.spawn(&exec).await?;
        Ok(self.table.push(ProcessHandle(process))?)
    }
}

impl wit::HostProcess for CallState {
    async fn next_output(&mut self, process: Resource<ProcessHandle>) -> wasmtime::Result<Option<wit::OutputPiece>> {
        let handle = self.table.get_mut(&process)?;
        Ok(handle.0.next_output().await.map(Into::into))
    }

    async fn wait(&mut self, process: Resource<ProcessHandle>) -> wasmtime::Result<wit::ExitStatus> {
        let handle = self.table.get_mut(&process)?;
        Ok(handle.0.wait().await.into())
    }

    async fn drop(&mut self, process: Resource<ProcessHandle>) -> wasmtime::Result<()> {
        // Dropping the handle kills the process group.
        self.table.delete(process)?;
        Ok(())
    }
}
