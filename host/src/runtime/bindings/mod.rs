//! The WIT bindings, one module per released version of `toolhost:tool`,
//! and the routing of a component to the module of its version.
//!
//! Each version module (`v0_1_0`) has its own `bindgen!` over a frozen copy
//! of its WIT (`wit/v0.1.0`, never edited once released), says which
//! package versions it serves, and converts its generated types into the
//! host's own ([`crate::types`] and friends). Everything above `runtime/`
//! goes through the version-neutral handles here ([`ToolPre`],
//! [`ToolBindings`], [`MiddlewarePre`], [`MiddlewareBindings`]), which
//! dispatch on the version. Adding `0.2.0` is: a frozen `wit/v0.2.0`, a
//! module `v0_2_0`, a [`WitVersion`] variant and one arm per `match` below
//! (see `docs/plugin-authors.md`); the module's imports are served by the
//! version-neutral host (`runtime/imports`) through the adapters of
//! `adapters.rs`, one macro per interface, and only a changed function is
//! adapted by hand (`v0_2_0_draft`, test-only, shows one).
//!
//! Every import is `async` (host I/O never blocks a runtime thread) and
//! `trappable`: an import that can fail with a `tool-error` returns
//! `Result<T, HostError>`, whose error is either the guest's `tool-error`
//! or, asked for explicitly, a trap.

mod adapters;
pub mod v0_1_0;
#[cfg(feature = "wit-draft")]
pub mod v0_2_0_draft;

use wasmtime::Store;
use wasmtime::component::{InstancePre, Linker, Resource};

use crate::permission::{self, Behavior, Rule, ToolVerdict};
use crate::runtime::CallState;
use crate::runtime::imports::chain::NextHandler;
use crate::types::{MiddlewareDescription, ToolError, ToolMetadata};

/// The WIT package this host writes out (`toolhost:tool@0.1.0`), file name
/// and text, as built into the binary: `toolhost wit --out DIR` writes it
/// out so a plugin author can build against it without the repository.
/// It is the newest version this host speaks.
pub const WIT_PACKAGE: &[(&str, &str)] = v0_1_0::WIT_FILES;

/// A released version of the `toolhost:tool` package this host speaks,
/// i.e. a bindings module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WitVersion {
    /// `toolhost:tool@0.1.0` ([`v0_1_0`]).
    V0_1_0,
    /// `toolhost:tool@0.2.0-draft`, test-only (`v0_2_0_draft`, with the
    /// `wit-draft` feature).
    #[cfg(feature = "wit-draft")]
    V0_2_0Draft,
}

impl WitVersion {
    /// Every version this host speaks, oldest first.
    pub const ALL: &'static [WitVersion] = &[
        WitVersion::V0_1_0,
        #[cfg(feature = "wit-draft")]
        WitVersion::V0_2_0Draft,
    ];

    /// The package version its module was generated from (`0.1.0`).
    pub fn as_str(self) -> &'static str {
        match self {
            WitVersion::V0_1_0 => v0_1_0::VERSION,
            #[cfg(feature = "wit-draft")]
            WitVersion::V0_2_0Draft => v0_2_0_draft::VERSION,
        }
    }

    /// The module that serves components built against `toolhost:tool@version`.
    pub fn serving(version: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| match v {
            WitVersion::V0_1_0 => v0_1_0::accepts(version),
            #[cfg(feature = "wit-draft")]
            WitVersion::V0_2_0Draft => v0_2_0_draft::accepts(version),
        })
    }

    /// The released versions this host accepts, for messages (`0.1.0`). A
    /// test-only draft is served but never advertised: nobody should build
    /// against it.
    pub fn accepted() -> String {
        Self::ALL.iter().filter(|v| !v.is_draft()).map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
    }

    /// Whether this is a test-only draft rather than a release.
    pub fn is_draft(self) -> bool {
        match self {
            WitVersion::V0_1_0 => false,
            #[cfg(feature = "wit-draft")]
            WitVersion::V0_2_0Draft => true,
        }
    }

    /// Adds this version's host interfaces to a tool linker.
    pub(crate) fn add_tool_imports(self, linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
        match self {
            WitVersion::V0_1_0 => v0_1_0::add_tool_imports(linker),
            #[cfg(feature = "wit-draft")]
            WitVersion::V0_2_0Draft => v0_2_0_draft::add_tool_imports(linker),
        }
    }

    /// Adds this version's host interfaces to a middleware linker.
    pub(crate) fn add_middleware_imports(self, linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
        match self {
            WitVersion::V0_1_0 => v0_1_0::add_middleware_imports(linker),
            #[cfg(feature = "wit-draft")]
            WitVersion::V0_2_0Draft => v0_2_0_draft::add_middleware_imports(linker),
        }
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `toolhost:tool` package version in an import or export name
/// (`toolhost:tool/log@0.1.0` gives `0.1.0`); `None` for other packages.
pub fn package_version(name: &str) -> Option<&str> {
    name.strip_prefix("toolhost:tool/")?.split_once('@').map(|(_, version)| version)
}

/// Why a component cannot be routed to a bindings module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// It names a `toolhost:tool` version no module serves.
    Unsupported(String),
    /// Its imports and exports name versions served by different modules.
    Mixed(String, String),
}

