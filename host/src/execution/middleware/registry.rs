//! The loaded middleware by name and the attachments (which tools each
//! wraps). A call takes its chain's layers (`Arc`s) at its start, so
//! [`Registry::replace`] and [`Registry::remove`] never disturb a running
//! call: it finishes with the layers it started with.

use crate::sync::RwLockExt;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;

use super::failure::CallFailure;
use super::loader::LoadedMiddleware;
use super::native::NativeMiddleware;
use crate::catalog::tool::{LoadError, Origin};
use crate::settings::EVERY_TOOL;

/// What `toolhost` knows about a loaded middleware.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MiddlewareInfo {
    /// Its unique name, used to attach it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// A component file, or native Rust.
    pub origin: Origin,
    /// The WIT package version a component was built against (empty for native).
    pub wit_version: String,
    /// SHA-256 of the component bytes (empty for native).
    pub sha256: String,
}

impl MiddlewareInfo {
    /// The info of a native middleware.
    pub fn native(middleware: &dyn NativeMiddleware) -> Self {
        MiddlewareInfo {
            name: middleware.name().to_string(),
            description: middleware.description().to_string(),
            origin: Origin::Native,
            wit_version: String::new(),
            sha256: String::new(),
        }
    }
}

/// A layer of a chain.
#[derive(Clone)]
pub enum Layer {
    /// A component, instantiated afresh for every invocation.
    Component(Arc<LoadedMiddleware>),
    /// The embedder's own Rust code.
    Native(Arc<dyn NativeMiddleware>),
}

impl Layer {
    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            Layer::Component(mw) => &mw.info.name,
            Layer::Native(mw) => mw.name(),
        }
    }
}

/// The loaded middleware and the attachments, kept by the
/// [`Toolhost`](crate::Toolhost).
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) layers: RwLock<BTreeMap<String, (Layer, MiddlewareInfo)>>,
    pub(crate) attach: RwLock<BTreeMap<String, Vec<String>>>,
}

impl Registry {
    /// Adds a middleware unless its name is taken.
    pub(crate) fn insert(&self, layer: Layer, info: MiddlewareInfo, label: &str) -> Result<MiddlewareInfo, LoadError> {
        let mut layers = self.layers.write_unpoisoned();
        if layers.contains_key(&info.name) {
            return Err(LoadError::MiddlewareNameTaken { source_name: label.to_string(), name: info.name });
        }
        layers.insert(info.name.clone(), (layer, info.clone()));
        Ok(info)
    }

    /// Puts `layer` in place of the middleware named `info.name`, in one
    /// step (chains that start later use it; running ones finish with the
    /// old one). `None` when no middleware of that name is loaded.
    pub(crate) fn replace(&self, layer: Layer, info: MiddlewareInfo) -> Option<MiddlewareInfo> {
        let mut layers = self.layers.write_unpoisoned();
        let slot = layers.get_mut(&info.name)?;
        *slot = (layer, info.clone());
        Some(info)
    }

    /// Removes the middleware `name` (its attachments stay: a call of a
    /// tool it is attached to then fails, naming it, until it is loaded
    /// again or detached). Returns whether it was loaded.
    pub(crate) fn remove(&self, name: &str) -> bool {
        self.layers.write_unpoisoned().remove(name).is_some()
    }

    /// Whether a middleware named `name` is loaded.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.layers.read_unpoisoned().contains_key(name)
    }

    /// The names attached to `tool`, outermost first.
    pub(crate) fn names_for(&self, tool: &str) -> Vec<String> {
        let attach = self.attach.read_unpoisoned();
        let mut names: Vec<String> = Vec::new();
        for key in [EVERY_TOOL, tool] {
            for name in attach.get(key).into_iter().flatten() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// The layers of `tool`'s chain; an attached name that is not loaded
    /// fails the call (middleware may enforce policy, e.g. redaction).
    pub(crate) fn chain_for(&self, tool: &str) -> Result<Vec<Layer>, CallFailure> {
        let names = self.names_for(tool);
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let layers = self.layers.read_unpoisoned();
        names
            .iter()
            .map(|name| {
                layers
                    .get(name)
                    .map(|(l, _)| l.clone())
                    .ok_or_else(|| CallFailure::NotLoaded { name: name.clone(), tool: tool.to_string() })
            })
            .collect()
    }
}
