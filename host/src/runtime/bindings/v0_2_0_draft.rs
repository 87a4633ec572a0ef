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

// The generated worlds, and the linking of their imports.
super::adapters::worlds!("../wit/draft/v0.2.0");

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
