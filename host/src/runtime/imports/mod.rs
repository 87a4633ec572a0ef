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
use wasmtime::component::{Linker, ResourceTableError};

use super::CallState;
use super::bindings::WitVersion;
use crate::backend::BackendError;
use crate::types::ToolError;

/// The linker for the `tool-component` world: WASI 0.2 (with an empty
/// context: no files, environment, network or stdin) and our interfaces.
pub fn tool_linker(engine: &Engine) -> Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    for version in WitVersion::ALL {
        version.add_tool_imports(&mut linker)?;
    }
    Ok(linker)
}

/// The linker for the `middleware-component` world: the same WASI context
/// and interfaces as a tool, plus `chain` (how a middleware runs the inner
/// layers of a call).
pub fn middleware_linker(engine: &Engine) -> Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    for version in WitVersion::ALL {
        version.add_middleware_imports(&mut linker)?;
    }
    Ok(linker)
}

/// The error of a host import that can fail with a `tool-error` (bindgen's
/// `trappable_error_type`): either a [`ToolError`] the guest receives as
/// its `err`, or a trap, which aborts the guest. A trap must be asked for
/// ([`HostError::trap`], or `?` on a resource-table error, which is a host
/// bug); every other error the guest sees.
#[derive(Debug)]
pub struct HostError(Fault);

#[derive(Debug)]
enum Fault {
    Tool(ToolError),
    Trap(wasmtime::Error),
}

impl HostError {
    /// An error that traps the guest instead of being returned to it.
    pub fn trap(error: impl Into<wasmtime::Error>) -> Self {
        Self(Fault::Trap(error.into()))
    }

    /// The tool error to hand to the guest, or the trap.
    pub fn into_tool_error(self) -> wasmtime::Result<ToolError> {
        match self.0 {
            Fault::Tool(e) => Ok(e),
            Fault::Trap(e) => Err(e),
        }
    }
}

impl From<ToolError> for HostError {
    fn from(e: ToolError) -> Self {
        Self(Fault::Tool(e))
    }
}

impl From<BackendError> for HostError {
    fn from(e: BackendError) -> Self {
        Self(Fault::Tool(e.into()))
    }
}

/// A resource handle the host cannot find is the host's bug: trap.
impl From<ResourceTableError> for HostError {
    fn from(e: ResourceTableError) -> Self {
        Self::trap(e)
    }
}
