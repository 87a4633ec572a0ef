//! Raw bindings generated from `wit/v0.1.0`. Tool authors rarely need them:
//! the crate root re-exports the types and [`crate::Tool`] wraps the rest.

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "tool-component",
    pub_export_macro: true,
    export_macro_name: "__export_tool_component",
    default_bindings_module: "toolhost_sdk::bindings",
    generate_all,
});
