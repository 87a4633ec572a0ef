//! Choosing the backend from the settings: a table of backend factories,
//! one per kind (`[backend] kind = "local"`).
//!
//! Each kind is registered once with a function that reads its own options
//! (the other keys of the `[backend]` table) into a typed value,
//! [`BackendOptions`]; from then on the host asks that value what it needs
//! to know of the kind (whether its processes are contained, where they may
//! write) and has it build the backend. So a new kind (`docker`) is one
//! more entry in [`BackendFactories::default`] or one
//! [`BackendFactories::register`] call by an embedder; nothing else in the
//! host, and nothing in the settings, names a backend type or its keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};

use super::Backend;
use super::local::LocalBackend;
use super::local::sandbox::{Sandbox, SandboxMode, SandboxSettings};
use crate::protected::ProtectedPaths;

/// What a kind's options get to build the backend of one host.
pub struct BackendSetup<'a> {
    /// The first working directory: the backend's working directory.
    pub cwd: &'a Path,
    /// Every working directory (the first is `cwd`): where a confined
    /// process may write.
    pub working_dirs: &'a [PathBuf],
    /// toolhost's own files, which the backend must refuse to every tool.
    pub protected: Arc<ProtectedPaths>,
}

/// One backend kind's options, read once from `[backend]` by its factory
/// ([`ReadOptions`]) and typed from then on.
pub trait BackendOptions: Send + Sync + std::fmt::Debug {
    /// Builds the backend of one host; the error names the option at fault.
    fn make(&self, setup: &BackendSetup<'_>) -> Result<Arc<dyn Backend>>;

    /// `Ok` when every process the backend starts is contained: it cannot
    /// reach the network and writes only where its tool may. `Err` says
    /// what is not, and which setting would contain it. A shared state
    /// store is refused while it is not (an unconfined process could reach
    /// the store with toolhost's credentials).
    fn contains_processes(&self) -> Result<(), String>;

    /// Paths every process of the backend may write besides its tool's
    /// writable roots, `~/` resolved against `home` (none by default). A
    /// plugin file found under one loads only when pinned.
    fn writable_paths(&self, home: &Path) -> Vec<PathBuf> {
        let _ = home;
        Vec::new()
    }
}

/// Reads one kind's options from the keys of `[backend]` besides `kind`;
/// the error names the option at fault and how to write it.
pub type ReadOptions = fn(&toml::Table) -> Result<Box<dyn BackendOptions>>;

/// The backend kinds a host can build, by name.
#[derive(Clone)]
pub struct BackendFactories {
    kinds: BTreeMap<&'static str, ReadOptions>,
}

impl Default for BackendFactories {
    /// Every kind toolhost ships: `local` and `docker`.
    fn default() -> Self {
        let mut factories = Self::empty();
        factories.kinds.insert(LOCAL, LocalOptions::read);
        factories.kinds.insert(super::docker::DOCKER, super::docker::read_options);
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
    pub fn register(&mut self, kind: &'static str, read: ReadOptions) -> Result<()> {
        if self.kinds.contains_key(kind) {
            bail!("a backend of kind `{kind}` is already registered; give the new one another name");
        }
        self.kinds.insert(kind, read);
        Ok(())
    }

    /// The registered kinds, in name order.
    pub fn kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.kinds.keys().copied()
    }