/// Routes a component to the module of its `toolhost:tool` version, from
/// the names of its imports and exports: every name of the package must be
/// served by one and the same module. `Ok(None)` when it names the package
/// nowhere (the caller says which world it should implement).
pub fn route<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Option<WitVersion>, RouteError> {
    let mut routed: Option<(WitVersion, &str)> = None;
    for version in names.into_iter().filter_map(package_version) {
        let module = WitVersion::serving(version).ok_or_else(|| RouteError::Unsupported(version.to_string()))?;
        match routed {
            Some((first, first_name)) if first != module => {
                return Err(RouteError::Mixed(first_name.to_string(), version.to_string()));
            }
            Some(_) => {}
            None => routed = Some((module, version)),
        }
    }
    Ok(routed.map(|(module, _)| module))
}

/// A tool component linked and ready to instantiate, at its WIT version.
pub struct ToolPre(ToolPreInner);

enum ToolPreInner {
    V0_1_0(v0_1_0::ToolComponentPre<CallState>),
    #[cfg(feature = "wit-draft")]
    V0_2_0Draft(v0_2_0_draft::ToolComponentPre<CallState>),
}

impl ToolPre {
    /// Checks that the linked component exports the tool world of `version`.
    pub(crate) fn new(version: WitVersion, pre: InstancePre<CallState>) -> wasmtime::Result<Self> {
        Ok(match version {
            WitVersion::V0_1_0 => ToolPre(ToolPreInner::V0_1_0(v0_1_0::ToolComponentPre::new(pre)?)),
            #[cfg(feature = "wit-draft")]
            WitVersion::V0_2_0Draft => ToolPre(ToolPreInner::V0_2_0Draft(v0_2_0_draft::ToolComponentPre::new(pre)?)),
        })
    }

    /// The WIT version the component was built against.
    #[cfg(test)]
    pub fn version(&self) -> WitVersion {
        match self.0 {
            ToolPreInner::V0_1_0(_) => WitVersion::V0_1_0,
            #[cfg(feature = "wit-draft")]
            ToolPreInner::V0_2_0Draft(_) => WitVersion::V0_2_0Draft,
        }
    }

    /// The engine that compiled the component: its instances live in stores
    /// of that engine (the baseline one for a first use).
    pub fn engine(&self) -> &wasmtime::Engine {
        match &self.0 {
            ToolPreInner::V0_1_0(pre) => pre.engine(),
            #[cfg(feature = "wit-draft")]
            ToolPreInner::V0_2_0Draft(pre) => pre.engine(),
        }
    }

    /// Instantiates the component in `store`.
    pub async fn instantiate(&self, store: &mut Store<CallState>) -> wasmtime::Result<ToolBindings> {
        Ok(match &self.0 {
            ToolPreInner::V0_1_0(pre) => ToolBindings(ToolInner::V0_1_0(v0_1_0::Tool::instantiate(pre, store).await?)),
            #[cfg(feature = "wit-draft")]
            ToolPreInner::V0_2_0Draft(pre) => {
                ToolBindings(ToolInner::V0_2_0Draft(v0_2_0_draft::Tool::instantiate(pre, store).await?))
            }
        })
    }
}

/// The exports of a live tool instance, in host types.
pub struct ToolBindings(ToolInner);

