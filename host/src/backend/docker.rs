//! The Docker backend: commands run in one hardened container per backend,
//! through a resident helper; files are the container's bound folders.
//!
//! # Design
//!
//! * **Same paths inside and out.** The working directories (and the
//!   `[backend.docker]` mounts) are bound at their own absolute paths, so a
//!   path, a permission rule or a suggestion means the same thing on either
//!   backend. Nothing else of the host is in the container: its root is the
//!   image (read-only), `/tmp` is a private tmpfs, and the helper's
//!   executable is bound read-only at `/.toolhost-helper`.
//! * **Files through the binds.** A bind is the same inode on both sides,
//!   so file operations run on the host, on the bound folders, with the
//!   local backend's `cap-std` confinement, over the caller's scope
//!   narrowed to what the container has bound ([`FsScope::within`]): a
//!   path outside the grant, or not bound, is refused, and a symlink
//!   created in the container that leads out of the bound folders is
//!   refused as on the local backend. The container never serves a file
//!   request, and no file operation pays an engine round trip.
//! * **Commands through one attached stream.** The container's main process
//!   is the helper (`session.rs`), attached once: a command is one frame to
//!   it and its output comes back as frames, as produced. The helper starts
//!   each command in its own session and process group and kills the group
//!   on request: at the timeout, or when the [`Process`] handle is dropped;
//!   what a command leaves running dies when it ends. The helper is the
//!   container's PID 1 and not dumpable, so no command can reach its
//!   channel, and every event carries its command's nonce.
//! * **Lifecycle.** The container is created on the first call (after
//!   removing containers left behind by hosts that are gone, by label),
//!   reused by every call, and recreated on the next call when it died (the
//!   call that was running gets an error). When the backend is dropped it
//!   is removed; when the host dies without dropping it, the helper's stdin
//!   closes, the helper exits and the engine removes the container
//!   (`auto_remove`).

pub(crate) mod container;
pub(crate) mod engine;
pub(crate) mod helper;
pub(crate) mod process;
pub(crate) mod protocol;
pub(crate) mod session;
pub(crate) mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::local::{DEFAULT_MAX_OUTPUT_BYTES, LocalBackend};
use super::scope::normalize_lexically;
use super::{
    Backend, BackendError, BackendOptions, BackendSetup, DirEntry, ExecRequest, FileStat, FsScope, OsFamily, Process,
    SearchFile, SearchRequest, WalkOptions,
};
use container::Mount;
use helper::HelperFile;
use process::DockerProcess;
use protocol::Event;
use session::Session;
pub use settings::DockerSettings;

/// The kind name: `[backend] kind = "docker"`.
pub const DOCKER: &str = "docker";

/// How long a command may take to be reported started.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A Docker container as a backend (see the module docs).
///
/// Security defaults: no network, a read-only root, every capability
/// dropped, no new privileges, memory, process and (optionally) CPU limits,
/// the helper as a PID 1 that reaps, commands as the owner of the first
/// working directory, only the working directories (and configured mounts)
/// of the host visible.
pub struct DockerBackend {
    settings: DockerSettings,
    mounts: Vec<Mount>,
    visible: Vec<(PathBuf, bool)>,
    cwd: PathBuf,
    user: String,
    files: LocalBackend,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    session: Option<Arc<Session>>,
    helper: Option<HelperFile>,
}

/// Reads the options of `[backend] kind = "docker"`: its
/// `[backend.docker]` table, refusing any other key of `[backend]`.
pub fn read_options(options: &toml::Table) -> anyhow::Result<Box<dyn BackendOptions>> {
    let mut table = None;
    for (key, value) in options {
        match (key.as_str(), value) {
            ("docker", toml::Value::Table(t)) => table = Some(t),
            ("docker", other) => {
                anyhow::bail!(
                    "[backend] docker must be a table ([backend.docker] image = \"…\"), not {}",
                    other.type_str()
                )
            }
            _ => anyhow::bail!(
                "[backend] `{key}` is not an option of the `docker` backend, whose only option is the [backend.docker] \
                 table (image, network, max_memory_bytes, cpus, max_processes, user, mounts_ro, mounts_rw, env, \
                 tmp_bytes); remove it"
            ),
        }
    }
    let Some(table) = table else {
        anyhow::bail!(
            "[backend] kind = \"docker\" needs a [backend.docker] table with at least image = \"…\" (or --docker-image)"
        );
    };
    Ok(Box::new(DockerSettings::from_table(table)?))
}

