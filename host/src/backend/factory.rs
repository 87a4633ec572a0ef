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