enum ToolInner {
    V0_1_0(v0_1_0::Tool),
    #[cfg(feature = "wit-draft")]
    V0_2_0Draft(v0_2_0_draft::Tool),
}

impl ToolBindings {
    /// The tool's `metadata`.
    pub async fn metadata(&self, store: &mut Store<CallState>) -> wasmtime::Result<ToolMetadata> {
        match &self.0 {
            ToolInner::V0_1_0(tool) => tool.metadata(store).await,
            #[cfg(feature = "wit-draft")]
            ToolInner::V0_2_0Draft(tool) => tool.metadata(store).await,
        }
    }

    /// The tool's `call`: the outer error is a trap, the inner one the tool's.
    pub async fn call(&self, store: &mut Store<CallState>, input: &str) -> wasmtime::Result<Result<(), ToolError>> {
        match &self.0 {
            ToolInner::V0_1_0(tool) => tool.call(store, input).await,
            #[cfg(feature = "wit-draft")]
            ToolInner::V0_2_0Draft(tool) => tool.call(store, input).await,
        }
    }

    /// The tool's `check-read-only`.
    pub async fn check_read_only(&self, store: &mut Store<CallState>, input: &str) -> wasmtime::Result<bool> {
        match &self.0 {
            ToolInner::V0_1_0(tool) => tool.check_read_only(store, input).await,
            #[cfg(feature = "wit-draft")]
            ToolInner::V0_2_0Draft(tool) => tool.check_read_only(store, input).await,
        }
    }

    /// The tool's `check-permissions`.
    pub async fn check_permissions(
        &mut self,
        store: &mut Store<CallState>,
        input: &str,
        ctx: &permission::Context,
    ) -> wasmtime::Result<ToolVerdict> {
        match &mut self.0 {
            ToolInner::V0_1_0(tool) => tool.check_permissions(store, input, ctx).await,
            #[cfg(feature = "wit-draft")]
            ToolInner::V0_2_0Draft(tool) => tool.check_permissions(store, input, ctx).await,
        }
    }

    /// The tool's `match-rule`: the index of the first of `contents` that
    /// matches.
    pub async fn match_rule(
        &mut self,
        store: &mut Store<CallState>,
        behavior: Behavior,
        contents: &[String],
        input: &str,
        ctx: &permission::Context,
    ) -> wasmtime::Result<Option<u32>> {
        match &mut self.0 {
            ToolInner::V0_1_0(tool) => tool.match_rule(store, behavior, contents, input, ctx).await,
            #[cfg(feature = "wit-draft")]
            ToolInner::V0_2_0Draft(tool) => tool.match_rule(store, behavior, contents, input, ctx).await,
        }
    }

    /// The tool's `generate-suggestions`.
    pub async fn suggestions(
        &mut self,
        store: &mut Store<CallState>,
        input: &str,
        ctx: &permission::Context,
    ) -> wasmtime::Result<Vec<Rule>> {
        match &mut self.0 {
            ToolInner::V0_1_0(tool) => tool.suggestions(store, input, ctx).await,
            #[cfg(feature = "wit-draft")]
            ToolInner::V0_2_0Draft(tool) => tool.suggestions(store, input, ctx).await,
        }
    }
}

/// A middleware component linked and ready to instantiate, at its WIT version.
pub struct MiddlewarePre(MiddlewarePreInner);

enum MiddlewarePreInner {
    V0_1_0(v0_1_0::MiddlewareComponentPre<CallState>),
    #[cfg(feature = "wit-draft")]
    V0_2_0Draft(v0_2_0_draft::MiddlewareComponentPre<CallState>),
}

impl MiddlewarePre {
    /// Checks that the linked component exports the middleware world of `version`.
    pub(crate) fn new(version: WitVersion, pre: InstancePre<CallState>) -> wasmtime::Result<Self> {
        Ok(match version {
            WitVersion::V0_1_0 => MiddlewarePre(MiddlewarePreInner::V0_1_0(v0_1_0::MiddlewareComponentPre::new(pre)?)),
            #[cfg(feature = "wit-draft")]
            WitVersion::V0_2_0Draft => {
                MiddlewarePre(MiddlewarePreInner::V0_2_0Draft(v0_2_0_draft::MiddlewareComponentPre::new(pre)?))
            }
        })
    }