    /// The options of `kind` (`[backend] kind`), read by its factory from
    /// `options` (the other keys of `[backend]`); an unknown kind is an
    /// error that lists the known ones.
    pub fn options(&self, kind: &str, options: &toml::Table) -> Result<Box<dyn BackendOptions>> {
        match self.kinds.get(kind) {
            Some(read) => read(options),
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

    /// Whether the processes of the backend `kind` with `options` are
    /// contained ([`BackendOptions::contains_processes`]); options that do
    /// not read are not.
    pub fn contains_processes(&self, kind: &str, options: &toml::Table) -> Result<(), String> {
        self.options(kind, options).map_err(|e| format!("{e:#}"))?.contains_processes()
    }
}

/// The options of the local backend: its one option is the
/// `[backend.local]` table, the sandbox of its processes
/// ([`SandboxSettings`]).
#[derive(Debug, Clone, Default)]
pub struct LocalOptions {
    /// `[backend.local]`.
    pub sandbox: SandboxSettings,
}

impl LocalOptions {
    /// Reads `[backend.local]`, refusing any other key of `[backend]`.
    pub fn read(options: &toml::Table) -> Result<Box<dyn BackendOptions>> {
        let mut sandbox = SandboxSettings::default();
        for (key, value) in options {
            match (key.as_str(), value) {
                ("local", toml::Value::Table(table)) => {
                    sandbox = table.clone().try_into().map_err(|e| anyhow::anyhow!("[backend.local]: {e}"))?;
                }
                ("local", other) => {
                    bail!(
                        "[backend] local must be a table ([backend.local] sandbox = \"on\"), not {}",
                        other.type_str()
                    )
                }
                _ => bail!(
                    "[backend] `{key}` is not an option of the `local` backend, whose only option is the \
                     [backend.local] table (sandbox, network, max_processes, max_memory_bytes, deny_read, \
                     allow_write); remove it"
                ),
            }
        }
        Ok(Box::new(Self { sandbox }))
    }
}

impl BackendOptions for LocalOptions {
    /// The local backend: the first working directory as its cwd, `$HOME`
    /// (or `/`) as its home, its processes in the sandbox the options ask.
    fn make(&self, setup: &BackendSetup<'_>) -> Result<Arc<dyn Backend>> {
        let home = home();
        let mut backend =
            LocalBackend::new(setup.cwd.to_path_buf(), home.clone()).with_protected(setup.protected.clone());
        if let Some(sandbox) =
            Sandbox::from_settings(&self.sandbox, &home, setup.working_dirs, setup.protected.clone())?
        {
            tracing::info!("local processes run sandboxed: {}", sandbox.describe());
            backend = backend.with_sandbox(Arc::new(sandbox));
        }
        Ok(Arc::new(backend))
    }

    /// Contained with the sandbox `on` and no network.
    fn contains_processes(&self) -> Result<(), String> {
        let SandboxSettings { sandbox, network, .. } = &self.sandbox;
        if *sandbox == SandboxMode::On && !network {
            return Ok(());
        }
        let mode = format!("{sandbox:?}").to_lowercase();
        Err(format!(
            "the local backend runs tool processes with [backend.local] sandbox = \"{mode}\"{}; set sandbox = \"on\" \
             and network = false",
            if *network { " and network = true" } else { "" }
        ))
    }

    /// `[backend.local] allow_write`.
    fn writable_paths(&self, home: &Path) -> Vec<PathBuf> {
        self.sandbox
            .allow_write
            .iter()
            .map(|path| match path.strip_prefix("~/") {
                Ok(rest) => home.join(rest),
                Err(_) => path.clone(),
            })
            .collect()
    }
}

/// toolhost's `$HOME`, else `/`.
fn home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(options: &str) -> Result<Arc<dyn Backend>> {
        let options: toml::Table = toml::from_str(options).unwrap();
        let dir = std::env::temp_dir();
        let setup = BackendSetup { cwd: &dir, working_dirs: std::slice::from_ref(&dir), protected: Arc::default() };
        LocalOptions::read(&options)?.make(&setup)
    }

    #[test]
    fn the_local_backend_takes_only_its_sandbox_table() {
        assert!(make("").is_ok());
        assert!(make("[local]\nsandbox = \"off\"\n").is_ok());
        let err = make("image = \"debian\"\n").err().unwrap().to_string();
        assert!(err.contains("`image`") && err.contains("[backend.local]"), "{err}");
        let err = make("local = \"on\"\n").err().unwrap().to_string();
        assert!(err.contains("must be a table"), "{err}");
        let err = format!("{:#}", make("[local]\nsandbox = \"off\"\nbogus = 1\n").err().unwrap());
        assert!(err.contains("bogus"), "{err}");
        let err = format!("{:#}", make("[local]\nsandbox = \"always\"\n").err().unwrap());
        assert!(err.contains("always"), "{err}");
        let err = format!("{:#}", make("[local]\nsandbox = \"on\"\ndeny_read = [\"relative\"]\n").err().unwrap());
        assert!(err.contains("not an absolute path"), "{err}");
    }

    #[test]
    fn processes_are_contained_by_the_sandbox_without_network_or_by_a_container_without_network() {
        let factories = BackendFactories::default();
        let contained = |kind, options: &str| factories.contains_processes(kind, &toml::from_str(options).unwrap());
        assert!(contained("local", "[local]\nsandbox = \"on\"\n").is_ok());
        let err = contained("local", "").unwrap_err();
        assert!(err.contains("sandbox = \"off\"") && err.contains("set sandbox = \"on\""), "{err}");
        let err = contained("local", "[local]\nsandbox = \"auto\"\n").unwrap_err();
        assert!(err.contains("sandbox = \"auto\""), "{err}");
        let err = contained("local", "[local]\nsandbox = \"on\"\nnetwork = true\n").unwrap_err();
        assert!(err.contains("network = true"), "{err}");
        assert!(contained("docker", "[docker]\nimage = \"debian\"\n").is_ok());
        let err = contained("docker", "[docker]\nimage = \"debian\"\nnetwork = \"bridge\"\n").unwrap_err();
        assert!(err.contains("\"bridge\"") && err.contains("network = \"none\""), "{err}");
        let err = contained("e2b", "").unwrap_err();
        assert!(err.contains("unknown backend kind `e2b`"), "{err}");
        let err = contained("local", "[local]\nsandbox = \"always\"\n").unwrap_err();
        assert!(err.contains("always"), "{err}");
    }

    #[test]
    fn the_local_backends_writable_paths_are_its_allow_write_with_home_resolved() {
        let options =
            LocalOptions::read(&toml::from_str("[local]\nallow_write = [\"~/.cargo\", \"/opt/x\"]\n").unwrap());
        let paths = options.unwrap().writable_paths(Path::new("/home/u"));
        assert_eq!(paths, [PathBuf::from("/home/u/.cargo"), PathBuf::from("/opt/x")]);
        let docker = crate::backend::docker::read_options(&toml::from_str("[docker]\nimage = \"debian\"\n").unwrap());
        assert!(docker.unwrap().writable_paths(Path::new("/home/u")).is_empty());
    }
}
