//! `toolhost:tool@0.1.0`: the bindings generated from the frozen WIT in
//! `wit/v0.1.0`, its imports served by the version-neutral host through the
//! adapters of [`super::adapters`], and its exports called for the host.
//! Nothing outside `runtime/bindings` names a type of this module.
//!
//! This module never changes once released: a later WIT version is a new
//! frozen folder and a sibling module converting into the same host types.

/// The package version this module was generated from.
pub const VERSION: &str = "0.1.0";

/// The WIT files of this version (name and text), as `toolhost wit` writes them.
pub const WIT_FILES: &[(&str, &str)] = &[
    ("host.wit", include_str!("../../../../wit/v0.1.0/host.wit")),
    ("types.wit", include_str!("../../../../wit/v0.1.0/types.wit")),
    ("worlds.wit", include_str!("../../../../wit/v0.1.0/worlds.wit")),
];

/// Whether a component built against `toolhost:tool@version` is served by
/// this module: `0.1.P` for every patch level `P` up to this module's own
/// (0), since a patch release only adds to the WIT, and a component built
/// against a later patch may use what this host does not have.
// The comparison is the rule for every patch level; at patch 0 it is `==`.
#[allow(clippy::absurd_extreme_comparisons)]
pub fn accepts(version: &str) -> bool {
    const PATCH: u32 = 0;
    let Some(patch) = version.strip_prefix("0.1.") else { return false };
    !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()) && patch.parse::<u32>().is_ok_and(|p| p <= PATCH)
}

// The generated worlds, and the linking of their imports.
super::adapters::worlds!("../wit/v0.1.0");

// Every interface as 0.1.0 wrote it, served by the version-neutral host.
super::adapters::types!(wit);
super::adapters::log!(log);
super::adapters::output!(output);
super::adapters::backend!(backend);
super::adapters::state!(state);
super::adapters::chain!(chain);

// Its exports, called for the host.
super::adapters::exports!(tool, middleware, wit);

#[cfg(test)]
mod tests {
    use super::accepts;

    #[test]
    fn accepts_its_own_version_and_no_later_patch_or_other_minor() {
        assert!(accepts("0.1.0"));
        for refused in ["0.1.1", "0.2.0", "0.9.0", "1.0.0", "0.1", "0.1.0-rc1", "0.1.+0", "0.1.x", ""] {
            assert!(!accepts(refused), "{refused}");
        }
    }
}
