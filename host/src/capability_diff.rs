//! The capability diff between two declarations of one plugin: what a new
//! version asks for that the approved one did not cover. Grants belong to a
//! plugin's name *and* the capabilities it declared when they were given,
//! so a reload that declares more is held back until the user approves
//! the diff (see `docs/security.md`, "Hot reload").
//!
//! Coverage is lexical and never resolves a path: a read root is covered by
//! an approved read or write root it lies under, a write root only by an
//! approved write root, `$WORKDIRS` only by `$WORKDIRS` (it is not a path
//! until the host expands it), and each flag (process execution, network,
//! state) by the same flag. Roots with `.` or `..` components cover
//! nothing and are covered by nothing (the grant refuses them anyway).

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::capability::{Declared, WORKDIRS, check_root};
use crate::escape::escaped;

/// One capability a declaration holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "capability", content = "root")]
pub enum Capability {
    /// Reading under a root.
    FsRead(String),
    /// Writing (and reading) under a root.
    FsWrite(String),
    /// Running processes.
    ProcessExec,
    /// The network.
    Network,
    /// The agent state.
    State,
}

impl Capability {
    /// The `--grant NAME=…` item that grants it (`None`: nothing grants it),
    /// its root escaped for showing.
    pub fn grant_item(&self) -> Option<String> {
        match self {
            Capability::FsRead(root) if root == WORKDIRS => Some("fs-read".into()),
            Capability::FsWrite(root) if root == WORKDIRS => Some("fs-write".into()),
            Capability::FsRead(root) => Some(format!("fs-read:{}", escaped(root, false))),
            Capability::FsWrite(root) => Some(format!("fs-write:{}", escaped(root, false))),
            Capability::ProcessExec => Some("exec".into()),
            Capability::State => Some("state".into()),
            Capability::Network => None,
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A root is the guest's text: shown escaped, so it cannot fake
            // a line of the diff or drive the terminal.
            Capability::FsRead(root) => write!(f, "read {}", escaped(root, false)),
            Capability::FsWrite(root) => write!(f, "write {}", escaped(root, false)),
            Capability::ProcessExec => f.write_str("run processes"),
            Capability::Network => f.write_str("network"),
            Capability::State => f.write_str("agent state"),
        }
    }
}

/// Every capability of a declaration, in a stable order.
pub fn capabilities(declared: &Declared) -> Vec<Capability> {
    let mut out: Vec<Capability> = declared.fs_read.iter().cloned().map(Capability::FsRead).collect();
    out.extend(declared.fs_write.iter().cloned().map(Capability::FsWrite));
    if declared.process_exec {
        out.push(Capability::ProcessExec);
    }
    if declared.network {
        out.push(Capability::Network);
    }
    if declared.state {
        out.push(Capability::State);
    }
    out
}

/// What changed between an approved declaration and a new one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityDiff {
    /// What the new one asks for that the approved one does not cover.
    pub added: Vec<Capability>,
    /// What the approved one had that the new one no longer asks for.
    pub removed: Vec<Capability>,
}

impl CapabilityDiff {
    /// The diff from `old` (approved) to `new`.
    pub fn between(old: &Declared, new: &Declared) -> Self {
        let (old_caps, new_caps) = (capabilities(old), capabilities(new));
        let uncovered = |from: &[Capability], by: &[Capability]| -> Vec<Capability> {
            from.iter().filter(|c| !by.iter().any(|b| covers(b, c))).cloned().collect()
        };
        Self { added: uncovered(&new_caps, &old_caps), removed: uncovered(&old_caps, &new_caps) }
    }

    /// Whether the new declaration asks for more than the approved one.
    pub fn asks_for_more(&self) -> bool {
        !self.added.is_empty()
    }

    /// The `--grant` flags that grant what was added to `name` (network
    /// has none: no backend grants it).
    pub fn grant_flags(&self, name: &str) -> Vec<String> {
        self.added.iter().filter_map(Capability::grant_item).map(|item| format!("--grant {name}={item}")).collect()
    }
}

