//! Host bindings generated from `wit/v0.1.0`, one module per world.
//!
//! Every import is `async` (host I/O never blocks a runtime thread) and
//! `trappable` (a broken host invariant traps the guest instead of panicking
//! the host). When a new WIT version is released, it gets a sibling module
//! (`v0_2_0`) and the loader picks the module by the component's exports.

/// The WIT package this host speaks (`toolhost:tool@0.1.0`), file name and
/// text, as built into the binary: `toolhost wit --out DIR` writes it out so
/// a plugin author can build against it without copying the repository.
pub const WIT_PACKAGE: &[(&str, &str)] = &[
    ("host.wit", include_str!("../../../wit/v0.1.0/host.wit")),
    ("types.wit", include_str!("../../../wit/v0.1.0/types.wit")),
    ("worlds.wit", include_str!("../../../wit/v0.1.0/worlds.wit")),
];

/// The `tool-component` world: what a tool imports and exports. (Generated:
/// the WIT files carry the documentation.)
#[allow(missing_docs)]
pub mod tool {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "tool-component",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "toolhost:tool/backend.process": crate::runtime::imports::backend::ProcessHandle,
        },
    });
}

/// The `middleware-component` world. Shares every interface with [`tool`].
#[allow(missing_docs)]
pub mod middleware {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "middleware-component",
        imports: { default: async | trappable },
        exports: { default: async },
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

pub use tool::toolhost::tool::types as wit_types;