impl BackendOptions for DockerSettings {
    /// The Docker backend; nothing talks to the engine until the first call.
    fn make(&self, setup: &BackendSetup<'_>) -> anyhow::Result<Arc<dyn Backend>> {
        Ok(Arc::new(DockerBackend::new(self.clone(), setup.cwd, setup.working_dirs, setup.protected.clone())?))
    }

    /// Contained on the network `none` (the container's own limits hold
    /// every process).
    fn contains_processes(&self) -> Result<(), String> {
        if self.network == "none" {
            return Ok(());
        }
        Err(format!(
            "the Docker backend runs tool processes on the network \"{}\"; set [backend.docker] network = \"none\"",
            self.network
        ))
    }
}

impl DockerBackend {
    /// A backend over `settings`, its commands starting in `cwd`, binding
    /// `working_dirs` read-write; `protected` (toolhost's own files) is
    /// refused to every file operation.
    pub fn new(
        settings: DockerSettings,
        cwd: &Path,
        working_dirs: &[PathBuf],
        protected: Arc<crate::protected::ProtectedPaths>,
    ) -> anyhow::Result<Self> {
        let mounts = container::mounts(working_dirs, &settings)?;
        let visible = mounts.iter().map(|m| (m.path.clone(), m.write)).collect();
        let user = match &settings.user {
            Some(u) => u.clone(),
            None => mounts.first().and_then(|m| container::owner_of(&m.path)).unwrap_or_else(|| "0:0".into()),
        };
        let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into()));
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| normalize_lexically(cwd));
        let files = LocalBackend::new(cwd.clone(), home).with_protected(protected);
        Ok(Self { settings, mounts, visible, cwd, user, files, state: Default::default() })
    }

    /// The user commands run as (`uid:gid`).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The id of the running container, if one runs.
    pub async fn container_id(&self) -> Option<String> {
        self.state.lock().await.session.as_ref().filter(|s| s.is_alive()).map(|s| s.id.clone())
    }

    /// The live session, made (or remade, when the container died) as needed.
    async fn session(&self) -> Result<Arc<Session>, BackendError> {
        let mut state = self.state.lock().await;
        if let Some(s) = state.session.as_ref().filter(|s| s.is_alive()) {
            return Ok(s.clone());
        }
        let docker = engine::connect().await?;
        match container::remove_leftovers(&docker).await {
            Ok(0) => {}
            Ok(n) => tracing::info!("removed {n} container(s) left by toolhost processes that are gone"),
            Err(e) => tracing::warn!("{e}"),
        }
        if let Some(old) = state.session.take() {
            container::remove(&docker, &old.id).await;
        }
        if state.helper.is_none() {
            state.helper = Some(HelperFile::write()?);
        }
        let helper = state.helper.as_ref().expect("written above").path();
        let body = container::create_body(&self.settings, &self.mounts, &helper, &self.cwd, &self.user);
        let session = Session::start(docker, body).await?;
        tracing::info!("Docker container {} started from {}", session.id, self.settings.image);
        state.session = Some(session.clone());
        Ok(session)
    }

    /// Whether `path` (absolute, lexical) lies in a bound folder.
    fn is_visible(&self, path: &Path) -> bool {
        self.visible.iter().any(|(m, _)| path.starts_with(m))
    }

    /// `scope` narrowed to the container's binds, after making sure the container runs.
    async fn scope(&self, scope: &FsScope) -> Result<FsScope, BackendError> {
        self.session().await?;
        Ok(scope.within(&self.visible))
    }

    fn absolute(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        normalize_lexically(&if p.is_absolute() { p.to_path_buf() } else { self.cwd.join(p) })
    }
}

#[async_trait]
impl Backend for DockerBackend {
    fn os(&self) -> OsFamily {
        OsFamily::Posix
    }

    fn cwd(&self) -> String {
        self.cwd.display().to_string()
    }

    fn home(&self) -> String {
        self.files.home()
    }

    async fn read_file(&self, scope: &FsScope, path: &str, max_bytes: u64) -> Result<Vec<u8>, BackendError> {
        self.files.read_file(&self.scope(scope).await?, path, max_bytes).await
    }

    async fn write_file(&self, scope: &FsScope, path: &str, contents: &[u8]) -> Result<(), BackendError> {
        self.files.write_file(&self.scope(scope).await?, path, contents).await
    }

    async fn stat(&self, scope: &FsScope, path: &str) -> Result<FileStat, BackendError> {
        self.files.stat(&self.scope(scope).await?, path).await
    }

