//! `toolhost:tool@0.2.0-draft`: a test-only draft of the next version
//! (`wit/draft/v0.2.0`), served only with the `wit-draft` feature. It shows
//! what a new version costs: this module, a [`super::WitVersion`] variant
//! and an arm per `match` in [`super`]. Every interface it keeps as 0.1.0
//! wrote it is served by the same adapters as 0.1.0; the one function it
//! changes, `log.log` (which gains `fields`), is adapted by hand below,
//! over the same version-neutral host function.

use crate::runtime::CallState;

/// The package version this module was generated from.
pub const VERSION: &str = "0.2.0-draft";

/// Whether a component built against `toolhost:tool@version` is served by
/// this module: only the draft itself (a draft promises nothing to a later
/// one).
pub fn accepts(version: &str) -> bool {
    version == VERSION
}

/// The `tool-component` world. (Generated: the WIT files carry the documentation.)
#[allow(missing_docs)]
mod tool {
    wasmtime::component::bindgen!({
        path: "../wit/draft/v0.2.0",
        world: "tool-component",
        imports: { default: async | trappable },
        exports: { default: async },
        trappable_error_type: { "toolhost:tool/types.tool-error" => crate::runtime::imports::HostError },
        with: {
            "toolhost:tool/backend.process": crate::runtime::imports::backend::ProcessHandle,
        },
    });
}

/// The `middleware-component` world; shares every interface with `tool`.
#[allow(missing_docs)]
mod middleware {
    wasmtime::component::bindgen!({
        path: "../wit/draft/v0.2.0",
        world: "middleware-component",
        imports: { default: async | trappable },
        exports: { default: async },
        trappable_error_type: { "toolhost:tool/types.tool-error" => crate::runtime::imports::HostError },
        with: {
            "toolhost:tool/types": super::tool::toolhost::tool::types,
            "toolhost:tool/log": super::tool::toolhost::tool::log,
            "toolhost:tool/output": super::tool::toolhost::tool::output,
            "toolhost:tool/backend": super::tool::toolhost::tool::backend,
            "toolhost:tool/state": super::tool::toolhost::tool::state,
            "toolhost:tool/chain.inner-call": crate::runtime::imports::chain::InnerCall,
            "toolhost:tool/chain.next-handler": crate::runtime::imports::chain::NextHandler,
        },
    });
}

pub(crate) use middleware::MiddlewareComponentPre;
use middleware::toolhost::tool::chain;
pub(crate) use tool::ToolComponentPre;
use tool::toolhost::tool::types as wit;
use tool::toolhost::tool::{backend, log, output, state};

/// Adds this version's interfaces (WASI excluded) to a tool linker.
pub(crate) fn add_tool_imports(linker: &mut wasmtime::component::Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    tool::ToolComponent::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
}

/// Adds this version's interfaces (WASI excluded) to a middleware linker.
pub(crate) fn add_middleware_imports(linker: &mut wasmtime::component::Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    middleware::MiddlewareComponent::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
}

// The interfaces 0.1.0 wrote the same way: its adapters.
super::adapters::types!(wit);
super::adapters::output!(output);
super::adapters::backend!(backend);
super::adapters::state!(state);
super::adapters::chain!(chain);
super::adapters::log_level!(log);

/// The one change: `log` takes fields.
impl log::Host for CallState {
    async fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) -> wasmtime::Result<()> {
        crate::runtime::imports::log::log(self, level.into(), &message, &fields);
        Ok(())
    }
}

// Its exports, called for the host.
super::adapters::exports!(tool, middleware, wit);

#[cfg(test)]
mod tests {
    use super::accepts;

    #[test]
    fn accepts_only_the_draft() {
        assert!(accepts("0.2.0-draft"));
        for refused in ["0.2.0", "0.2.0-draft.1", "0.1.0", ""] {
            assert!(!accepts(refused), "{refused}");
        }
    }
}
