//! The execution layer: making instances of loaded tools and running them.
//!
//! One trait pair for anything that can be checked and called
//! ([`callable::ToolKind`] makes a [`callable::Callable`]), implemented by
//! component tools ([`component`], instances in [`instance`]) and native
//! function tools ([`function`]) and the host's meta tools (`meta`:
//! `reset_tools`, `Skill`); a loaded tool ([`loaded`]) holds its kind
//! as a trait object. The middleware chain is [`middleware`]. What this
//! layer needs of the host that runs it is the [`host::ExecutionHost`]
//! trait, which the façade implements: nothing here names
//! [`crate::Toolhost`] (checked by `host/tests/layers.rs`).

pub mod callable;
pub mod component;
pub mod function;
pub(crate) mod host;
pub mod instance;
pub mod loaded;
pub(crate) mod meta;
pub mod middleware;
pub mod upstream;
