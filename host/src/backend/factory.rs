//! Choosing the backend from the settings: a table of backend factories,
//! one per kind (`[backend] kind = "local"`).
//!
//! Each kind is registered once with a function that builds its backend
//! from the host's setup and the other keys of the `[backend]` table (its
//! own options), so a new kind (`docker`) is one more entry in
//! [`BackendFactories::default`] or one [`BackendFactories::register`] call
//! by an embedder; nothing else in the host names a backend type.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};

use super::Backend;
use super::local::LocalBackend;
use super::local::sandbox::{Sandbox, SandboxSettings};
use crate::protected::ProtectedPaths;

/// What a factory gets to build the backend of one host.
pub struct BackendSetup<'a> {
    /// The first working directory: the backend's working directory.
    pub cwd: &'a Path,
    /// Every working directory (the first is `cwd`): where a confined
    /// process may write.
    pub working_dirs: &'a [PathBuf],
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
    /// Every kind toolhost ships: `local` and `docker`.
    fn default() -> Self {
        let mut factories = Self::empty();
        factories.kinds.insert(LOCAL, make_local);
        factories.kinds.insert(super::docker::DOCKER, super::docker::make);
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
/// `/`) as its home. Its one option is the `[backend.local]` table, the
/// sandbox of its processes ([`SandboxSettings`]).
fn make_local(setup: &BackendSetup<'_>) -> Result<Arc<dyn Backend>> {
    let mut sandbox = SandboxSettings::default();
    for (key, value) in setup.options {
        match (key.as_str(), value) {
            ("local", toml::Value::Table(table)) => {
                sandbox = table.clone().try_into().map_err(|e| anyhow::anyhow!("[backend.local]: {e}"))?;
            }
            ("local", other) => {
                bail!("[backend] local must be a table ([backend.local] sandbox = \"on\"), not {}", other.type_str())
            }
            _ => bail!(
                "[backend] `{key}` is not an option of the `local` backend, whose only option is the [backend.local] \
                 table (sandbox, network, max_processes, max_memory_bytes, deny_read, allow_write); remove it"
            ),
        }
    }
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into()));
    let mut backend = LocalBackend::new(setup.cwd.to_path_buf(), home.clone()).with_protected(setup.protected.clone());
    if let Some(sandbox) = Sandbox::from_settings(&sandbox, &home, setup.working_dirs, setup.protected.clone())? {
        tracing::info!("local processes run sandboxed: {}", sandbox.describe());
        backend = backend.with_sandbox(Arc::new(sandbox));
    }
    Ok(Arc::new(backend))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(options: &str) -> Result<Arc<dyn Backend>> {
        let options: toml::Table = toml::from_str(options).unwrap();
        let dir = std::env::temp_dir();
        let setup = BackendSetup {
            cwd: &dir,
            working_dirs: std::slice::from_ref(&dir),
            protected: Arc::default(),
            options: &options,
        };
        make_local(&setup)
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
}
