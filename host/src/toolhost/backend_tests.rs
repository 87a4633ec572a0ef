//! The backend seam from the façade's side: `[backend] kind` picks the
//! backend through the registered factories, and the permission context
//! takes its cwd and home from it.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;

use crate::backend::Backend;
use crate::backend::factory::*;
use crate::backend::{
    BackendError, DeniedBackend, DirEntry, ExecRequest, FileStat, FsScope, OsFamily, Process, SearchFile,
    SearchRequest, WalkOptions,
};
use crate::permission::Mode;
use crate::settings::Settings;
use crate::toolhost::Toolhost;

/// A backend somewhere else: its own cwd and home, no operation.
struct Elsewhere;

#[async_trait::async_trait]
impl Backend for Elsewhere {
    fn os(&self) -> OsFamily {
        OsFamily::Posix
    }
    fn cwd(&self) -> String {
        "/elsewhere/work".into()
    }
    fn home(&self) -> String {
        "/elsewhere/home".into()
    }
    async fn read_file(&self, s: &FsScope, p: &str, max: u64) -> Result<Vec<u8>, BackendError> {
        DeniedBackend.read_file(s, p, max).await
    }
    async fn write_file(&self, s: &FsScope, p: &str, c: &[u8]) -> Result<(), BackendError> {
        DeniedBackend.write_file(s, p, c).await
    }
    async fn stat(&self, s: &FsScope, p: &str) -> Result<FileStat, BackendError> {
        DeniedBackend.stat(s, p).await
    }
    async fn list_dir(&self, s: &FsScope, p: &str) -> Result<Vec<DirEntry>, BackendError> {
        DeniedBackend.list_dir(s, p).await
    }
    async fn create_dir(&self, s: &FsScope, p: &str) -> Result<(), BackendError> {
        DeniedBackend.create_dir(s, p).await
    }
    async fn remove(&self, s: &FsScope, p: &str) -> Result<(), BackendError> {
        DeniedBackend.remove(s, p).await
    }
    async fn real_path(&self, s: &FsScope, p: &str) -> Result<String, BackendError> {
        DeniedBackend.real_path(s, p).await
    }
    async fn walk(&self, s: &FsScope, o: &WalkOptions) -> Result<Vec<DirEntry>, BackendError> {
        DeniedBackend.walk(s, o).await
    }
    async fn search(&self, s: &FsScope, r: &SearchRequest) -> Result<Vec<SearchFile>, BackendError> {
        DeniedBackend.search(s, r).await
    }
    async fn spawn(&self, r: &ExecRequest) -> Result<Box<dyn Process>, BackendError> {
        DeniedBackend.spawn(r).await
    }
}

/// The options of the `elsewhere` kind, typed: its region.
#[derive(Debug)]
struct ElsewhereOptions {
    region: String,
}

impl BackendOptions for ElsewhereOptions {
    fn make(&self, _: &BackendSetup<'_>) -> Result<Arc<dyn Backend>> {
        assert_eq!(self.region, "north", "the kind's own options");
        Ok(Arc::new(Elsewhere))
    }
    fn contains_processes(&self) -> Result<(), String> {
        Ok(())
    }
}

fn read_elsewhere(options: &toml::Table) -> Result<Box<dyn BackendOptions>> {
    let region = options.get("region").and_then(|v| v.as_str()).unwrap_or_default().to_string();
    Ok(Box::new(ElsewhereOptions { region }))
}

/// Settings over a fresh working directory naming the backend `kind`
/// with `options`, no built-in.
fn settings(dir: &Path, kind: &str, options: &str) -> Settings {
    let mut settings: Settings = toml::from_str(&format!("[backend]\nkind = \"{kind}\"\n{options}")).unwrap();
    settings.permissions.working_dirs = vec![dir.display().to_string()];
    settings.cache_dir = Some(dir.join("cache"));
    settings.builtins = false;
    settings
}

#[tokio::test]
async fn the_settings_pick_the_backend_and_the_context_takes_its_home_and_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let mut factories = BackendFactories::default();
    factories.register("elsewhere", read_elsewhere).unwrap();
    let host = Toolhost::builder()
        .settings(settings(dir.path(), "elsewhere", "region = \"north\"\n"), None)
        .backend_factories(factories)
        .build()
        .await
        .unwrap();
    let ctx = host.permission_context("Any", Mode::Default);
    assert_eq!((ctx.cwd.as_str(), ctx.home.as_str()), ("/elsewhere/work", "/elsewhere/home"));
    assert_ne!(ctx.home, std::env::var("HOME").unwrap_or_default(), "not the host's $HOME");
}

#[tokio::test]
async fn local_is_the_default_and_takes_no_option() {
    let dir = tempfile::tempdir().unwrap();
    let host = Toolhost::builder().settings(settings(dir.path(), "local", ""), None).build().await.unwrap();
    let ctx = host.permission_context("Any", Mode::Default);
    assert_eq!(ctx.cwd, dir.path().display().to_string());
    let err = Toolhost::builder()
        .settings(settings(dir.path(), "local", "image = \"debian\"\n"), None)
        .build()
        .await
        .err()
        .expect("an option the local backend does not take");
    assert!(format!("{err:#}").contains("`image` is not an option of the `local` backend"), "{err:#}");
}

#[tokio::test]
async fn an_unknown_kind_is_an_error_listing_the_known_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let mut factories = BackendFactories::default();
    factories.register("elsewhere", read_elsewhere).unwrap();
    let err = Toolhost::builder()
        .settings(settings(dir.path(), "e2b", ""), None)
        .backend_factories(factories.clone())
        .build()
        .await
        .err()
        .expect("e2b is not registered");
    let err = format!("{err:#}");
    assert!(err.contains("unknown backend kind `e2b`"), "{err}");
    assert!(err.contains("the known kinds are `docker`, `elsewhere`, `local`"), "{err}");
    let again = factories.register("local", read_elsewhere).unwrap_err().to_string();
    assert!(again.contains("already registered"), "{again}");
}
