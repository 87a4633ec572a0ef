//! Middleware on the façade: loading, registering, attaching, replacing
//! and unloading (the chain itself is [`crate::execution::middleware`]).

use crate::sync::{MutexExt, RwLockExt};
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;

use super::{AttachError, Toolhost};
use crate::capability::{Declared, Grants, Phase, PhaseGrants};
use crate::catalog::tool::{LoadError, Origin};
use crate::execution::middleware::loader::check_name;
use crate::execution::middleware::registry::Layer;
use crate::execution::middleware::{MiddlewareInfo, NativeMiddleware, load_middleware_component};
use crate::settings::EVERY_TOOL;

impl Toolhost {
    /// Loads a middleware component from a `.wasm` file. It runs for the
    /// tools it is then attached to ([`Toolhost::attach`]).
    pub async fn load_middleware(&self, path: &Path) -> Result<MiddlewareInfo, LoadError> {
        let own = self.read_component(path, "middleware")?;
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let label = path.display().to_string();
        self.check_component(path, &own, &label)?;
        let bytes = own.bytes;
        let loaded = load_middleware_component(self.runtime(), &bytes, Origin::File(abs), &label).await?;
        let info = loaded.info.clone();
        let name = info.name.clone();
        let registry = self.middleware_registry();
        self.insert_middleware(|| registry.insert(Layer::Component(Arc::new(loaded)), info, &label), &name, &label)
    }

    /// Registers a native Rust middleware under its [`NativeMiddleware::name`].
    pub fn register_middleware(&self, middleware: Arc<dyn NativeMiddleware>) -> Result<MiddlewareInfo, LoadError> {
        let label = format!("native middleware {}", middleware.name());
        check_name(middleware.name(), &label)?;
        let info = MiddlewareInfo::native(middleware.as_ref());
        let name = info.name.clone();
        let registry = self.middleware_registry();
        self.insert_middleware(|| registry.insert(Layer::Native(middleware), info, &label), &name, &label)
    }

    /// Attaches middleware to `tool` (or to every tool with `"*"`), after
    /// any already attached: the first attached is outermost. Every name
    /// must be loaded.
    pub fn attach<I, S>(&self, tool: &str, names: I) -> Result<(), AttachError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: Vec<String> = names.into_iter().map(|n| n.as_ref().to_string()).collect();
        {
            let layers = self.middleware_registry().layers.read_unpoisoned();
            if let Some(name) = names.iter().find(|name| !layers.contains_key(*name)) {
                return Err(AttachError::NotLoaded {
                    name: name.clone(),
                    tool: tool.to_string(),
                    loaded: layers.keys().cloned().collect(),
                });
            }
        }
        if tool != EVERY_TOOL && !self.is_registered(tool) {
            tracing::warn!("middleware attached to '{tool}', which is not loaded (yet)");
        }
        self.middleware_registry().attach.write_unpoisoned().entry(tool.to_string()).or_default().extend(names);
        Ok(())
    }

    /// Detaches every middleware from `tool` (or from `"*"`).
    pub fn detach_all(&self, tool: &str) {
        self.middleware_registry().attach.write_unpoisoned().remove(tool);
    }

    /// Every loaded middleware, sorted by name.
    pub fn middleware(&self) -> Vec<MiddlewareInfo> {
        self.middleware_registry().layers.read_unpoisoned().values().map(|(_, i)| i.clone()).collect()
    }

    /// The names of the middleware that wrap `tool`'s calls, outermost first.
    pub fn middleware_for(&self, tool: &str) -> Vec<String> {
        self.middleware_registry().names_for(tool)
    }

    /// The grants of a middleware component: exactly what `[grants.NAME]`
    /// (or `--grant NAME=...`) gives it, nothing by default.
    pub fn middleware_grants(&self, name: &str) -> Grants {
        let policy = self.settings().grants.get(name).cloned().unwrap_or_default();
        let declared = Declared {
            fs_read: policy.fs_read.clone(),
            fs_write: policy.fs_write.clone(),
            process_exec: policy.process_exec,
            network: false,
            state: policy.state,
        };
        Grants::intersect(name, &declared, &policy, self.working_dirs(), &[], false)
    }

    /// [`Toolhost::middleware_grants`] shaped for `phase`, computed once per
    /// middleware name.
    pub(crate) fn middleware_phase_grants(&self, name: &str, phase: Phase) -> Arc<Grants> {
        let mut cache = self.inner.middleware_grants.lock_unpoisoned();
        if let Some(grants) = cache.get(name) {
            return grants.get(phase);
        }
        let grants = Arc::new(PhaseGrants::new(self.middleware_grants(name)));
        cache.insert(name.to_string(), grants.clone());
        grants.get(phase)
    }

    /// Loads `[middleware].files` and applies `[middleware.attach]`.
    pub(crate) async fn load_configured_middleware(&self) -> Result<(), super::BuildError> {
        let config = self.settings().middleware.clone();
        for file in &config.files {
            self.load_middleware(file).await?;
        }
        for (tool, names) in &config.attach {
            self.attach(tool, names)
                .map_err(|e| super::BuildError::Settings(format!("[middleware.attach] {tool}: {e}")))?;
        }
        Ok(())
    }
}
