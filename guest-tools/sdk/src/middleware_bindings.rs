//! Raw bindings for the `middleware-component` world. The interfaces it
//! shares with tools (`types`, `log`, `output`, `backend`, `state`) are those
//! of [`crate::bindings`], so chunks and errors are the same Rust types in
//! tools and middleware. Middleware authors rarely need this module:
//! [`crate::middleware`] wraps it.

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "middleware-component",
    pub_export_macro: true,
    export_macro_name: "__export_middleware_component",
    default_bindings_module: "toolhost_sdk::middleware_bindings",
    with: {
        "toolhost:tool/types@0.1.0": crate::bindings::toolhost::tool::types,
        "toolhost:tool/log@0.1.0": crate::bindings::toolhost::tool::log,
        "toolhost:tool/output@0.1.0": crate::bindings::toolhost::tool::output,
        "toolhost:tool/backend@0.1.0": crate::bindings::toolhost::tool::backend,
        "toolhost:tool/state@0.1.0": crate::bindings::toolhost::tool::state,
    },
    generate_all,
});