impl fmt::Display for CapabilityDiff {
    /// `+ write /` and `- read /x` lines; `no change` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.added.is_empty() && self.removed.is_empty() {
            return f.write_str("  no change in capabilities");
        }
        let lines: Vec<String> = (self.added.iter().map(|c| format!("  + {c}")))
            .chain(self.removed.iter().map(|c| format!("  - {c}")))
            .collect();
        f.write_str(&lines.join("\n"))
    }
}

/// Whether holding `have` covers `want`.
fn covers(have: &Capability, want: &Capability) -> bool {
    match (have, want) {
        (Capability::FsRead(h) | Capability::FsWrite(h), Capability::FsRead(w)) => under(w, h),
        (Capability::FsWrite(h), Capability::FsWrite(w)) => under(w, h),
        (a, b) => a == b && !matches!(a, Capability::FsRead(_) | Capability::FsWrite(_)),
    }
}

/// Whether the root `inner` lies under (or is) the root `outer`.
fn under(inner: &str, outer: &str) -> bool {
    if inner == WORKDIRS || outer == WORKDIRS {
        return inner == outer;
    }
    check_root(inner).is_ok() && check_root(outer).is_ok() && Path::new(inner).starts_with(outer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(read: &[&str], write: &[&str], exec: bool, state: bool) -> Declared {
        Declared {
            fs_read: read.iter().map(|s| s.to_string()).collect(),
            fs_write: write.iter().map(|s| s.to_string()).collect(),
            process_exec: exec,
            network: false,
            state,
        }
    }

    #[test]
    fn less_or_the_same_asks_for_nothing_more() {
        let old = declared(&["/data"], &["$WORKDIRS"], true, true);
        for new in [
            declared(&[], &[], false, false),
            declared(&["/data/sub", "$WORKDIRS"], &["$WORKDIRS"], true, false),
            old.clone(),
        ] {
            let diff = CapabilityDiff::between(&old, &new);
            assert!(!diff.asks_for_more(), "{new:?}: {diff}");
        }
        let diff = CapabilityDiff::between(&old, &declared(&[], &[], false, false));
        assert_eq!(diff.removed.len(), 4, "{diff}");
    }

    #[test]
    fn a_new_path_exec_or_state_is_more() {
        let old = declared(&["/data"], &["/data/out"], false, false);
        let cases = [
            (declared(&["/etc"], &[], false, false), Capability::FsRead("/etc".into())),
            (declared(&[], &["/data"], false, false), Capability::FsWrite("/data".into())),
            (declared(&["/data/../etc"], &[], false, false), Capability::FsRead("/data/../etc".into())),
            (declared(&["/database"], &[], false, false), Capability::FsRead("/database".into())),
            (declared(&["$WORKDIRS"], &[], false, false), Capability::FsRead("$WORKDIRS".into())),
            (declared(&[], &[], true, false), Capability::ProcessExec),
            (declared(&[], &[], false, true), Capability::State),
        ];
        for (new, added) in cases {
            let diff = CapabilityDiff::between(&old, &new);
            assert_eq!(diff.added, vec![added.clone()], "{new:?}");
            assert!(diff.to_string().contains(&format!("+ {added}")), "{diff}");
        }
    }

    #[test]
    fn a_root_cannot_fake_a_line_of_the_diff() {
        let new = declared(&["/x\n  - write /\x1b[2J"], &[], false, false);
        let shown = CapabilityDiff::between(&Declared::default(), &new).to_string();
        assert_eq!(shown.lines().count(), 1, "{shown}");
        assert!(!shown.contains('\x1b'), "{shown}");
    }

    #[test]
    fn the_grant_flags_name_what_was_added() {
        let diff = CapabilityDiff::between(&Declared::default(), &declared(&["/etc"], &["$WORKDIRS"], true, false));
        assert_eq!(
            diff.grant_flags("Swap"),
            ["--grant Swap=fs-read:/etc", "--grant Swap=fs-write", "--grant Swap=exec"]
        );
    }
}