    async fn list_dir(&self, scope: &FsScope, path: &str) -> Result<Vec<DirEntry>, BackendError> {
        self.files.list_dir(&self.scope(scope).await?, path).await
    }

    async fn create_dir(&self, scope: &FsScope, path: &str) -> Result<(), BackendError> {
        self.files.create_dir(&self.scope(scope).await?, path).await
    }

    async fn remove(&self, scope: &FsScope, path: &str) -> Result<(), BackendError> {
        self.files.remove(&self.scope(scope).await?, path).await
    }

    async fn real_path(&self, scope: &FsScope, path: &str) -> Result<String, BackendError> {
        self.files.real_path(&self.scope(scope).await?, path).await
    }

    async fn walk(&self, scope: &FsScope, options: &WalkOptions) -> Result<Vec<DirEntry>, BackendError> {
        self.files.walk(&self.scope(scope).await?, options).await
    }

    async fn search(&self, scope: &FsScope, request: &SearchRequest) -> Result<Vec<SearchFile>, BackendError> {
        self.files.search(&self.scope(scope).await?, request).await
    }

    async fn spawn(&self, request: &ExecRequest) -> Result<Box<dyn Process>, BackendError> {
        let Some(program) = request.argv.first() else {
            return Err(BackendError::Invalid("empty argv: name the program to run in argv[0]".into()));
        };
        let cwd = match &request.cwd {
            Some(c) => self.absolute(c),
            None => self.cwd.clone(),
        };
        if !self.is_visible(&cwd) {
            return Err(BackendError::NotFound(format!(
                "working directory {} is not bound into the Docker container (only the working directories and \
                 [backend.docker] mounts are); pass a cwd inside one of them",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(BackendError::NotFound(format!(
                "working directory {} does not exist or is not a directory; pass an existing cwd",
                cwd.display()
            )));
        }
        let session = self.session().await?;
        let mut env: Vec<(String, String)> = request.env.iter().filter(|(k, _)| k != "TMPDIR").cloned().collect();
        env.push(("TMPDIR".into(), "/tmp".into()));
        for (k, v) in self.settings.command_env() {
            env.retain(|(e, _)| *e != k);
            env.push((k, v));
        }
        let (id, nonce, mut events) = session.register()?;
        session.send(protocol::spawn(id, &nonce, &request.argv, &cwd.display().to_string(), &env));
        let first = tokio::time::timeout(START_TIMEOUT, events.recv()).await;
        match first {
            Ok(Some(Event::Started)) => {}
            Ok(Some(Event::SpawnError(kind, text))) => {
                return Err(match kind {
                    1 => BackendError::NotFound(format!(
                        "program '{program}' not found in the Docker container (image {}): {text}; check that the \
                         image has it, on PATH or by absolute path",
                        self.settings.image
                    )),
                    2 => BackendError::Denied(format!(
                        "cannot execute '{program}' in the Docker container: {text}; check that it is an executable file"
                    )),
                    _ => BackendError::Io(format!("cannot start '{program}' in the Docker container: {text}")),
                });
            }
            Ok(Some(Event::Died(text))) => {
                return Err(BackendError::Io(text));
            }
            Ok(_) => {
                session.unregister(id);
                return Err(BackendError::Io(format!(
                    "the Docker container {} stopped before '{program}' started; the next call starts a new one",
                    session.id
                )));
            }
            Err(_) => {
                session.send(protocol::kill(id));
                session.unregister(id);
                return Err(BackendError::Timeout(format!(
                    "'{program}' did not start in the Docker container within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
        }
        let cap = if request.max_output_bytes == 0 { DEFAULT_MAX_OUTPUT_BYTES } else { request.max_output_bytes };
        Ok(Box::new(DockerProcess {
            id,
            events,
            session,
            deadline: Instant::now() + request.timeout,
            cap,
            kept: [0, 0],
            truncated: false,
            timed_out: false,
            finished: None,
        }))
    }
}

impl Drop for DockerBackend {
    fn drop(&mut self) {
        let Some(session) = self.state.get_mut().session.take() else { return };
        let id = session.id.clone();
        tracing::debug!("removing the Docker container {id}");
        // Dropping the session closes the helper's stdin; removing it now
        // makes the end certain. A runtime of its own, on a thread of its own:
        // drop may run inside the host's runtime.
        drop(session);
        let remover = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async {
                if let Ok(Ok(docker)) = tokio::time::timeout(Duration::from_secs(3), engine::connect()).await {
                    let _ = tokio::time::timeout(Duration::from_secs(10), container::remove(&docker, &id)).await;
                }
            });
        });
        let _ = remover.join();
    }
}