    /// Instantiates the component in `store`.
    pub async fn instantiate(&self, store: &mut Store<CallState>) -> wasmtime::Result<MiddlewareBindings> {
        Ok(match &self.0 {
            MiddlewarePreInner::V0_1_0(pre) => {
                MiddlewareBindings(MiddlewareInner::V0_1_0(v0_1_0::Middleware::instantiate(pre, store).await?))
            }
            #[cfg(feature = "wit-draft")]
            MiddlewarePreInner::V0_2_0Draft(pre) => MiddlewareBindings(MiddlewareInner::V0_2_0Draft(
                v0_2_0_draft::Middleware::instantiate(pre, store).await?,
            )),
        })
    }
}

/// The exports of a live middleware instance, in host types.
pub struct MiddlewareBindings(MiddlewareInner);

enum MiddlewareInner {
    V0_1_0(v0_1_0::Middleware),
    #[cfg(feature = "wit-draft")]
    V0_2_0Draft(v0_2_0_draft::Middleware),
}

impl MiddlewareBindings {
    /// The middleware's `info`.
    pub async fn info(&self, store: &mut Store<CallState>) -> wasmtime::Result<MiddlewareDescription> {
        match &self.0 {
            MiddlewareInner::V0_1_0(mw) => mw.info(store).await,
            #[cfg(feature = "wit-draft")]
            MiddlewareInner::V0_2_0Draft(mw) => mw.info(store).await,
        }
    }

    /// The middleware's `on-tool-call` for a call of `tool` with `input`;
    /// `next` runs the inner layers. The outer error is a trap.
    pub async fn on_tool_call(
        &self,
        store: &mut Store<CallState>,
        tool: ToolMetadata,
        input: &str,
        next: Resource<NextHandler>,
    ) -> wasmtime::Result<Result<(), ToolError>> {
        match &self.0 {
            MiddlewareInner::V0_1_0(mw) => mw.on_tool_call(store, tool, input, next).await,
            #[cfg(feature = "wit-draft")]
            MiddlewareInner::V0_2_0Draft(mw) => mw.on_tool_call(store, tool, input, next).await,
        }
    }
}

/// The WIT form of `ctx`, converted only when it differs from the last one
/// (`cache`).
fn cached_context<'a, W: for<'c> From<&'c permission::Context>>(
    cache: &'a mut Option<Box<(permission::Context, W)>>,
    ctx: &permission::Context,
) -> &'a W {
    let fresh = match cache.as_deref() {
        Some((last, _)) => !same_context(last, ctx),
        None => true,
    };
    if fresh {
        *cache = None;
    }
    &cache.get_or_insert_with(|| Box::new((ctx.clone(), ctx.into()))).1
}

/// Whether two contexts convert to the same WIT record: equal, with the
/// tool configurations' keys in the same order too (their JSON text is
/// what the guest gets).
fn same_context(a: &permission::Context, b: &permission::Context) -> bool {
    a.mode == b.mode
        && a.working_dirs == b.working_dirs
        && a.cwd == b.cwd
        && a.home == b.home
        && same_json(&a.tool_config, &b.tool_config)
}

/// Equality of JSON values that also requires object keys in the same
/// order (`serde_json`'s `==` ignores the order).
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b)),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_route_to_the_module_of_their_version() {
        let names = ["wasi:io/streams@0.2.6", "toolhost:tool/log@0.1.0", "toolhost:tool/tool@0.1.0"];
        assert_eq!(route(names), Ok(Some(WitVersion::V0_1_0)));
        assert_eq!(route(["wasi:cli/environment@0.2.0"]), Ok(None));
        assert_eq!(
            route(["toolhost:tool/log@0.1.0", "toolhost:tool/tool@0.9.0"]),
            Err(RouteError::Unsupported("0.9.0".into()))
        );
        assert_eq!(package_version("toolhost:tool/backend@0.1.0"), Some("0.1.0"));
        assert_eq!(package_version("other:tool/backend@0.1.0"), None);
        // A test-only draft is served (with the feature) but not advertised.
        assert_eq!(WitVersion::accepted(), "0.1.0");
        #[cfg(feature = "wit-draft")]
        assert_eq!(route(["toolhost:tool/log@0.2.0-draft"]), Ok(Some(WitVersion::V0_2_0Draft)));
    }
}
