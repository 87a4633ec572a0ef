//! The catalog: what a tool is, without running it.
//!
//! A tool's metadata and its validation ([`tool`]), the one name rule
//! shared by tools and middleware ([`name`]), the component checks every
//! loader makes before compiling anything ([`component`]), the embedded
//! built-in table ([`builtin`]), function-tool definitions ([`function`]), tool groups ([`group`]), skills ([`skill`])
//! and the registry of tools by name ([`registry`]).
//!
//! The catalog is below the execution layer: nothing here runs a tool or
//! names [`crate::execution`] or [`crate::Toolhost`] (checked by
//! `host/tests/layers.rs`).

pub mod builtin;
pub mod component;
pub mod function;
pub mod group;
pub mod name;
pub(crate) mod registry;
pub mod skill;
pub mod tool;
pub mod upstream;
