//! Choosing the backend from the settings: a table of backend factories,
//! one per kind (`[backend] kind = "local"`).
//!
//! Each kind is registered once with a function that builds its backend
//! from the host's setup and the other keys of the `[backend]` table (its
//! own options), so a new kind (`docker`) is one more entry in
//! [`BackendFactories::default`] or one [`BackendFactories::register`] call
//! by an embedder; nothing else in the host names a backend type.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, bail};

use super::Backend;
use super::local::LocalBackend;
use crate::protected::ProtectedPaths;

/// What a factory gets to build the backend of one host.
pub struct BackendSetup<'a> {
    /// The first working directory: the backend's working directory.
    pub cwd: &'a Path,
    /// toolhost's own files, which the backend must refuse to every tool.
    pub protected: Arc<ProtectedPaths>,
    /// The keys of `[backend]` besides `kind`: this kind's own options.
    pub options: &'a toml::Table,
}

/// Builds one kind of backend; the error names the option at fault.
pub type MakeBackend = fn(&BackendSetup<'_>) -> Result<Arc<dyn Backend>>;

/// The backend kinds a host can build, by name.
#[derive(Clone)]
pub struct BackendFactories {
    kinds: BTreeMap<&'static str, MakeBackend>,
}

impl Default for BackendFactories {
    /// Every kind toolhost ships: `local`.
    fn default() -> Self {
        let mut factories = Self::empty();
        factories.kinds.insert(LOCAL, make_local);
        factories
    }
}

/// The kind of [`LocalBackend`]: this machine, as the user running toolhost.
pub const LOCAL: &str = "local";

impl BackendFactories {
    /// A table with no kind at all.
    pub fn empty() -> Self {
        Self { kinds: BTreeMap::new() }
    }

    /// Adds `kind`; a kind already registered is an error (a factory is
    /// never replaced behind the user's back).
    pub fn register(&mut self, kind: &'static str, make: MakeBackend) -> Result<()> {
        if self.kinds.contains_key(kind) {
            bail!("a backend of kind `{kind}` is already registered; give the new one another name");
        }
        self.kinds.insert(kind, make);
        Ok(())
    }

    /// The registered kinds, in name order.
    pub fn kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.kinds.keys().copied()
    }

    /// Builds the backend of `kind`; an unknown kind is an error that lists
    /// the known ones.
    pub fn make(&self, kind: &str, setup: &BackendSetup<'_>) -> Result<Arc<dyn Backend>> {
        match self.kinds.get(kind) {
            Some(make) => make(setup),
            None => {
                let known: Vec<String> = self.kinds().map(|k| format!("`{k}`")).collect();
                bail!(
                    "unknown backend kind `{kind}`: the known kinds are {}; set [backend] kind in toolhost.toml \
                     or --backend to one of them",
                    known.join(", ")
                )
            }
        }
    }
}

/// The local backend: the first working directory as its cwd, `$HOME` (or
/// `/`) as its home. It takes no options.
fn make_local(setup: &BackendSetup<'_>) -> Result<Arc<dyn Backend>> {
    if let Some(key) = setup.options.keys().next() {
        bail!("[backend] `{key}` is not an option of the `local` backend, which takes none; remove it");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    Ok(Arc::new(LocalBackend::new(setup.cwd.to_path_buf(), home.into()).with_protected(setup.protected.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
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
        async fn read_file(&self, s: &FsScope, p: &str) -> Result<Vec<u8>, BackendError> {
            DeniedBackend.read_file(s, p).await
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

    fn make_elsewhere(setup: &BackendSetup<'_>) -> Result<Arc<dyn Backend>> {
        assert_eq!(setup.options.get("region").and_then(|v| v.as_str()), Some("north"), "the kind's own options");
        Ok(Arc::new(Elsewhere))
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
        factories.register("elsewhere", make_elsewhere).unwrap();
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
        factories.register("elsewhere", make_elsewhere).unwrap();
        let err = Toolhost::builder()
            .settings(settings(dir.path(), "docker", ""), None)
            .backend_factories(factories.clone())
            .build()
            .await
            .err()
            .expect("docker is not registered");
        let err = format!("{err:#}");
        assert!(err.contains("unknown backend kind `docker`"), "{err}");
        assert!(err.contains("the known kinds are `elsewhere`, `local`"), "{err}");
        let again = factories.register("local", make_elsewhere).unwrap_err().to_string();
        assert!(again.contains("already registered"), "{again}");
    }
}
