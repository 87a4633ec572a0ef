//! The host side of the WIT imports. Each interface is implemented once on
//! [`CallState`]; what a tool may do is decided by its grants, checked at the
//! top of every function (capability checks live here and in the backend's
//! scope, nowhere else).

pub mod backend;
pub mod chain;
mod log;
mod output;
mod state;

use anyhow::Result;
use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use super::CallState;
use super::bindings;

/// The linker for the `tool-component` world: WASI 0.2 (with an empty
/// context: no files, environment, network or stdin) and our interfaces.
pub fn tool_linker(engine: &Engine) -> Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    bindings::tool::ToolComponent::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;
    Ok(linker)
}

/// The linker for the `middleware-component` world: the same WASI context
/// and interfaces as a tool, plus `chain` (how a middleware runs the inner
/// layers of a call).
pub fn middleware_linker(engine: &Engine) -> Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    bindings::middleware::MiddlewareComponent::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;
    Ok(linker)
}

impl bindings::wit_types::Host for CallState {}
