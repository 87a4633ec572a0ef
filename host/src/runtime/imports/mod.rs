//! The host side of the WIT imports, version-neutral: one function per
//! import over [`CallState`] and the host's own types, which every WIT
//! version's adapters ([`super::bindings`]) call. What a tool may do is
//! decided by its grants, checked at the top of every function (capability
//! checks live here and in the backend's scope, nowhere else).

pub mod backend;
pub mod chain;
pub(crate) mod log;
pub(crate) mod output;
pub(crate) mod state;

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
        Self(Fault::Tool(e.map_text(bounded_message)))
    }
}

impl From<BackendError> for HostError {
    fn from(e: BackendError) -> Self {
        ToolError::from(e).into()
    }
}

/// A resource handle the host cannot find is the host's bug: trap.
impl From<ResourceTableError> for HostError {
    fn from(e: ResourceTableError) -> Self {
        Self::trap(e)
    }
}

/// The most bytes of an error message handed to a guest. An error that
/// quotes what the guest passed (a path, a pattern, a key of megabytes)
/// is cut in the middle, keeping its start and its end (where the cause
/// and the fix are said), so that a guest cannot have the host copy its
/// own input back into its memory, or past it.
pub const MAX_ERROR_BYTES: usize = 4096;

/// `text` within [`MAX_ERROR_BYTES`]: when longer, its first half and last
/// quarter (on character boundaries) around a note of what was cut.
pub(crate) fn bounded_message(text: String) -> String {
    if text.len() <= MAX_ERROR_BYTES {
        return text;
    }
    let mut head = MAX_ERROR_BYTES / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - MAX_ERROR_BYTES / 4;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{} …({} bytes cut)… {}", &text[..head], tail - head, &text[tail..])
}

#[cfg(test)]
mod tests {
    use super::{MAX_ERROR_BYTES, bounded_message};

    #[test]
    fn long_error_messages_keep_their_start_and_end() {
        assert_eq!(bounded_message("short".into()), "short");
        let long = format!("the key 'é{}' is too big; raise limits.x", "k".repeat(1 << 20));
        let cut = bounded_message(long.clone());
        assert!(cut.len() < MAX_ERROR_BYTES + 64, "{}", cut.len());
        assert!(cut.starts_with("the key 'é") && cut.ends_with("' is too big; raise limits.x"), "{cut}");
        assert!(cut.contains(&format!("({} bytes cut)", long.len() - MAX_ERROR_BYTES / 2 - MAX_ERROR_BYTES / 4)));
    }
}
