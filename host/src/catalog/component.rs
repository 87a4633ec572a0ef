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
    let exports: Vec<String> = ty.exports(component.engine()).map(|(name, _)| name.to_string()).collect();
    let imports: Vec<String> = ty.imports(component.engine()).map(|(name, _)| name.to_string()).collect();
    check_world(&exports, &imports, label, expected)
}

/// [`check_exports`] before compiling: the same check on the names of the
/// component's own imports and exports, read from its bytes without
/// compiling or validating anything (nested modules are skipped whole), so
/// that a plugin of the wrong world or version is refused at once, not
/// after a compile that may take half a minute. Bytes that do not parse
/// are a [`LoadError::Compile`] (a file still being written looks so).
pub fn check_world_of(bytes: &[u8], label: &str, expected: ComponentKind) -> Result<WitVersion, LoadError> {
    check_header(bytes, label)?;
    let (exports, imports) = top_level_names(bytes).map_err(|e| LoadError::Compile(label.into(), e))?;
    check_world(&exports, &imports, label, expected)
}

/// The names of a component's top-level exports and imports.
fn top_level_names(bytes: &[u8]) -> Result<(Vec<String>, Vec<String>), String> {
    let err = |e: wasmparser::BinaryReaderError| e.to_string();
    use wasmparser::{Chunk, Parser, Payload};
    let (mut exports, mut imports) = (Vec::new(), Vec::new());
    let mut parser = Parser::new(0);
    let mut at = 0;
    loop {
        let rest = &bytes[at..];
        let Chunk::Parsed { consumed, payload } = parser.parse(rest, true).map_err(err)? else {
            // Only possible with `eof = false`.
            unreachable!("a parser given the whole input asked for more")
        };
        at += consumed;
        match payload {
            Payload::ComponentExportSection(reader) => {
                for export in reader {
                    exports.push(export.map_err(err)?.name.name.to_string());
                }
            }
            Payload::ComponentImportSection(reader) => {
                for import in reader {
                    imports.push(import.map_err(err)?.name.name.to_string());
                }
            }
            // The outer parser goes on after the nested item; its bytes
            // are skipped, not read.
            Payload::ModuleSection { unchecked_range, .. } | Payload::ComponentSection { unchecked_range, .. } => {
                if unchecked_range.end > bytes.len() {
                    return Err(format!(
                        "unexpected end of the file at byte {} (a nested module ends at byte {}): it is cut short, or still being written",
                        bytes.len(),
                        unchecked_range.end
                    ));
                }
                at = unchecked_range.end;
            }
            Payload::End(_) => return Ok((exports, imports)),
            _ => {}
        }
    }
}

/// The check of [`check_exports`] over the names of the exports and imports.
fn check_world(
    exports: &[String],
    imports: &[String],
    label: &str,
    expected: ComponentKind,
) -> Result<WitVersion, LoadError> {
    for name in exports {
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
        let unsupported =
            |version: String| LoadError::UnsupportedVersion(label.into(), version, WitVersion::accepted());
        // The export comes first: its version is the one the error names.
        let all = std::iter::once(name.as_str()).chain(imports.iter().map(String::as_str));
        return match bindings::route(all) {
            Ok(Some(version)) => Ok(version),
            Ok(None) => Err(LoadError::WrongWorld(label.into(), exports.join(", "))),
            Err(RouteError::Unsupported(version)) => Err(unsupported(version)),
            Err(RouteError::Mixed(first, other)) => Err(unsupported(format!("{first} mixed with {other}"))),
        };
    }
    let listed = if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") };
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

    /// The names read from the bytes are the ones wasmtime reports for the
    /// compiled component (two built-ins: compiling all would take long);
    /// the check before compiling routes and refuses as the check after it
    /// does.
    #[test]
    fn names_read_before_compiling_are_the_compiled_ones() {
        let runtime = Runtime::new(&RuntimeOptions { disable_pooling: true, ..Default::default() }).unwrap();
        for name in ["Glob", "TaskList"] {
            let builtin = super::super::builtin::named(name).expect("a built-in");
            let (component, _) = runtime.compile(builtin.bytes, builtin.name).unwrap();
            let ty = component.component_type();
            let exports: Vec<String> = ty.exports(component.engine()).map(|(n, _)| n.to_string()).collect();
            let imports: Vec<String> = ty.imports(component.engine()).map(|(n, _)| n.to_string()).collect();
            assert_eq!(top_level_names(builtin.bytes).unwrap(), (exports, imports), "{}", builtin.name);
            assert_eq!(check_world_of(builtin.bytes, builtin.name, ComponentKind::Tool).unwrap(), WitVersion::V0_1_0);
            let err = check_world_of(builtin.bytes, builtin.name, ComponentKind::Middleware).unwrap_err();
            assert!(matches!(err, LoadError::NotMiddleware(_)), "{err}");
        }
        // Cut short: a parse error, reported as a compile error (a file still being written).
        let bytes = super::super::builtin::BUILTINS[0].bytes;
        let err = check_world_of(&bytes[..bytes.len() / 2], "half", ComponentKind::Tool).unwrap_err();
        assert!(matches!(err, LoadError::Compile(..)), "{err}");
    }
}
