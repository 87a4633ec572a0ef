//! toolhost-core: what toolhost allows, decided without running anything.
//!
//! The pure half of the toolhost library: the permission engine and its
//! rules ([`permission`]), `toolhost.toml` ([`settings`]) over the plain
//! data it sets ([`limits`], [`audit`], [`capability`]), toolhost's own
//! files ([`protected`]) and how they are read ([`own_file`]), the lock
//! file ([`lockfile`]), a tool's input
//! schema ([`input_schema`]) and the wire format of `toolhost check
//! --batch` ([`check_batch`]).
//!
//! The `toolhost` crate re-exports all of it at the paths it always had:
//! `toolhost::{permission, settings, protected, lockfile, escape, utc}` are
//! these modules; `toolhost::capability::Policy`, `toolhost::engine::Limits`,
//! `toolhost::audit::AuditSettings`, `toolhost::tool::compile_input_schema`
//! and the items of `toolhost::check_batch` that make the wire format
//! (`CheckRequest`, `decision_json`, …) are items of this crate.
//!
//! Nothing here links wasmtime, starts a thread or runs a tool: this is the
//! crate that reads hostile text (rules, settings, batch lines, schemas,
//! inputs), kept small enough to fuzz on its own (`fuzz/`). Its modules
//! keep their layers in the library's map (`docs/architecture.md`;
//! `host/tests/layers.rs` checks this crate's files as well).

#![warn(missing_docs)]

pub mod audit;
pub mod capability;
pub mod check_batch;
pub mod escape;
pub mod input_schema;
pub mod limits;
pub mod lockfile;
pub mod own_file;
pub mod path;
pub mod permission;
pub mod protected;
pub mod registry;
pub mod replica;
pub mod settings;
pub mod state_store;
pub mod telemetry;
pub mod utc;
