//! Swapping a loaded tool or middleware for a new version, and unloading
//! middleware. A call takes the tool (and its chain's layers) as `Arc`s at
//! its start, so a swap never disturbs it: calls already running finish on
//! the old version, calls that start after the swap get the new one, and
//! the name is registered throughout (no "tool not found" in between).
//!
//! The new version is loaded like a fresh one, before the swap, with no
//! lock held: its metadata is probed with no grants, and its grants are
//! computed from its own metadata and the settings the first time it is
//! used. Nothing of the old version (grants, permission answers cached in
//! an instance) carries over.

use std::path::PathBuf;
use std::sync::Arc;

use super::{ReplaceError, Toolhost};
use crate::catalog::function::FunctionTool;
use crate::catalog::tool::{LookupError, Origin, ToolInfo};
use crate::execution::component::load_component;
use crate::execution::function::load_function;
use crate::execution::loaded::LoadedTool;
use crate::execution::middleware::loader::check_name;
use crate::execution::middleware::registry::Layer;
use crate::execution::middleware::{MiddlewareInfo, NativeMiddleware, load_middleware_component};

/// What [`Toolhost::replace`] or [`Toolhost::replace_middleware`] puts in
/// place of a loaded tool or middleware.
pub enum Replacement {
    /// A component file (a plugin tool, or a middleware component).
    File(PathBuf),
    /// A native function tool.
    Function(FunctionTool),
    /// A native middleware.
    Middleware(Arc<dyn NativeMiddleware>),
}

impl Replacement {
    fn label(&self) -> String {
        match self {
            Replacement::File(path) => path.display().to_string(),
            Replacement::Function(f) => format!("function tool {}", f.name()),
            Replacement::Middleware(m) => format!("native middleware {}", m.name()),
        }
    }
}

impl Toolhost {
    /// Replaces the tool registered as `name` (a built-in, a plugin or a
    /// function tool) with `new`, atomically. `new` must report the same
    /// name. Fails, changing nothing, when `name` is not registered, when
    /// `new` cannot be loaded, or when it is a middleware.
    pub async fn replace(&self, name: &str, new: Replacement) -> Result<ToolInfo, ReplaceError> {
        if !self.is_registered(name) {
            return Err(LookupError::Unknown(name.to_string()).into());
        }
        let label = new.label();
        let tool: LoadedTool = match new {
            Replacement::File(path) => {
                let bytes = self.catalog().read_component(&path, "plugin")?.bytes;
                let abs = std::path::absolute(&path).unwrap_or(path);
                load_component(self.runtime(), &bytes, Origin::File(abs), &label).await?.tool
            }
            Replacement::Function(f) => load_function(f)?,
            Replacement::Middleware(_) => {
                let (name, method) = (name.to_string(), "replace_middleware");
                return Err(ReplaceError::WrongKind { kind: "tool", name, label, other: "middleware", method });
            }
        };
        if tool.info.name != name {
            let (name, reported) = (name.to_string(), tool.info.name);
            return Err(ReplaceError::Renamed { kind: "tool", name, label, reported });
        }
        let info = tool.info.clone();
        self.catalog().tools.replace(name, Arc::new(tool))?;
        Ok(info)
    }

    /// Replaces the middleware named `name` with `new` (a component file or
    /// a native middleware), atomically: chains that start afterwards use
    /// it, its attachments stay. `new` must report the same name.
    pub async fn replace_middleware(&self, name: &str, new: Replacement) -> Result<MiddlewareInfo, ReplaceError> {
        if !self.catalog().middleware_registry().has(name) {
            return Err(ReplaceError::UnknownMiddleware(name.to_string()));
        }
        let label = new.label();
        let (layer, info) = match new {
            Replacement::File(path) => {
                let bytes = self.catalog().read_component(&path, "middleware")?.bytes;
                let abs = std::path::absolute(&path).unwrap_or(path);
                let loaded = load_middleware_component(self.runtime(), &bytes, Origin::File(abs), &label).await?;
                let info = loaded.info.clone();
                (Layer::Component(Arc::new(loaded)), info)
            }
            Replacement::Middleware(native) => {
                check_name(native.name(), &label)?;
                let info = MiddlewareInfo::native(native.as_ref());
                (Layer::Native(native), info)
            }
            Replacement::Function(_) => {
                let (name, method) = (name.to_string(), "replace");
                return Err(ReplaceError::WrongKind { kind: "middleware", name, label, other: "tool", method });
            }
        };
        if info.name != name {
            let (name, reported) = (name.to_string(), info.name);
            return Err(ReplaceError::Renamed { kind: "middleware", name, label, reported });
        }
        self.catalog()
            .middleware_registry()
            .replace(layer, info)
            .ok_or_else(|| ReplaceError::UnknownMiddleware(name.to_string()))
    }

    /// Unloads the middleware `name`; returns whether it was loaded. Its
    /// attachments stay, so a tool it wraps fails its calls (naming it)
    /// until it is loaded again or detached ([`Toolhost::detach_all`]):
    /// a middleware may enforce a policy, and unloading it does not lift
    /// that policy silently. Calls already running finish with it.
    pub fn unload_middleware(&self, name: &str) -> bool {
        self.catalog().middleware_registry().remove(name)
    }
}
