//! What a component must be before anything runs it: a WebAssembly
//! component (not a core module) that exports the tool or the middleware
//! interface at a WIT version this host supports.

use wasmtime::component::Component;

use super::tool::LoadError;
use crate::runtime::bindings::{self, RouteError, WitVersion};

/// Checks the `\0asm` header and that the file is a component, not a core
/// module (shared by the tool and middleware loaders).
pub fn check_header(bytes: &[u8], label: &str) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(LoadError::NotWasm(label.into()));
    }
    // Core modules are version 1; components use the layer field (bytes 6-7).
    if bytes[4..8] == [1, 0, 0, 0] {
        return Err(LoadError::CoreModule(label.into()));
    }
    Ok(())
}

/// Which world a component is expected to implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentKind {
    /// `tool-component`: exports `toolhost:tool/tool`.
    Tool,
    /// `middleware-component`: exports `toolhost:tool/middleware`.
    Middleware,
}

/// Checks that a component exports the interface of `expected`, and routes
/// it to the bindings module of its `toolhost:tool` version (read from the
/// names of its exports and imports, which must agree). A tool where a
/// middleware is expected (or the reverse) gets an error saying how to load
/// it; an unknown version, one naming the versions this host accepts.
pub fn check_exports(component: &Component, label: &str, expected: ComponentKind) -> Result<WitVersion, LoadError> {
    let ty = component.component_type();
    let names: Vec<String> = ty.exports(component.engine()).map(|(name, _)| name.to_string()).collect();
    for name in &names {
        let kind = if name.starts_with("toolhost:tool/tool@") {
            ComponentKind::Tool
        } else if name.starts_with("toolhost:tool/middleware@") {
            ComponentKind::Middleware
        } else {
            continue;
        };
        match (kind, expected) {
            (ComponentKind::Middleware, ComponentKind::Tool) => return Err(LoadError::Middleware(label.into())),
            (ComponentKind::Tool, ComponentKind::Middleware) => return Err(LoadError::NotMiddleware(label.into())),
            _ => {}
        }
        let imports: Vec<String> = ty.imports(component.engine()).map(|(name, _)| name.to_string()).collect();
        let unsupported =
            |version: String| LoadError::UnsupportedVersion(label.into(), version, WitVersion::accepted());
        // The export comes first: its version is the one the error names.
        let all = std::iter::once(name.as_str()).chain(imports.iter().map(String::as_str));
        return match bindings::route(all) {
            Ok(Some(version)) => Ok(version),
            Ok(None) => Err(LoadError::WrongWorld(label.into(), names.join(", "))),
            Err(RouteError::Unsupported(version)) => Err(unsupported(version)),
            Err(RouteError::Mixed(first, other)) => Err(unsupported(format!("{first} mixed with {other}"))),
        };
    }
    let listed = if names.is_empty() { "nothing".to_string() } else { names.join(", ") };
    Err(match expected {
        ComponentKind::Tool => LoadError::WrongWorld(label.into(), listed),
        ComponentKind::Middleware => LoadError::MiddlewareWrongWorld(label.into(), listed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::bindings::ToolPre;
    use crate::runtime::{Runtime, RuntimeOptions};

    /// Real components: a built-in (built from `guest-tools/`) is routed
    /// from its own import and export names to `v0_1_0`, and its linked
    /// form is that module's; it is not a middleware.
    #[test]
    fn a_built_in_routes_to_v0_1_0() {
        let runtime = Runtime::new(&RuntimeOptions { disable_pooling: true, ..Default::default() }).unwrap();
        let builtin = super::super::builtin::named("Glob").expect("the Glob built-in");
        let (component, _) = runtime.compile(builtin.bytes, "built-in glob").unwrap();
        let version = check_exports(&component, "built-in glob", ComponentKind::Tool).unwrap();
        assert_eq!(version, WitVersion::V0_1_0);
        let linked = runtime.tool_linker().instantiate_pre(&component).unwrap();
        assert_eq!(ToolPre::new(version, linked).unwrap().version(), WitVersion::V0_1_0);
        let err = check_exports(&component, "built-in glob", ComponentKind::Middleware).unwrap_err();
        assert!(matches!(err, LoadError::NotMiddleware(_)), "{err}");
    }
}
