//! [`DeniedBackend`]: the backend of a metadata probe, which refuses every
//! operation.
//!
//! A freshly loaded component is asked for its metadata (a tool) or its
//! info (a middleware) before the user has granted it anything and before
//! the host knows its name. Whatever it tries from there meets this
//! backend: no file, no process, and no path of the host machine (its
//! working directory and home are `/`), whatever scope it was given.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use super::{
    Backend, BackendError, DirEntry, ExecRequest, FileStat, FsScope, OsFamily, Process, SearchFile, SearchRequest,
    WalkOptions,
};

/// The text of every refusal.
const REFUSAL: &str = "a component asked for its metadata gets no file or process operation: \
    the host has not granted it anything yet";

/// Refuses every operation ([`BackendError::Denied`]); reports `/` as its
/// working directory and home.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeniedBackend;

impl DeniedBackend {
    /// The one shared instance.
    pub fn shared() -> Arc<dyn Backend> {
        static SHARED: OnceLock<Arc<dyn Backend>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(DeniedBackend)).clone()
    }
}

fn refused<T>() -> Result<T, BackendError> {
    Err(BackendError::Denied(REFUSAL.to_string()))
}

#[async_trait]
impl Backend for DeniedBackend {
    fn os(&self) -> OsFamily {
        OsFamily::Posix
    }
    fn cwd(&self) -> String {
        "/".to_string()
    }
    fn home(&self) -> String {
        "/".to_string()
    }
    async fn read_file(&self, _: &FsScope, _: &str, _: u64) -> Result<Vec<u8>, BackendError> {
        refused()
    }
    async fn write_file(&self, _: &FsScope, _: &str, _: &[u8]) -> Result<(), BackendError> {
        refused()
    }
    async fn stat(&self, _: &FsScope, _: &str) -> Result<FileStat, BackendError> {
        refused()
    }
    async fn list_dir(&self, _: &FsScope, _: &str) -> Result<Vec<DirEntry>, BackendError> {
        refused()
    }
    async fn create_dir(&self, _: &FsScope, _: &str) -> Result<(), BackendError> {
        refused()
    }
    async fn remove(&self, _: &FsScope, _: &str) -> Result<(), BackendError> {
        refused()
    }
    async fn real_path(&self, _: &FsScope, _: &str) -> Result<String, BackendError> {
        refused()
    }
    async fn walk(&self, _: &FsScope, _: &WalkOptions) -> Result<Vec<DirEntry>, BackendError> {
        refused()
    }
    async fn search(&self, _: &FsScope, _: &SearchRequest) -> Result<Vec<SearchFile>, BackendError> {
        refused()
    }
    async fn spawn(&self, _: &ExecRequest) -> Result<Box<dyn Process>, BackendError> {
        refused()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_operation_is_refused_even_inside_a_granted_root() {
        let dir = tempfile::tempdir().unwrap();
        let canary = dir.path().join("canary");
        std::fs::write(&canary, "untouched").unwrap();
        let root = dir.path().display().to_string();
        let scope = FsScope::new("Probe", vec![super::super::scope::Root::new(dir.path(), true)], "");
        let path = canary.display().to_string();
        let b = DeniedBackend;
        let denied = |r: Result<(), BackendError>| {
            assert!(matches!(r, Err(BackendError::Denied(ref m)) if m == REFUSAL), "{r:?}")
        };
        denied(b.write_file(&scope, &path, b"pwned").await);
        denied(b.remove(&scope, &path).await);
        denied(b.create_dir(&scope, &format!("{root}/new")).await);
        denied(b.read_file(&scope, &path, u64::MAX).await.map(drop));
        denied(b.stat(&scope, &path).await.map(drop));
        denied(b.list_dir(&scope, &root).await.map(drop));
        denied(b.real_path(&scope, &path).await.map(drop));
        denied(b.walk(&scope, &WalkOptions { root: root.clone(), ..Default::default() }).await.map(drop));
        denied(b.search(&scope, &SearchRequest::default()).await.map(drop));
        let exec = ExecRequest {
            argv: vec!["/bin/sh".into(), "-c".into(), format!("echo pwned > {path}")],
            cwd: None,
            env: Vec::new(),
            timeout: std::time::Duration::from_secs(5),
            max_output_bytes: 0,
            write_roots: Vec::new(),
            read_only: false,
        };
        denied(b.spawn(&exec).await.map(drop));
        assert_eq!((b.cwd(), b.home(), b.expand_user("~/x")), ("/".into(), "/".into(), "/x".into()));
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "untouched");
        assert!(!dir.path().join("new").exists());
    }
}
