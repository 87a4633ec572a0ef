//! Middleware on the façade: loading, registering, attaching, replacing
//! and unloading (the chain itself is [`crate::execution::middleware`]).

use crate::sync::RwLockExt;
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;

use super::{AttachError, Toolhost};
use crate::capability::Grants;
use crate::catalog::tool::{LoadError, Origin};
use crate::execution::middleware::loader::check_name;
use crate::execution::middleware::registry::Layer;
use crate::execution::middleware::{MiddlewareInfo, NativeMiddleware, load_middleware_component};
use crate::settings::EVERY_TOOL;

impl Toolhost {
    /// Loads a middleware component from a `.wasm` file. It runs for the
    /// tools it is then attached to ([`Toolhost::attach`]).
    pub async fn load_middleware(&self, path: &Path) -> Result<MiddlewareInfo, LoadError> {
        let own = self.catalog().read_component(path, "middleware")?;
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let label = path.display().to_string();
        self.catalog().check_component(path, &own, &label)?;
        let bytes = own.bytes;
        let loaded = load_middleware_component(self.runtime(), &bytes, Origin::File(abs), &label).await?;
        let info = loaded.info.clone();
        let name = info.name.clone();
        let registry = self.catalog().middleware_registry();
        self.catalog().insert_middleware(
            || registry.insert(Layer::Component(Arc::new(loaded)), info, &label),
            &name,
            &label,
        )
    }

    /// Registers a native Rust middleware under its [`NativeMiddleware::name`].
    pub fn register_middleware(&self, middleware: Arc<dyn NativeMiddleware>) -> Result<MiddlewareInfo, LoadError> {
        let label = format!("native middleware {}", middleware.name());
        check_name(middleware.name(), &label)?;
        let info = MiddlewareInfo::native(middleware.as_ref());
        let name = info.name.clone();
        let registry = self.catalog().middleware_registry();
        self.catalog().insert_middleware(|| registry.insert(Layer::Native(middleware), info, &label), &name, &label)
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
            let layers = self.catalog().middleware_registry().layers.read_unpoisoned();
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
        self.catalog()
            .middleware_registry()
            .attach
            .write_unpoisoned()
            .entry(tool.to_string())
            .or_default()
            .extend(names);
        Ok(())
    }

    /// Detaches every middleware from `tool` (or from `"*"`).
    pub fn detach_all(&self, tool: &str) {
        self.catalog().middleware_registry().attach.write_unpoisoned().remove(tool);
    }

    /// Every loaded middleware, sorted by name.
    pub fn middleware(&self) -> Vec<MiddlewareInfo> {
        self.catalog().middleware_registry().layers.read_unpoisoned().values().map(|(_, i)| i.clone()).collect()
    }

    /// The names of the middleware that wrap `tool`'s calls, outermost first.
    pub fn middleware_for(&self, tool: &str) -> Vec<String> {
        self.catalog().middleware_registry().names_for(tool)
    }

    /// The grants of a middleware component
    /// ([`super::Permissions::middleware_grants`]).
    pub fn middleware_grants(&self, name: &str) -> Grants {
        self.permissions().middleware_grants(name)
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
