//! [`RecordingBackend`]: the backend a call of an audited or traced host
//! gets. It forwards every operation to the real backend and notes it, with
//! its result, in the call's [`CallAudit`] (the record says what the host
//! did for the tool, paths as the host resolved them and command lines as
//! the backend ran them) and, in a traced call, as a span `host {op}`
//! (the operation and whether it worked, never its paths or arguments).

use std::sync::Arc;

use async_trait::async_trait;

use super::CallAudit;
use super::record::HostOp;
use crate::backend::{
    Backend, BackendError, DirEntry, ExecRequest, FileStat, FsScope, OsFamily, Process, SearchFile, SearchRequest,
    WalkOptions,
};
use crate::telemetry::trace;

/// A backend that notes every operation in a call's audit and trace.
pub struct RecordingBackend {
    inner: Arc<dyn Backend>,
    audit: Option<Arc<CallAudit>>,
}

impl RecordingBackend {
    /// Forwards to `inner`, noting in `audit` (when given) and in the
    /// current call's trace (when it is traced).
    pub fn new(inner: Arc<dyn Backend>, audit: Option<Arc<CallAudit>>) -> Self {
        RecordingBackend { inner, audit }
    }

    /// Runs one operation named `name` in a span of its own.
    async fn traced<T>(
        &self,
        name: &'static str,
        op: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        let mut span = trace::child(|| name);
        let result = op.await;
        // Not the error's text: it names paths, which come from the model.
        if let (Some(span), Err(_)) = (&mut span, &result) {
            span.fail("the operation failed");
        }
        result
    }

    fn op(&self, op: impl FnOnce() -> HostOp) {
        if let Some(audit) = &self.audit {
            audit.op(op());
        }
    }

    fn list<T>(&self, how: &str, path: &str, result: &Result<T, BackendError>) {
        self.op(|| HostOp::List { how: how.into(), path: path.into(), ok: result.is_ok() });
    }
}

#[async_trait]
impl Backend for RecordingBackend {
    fn os(&self) -> OsFamily {
        self.inner.os()
    }

    fn cwd(&self) -> String {
        self.inner.cwd()
    }

    fn home(&self) -> String {
        self.inner.home()
    }

    fn expand_user(&self, path: &str) -> String {
        self.inner.expand_user(path)
    }

    async fn read_file(&self, scope: &FsScope, path: &str, max_bytes: u64) -> Result<Vec<u8>, BackendError> {
        let result = self.traced("host read_file", self.inner.read_file(scope, path, max_bytes)).await;
        self.op(|| HostOp::Read { path: path.into(), ok: result.is_ok() });
        result
    }

    async fn write_file(&self, scope: &FsScope, path: &str, contents: &[u8]) -> Result<(), BackendError> {
        let result = self.traced("host write_file", self.inner.write_file(scope, path, contents)).await;
        self.op(|| HostOp::Write { path: path.into(), bytes: contents.len() as u64, ok: result.is_ok() });
        result
    }

    async fn stat(&self, scope: &FsScope, path: &str) -> Result<FileStat, BackendError> {
        let result = self.traced("host stat", self.inner.stat(scope, path)).await;
        self.list("stat", path, &result);
        result
    }

    async fn list_dir(&self, scope: &FsScope, path: &str) -> Result<Vec<DirEntry>, BackendError> {
        let result = self.traced("host list_dir", self.inner.list_dir(scope, path)).await;
        self.list("list_dir", path, &result);
        result
    }

    async fn create_dir(&self, scope: &FsScope, path: &str) -> Result<(), BackendError> {
        let result = self.traced("host create_dir", self.inner.create_dir(scope, path)).await;
        self.op(|| HostOp::CreateDir { path: path.into(), ok: result.is_ok() });
        result
    }

    async fn remove(&self, scope: &FsScope, path: &str) -> Result<(), BackendError> {
        let result = self.traced("host remove", self.inner.remove(scope, path)).await;
        self.op(|| HostOp::Remove { path: path.into(), ok: result.is_ok() });
        result
    }

    async fn real_path(&self, scope: &FsScope, path: &str) -> Result<String, BackendError> {
        let result = self.traced("host real_path", self.inner.real_path(scope, path)).await;
        self.list("real_path", path, &result);
        result
    }

    async fn walk(&self, scope: &FsScope, options: &WalkOptions) -> Result<Vec<DirEntry>, BackendError> {
        let result = self.traced("host walk", self.inner.walk(scope, options)).await;
        self.list("walk", &options.root, &result);
        result
    }

    async fn search(&self, scope: &FsScope, request: &SearchRequest) -> Result<Vec<SearchFile>, BackendError> {
        let result = self.traced("host search", self.inner.search(scope, request)).await;
        self.list("search", &request.files.root, &result);
        result
    }

    async fn spawn(&self, request: &ExecRequest) -> Result<Box<dyn Process>, BackendError> {
        let result = self.traced("host spawn", self.inner.spawn(request)).await;
        self.op(|| HostOp::Spawn { argv: request.argv.clone(), cwd: request.cwd.clone(), ok: result.is_ok() });
        result
    }
}
