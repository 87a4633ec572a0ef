//! Capabilities: what a tool asked for, what the user allows, and the
//! intersection the host links. This is the one place grants are decided.
//!
//! Security defaults: a third-party tool gets nothing unless the user grants
//! it (`--grant NAME=fs-read` or `[grants.NAME]` in toolhost.toml); built-in
//! tools get the working directories read-write and the extra read-only
//! roots. Network access is never granted (no backend implements it yet).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::backend::FsScope;
use crate::backend::scope::Root;

/// The placeholder a tool writes for "the user's working directories".
pub const WORKDIRS: &str = "$WORKDIRS";

/// What a tool declares it needs (WIT `capabilities`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Declared {
    /// Roots to read under (absolute paths or `$WORKDIRS`).
    pub fs_read: Vec<String>,
    /// Roots to write under (implies read).
    pub fs_write: Vec<String>,
    /// Runs processes.
    pub process_exec: bool,
    /// Needs the network.
    pub network: bool,
    /// Uses the agent state (from the `state-injected` flag).
    pub state: bool,
}

/// What the user allows one tool (a `[grants.NAME]` table or `--grant`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Allow reading under these roots (`$WORKDIRS` allowed), or `true`
    /// via `fs-read` in a `--grant` flag for "whatever it declared".
    pub fs_read: Vec<String>,
    /// Allow writing under these roots.
    pub fs_write: Vec<String>,
    /// Allow running processes.
    pub process_exec: bool,
    /// Allow the agent state.
    pub state: bool,
}

impl Policy {
    /// The policy of a built-in tool: everything it declares, over the
    /// working directories (read-write) and the extra read-only roots.
    pub fn builtin() -> Self {
        Self {
            fs_read: vec![WORKDIRS.to_string()],
            fs_write: vec![WORKDIRS.to_string()],
            process_exec: true,
            state: true,
        }
    }

    /// Parses one `--grant` item: `fs-read`, `fs-read:/abs/path`,
    /// `fs-write`, `fs-write:/abs/path`, `exec`, `state`, or `all`.
    /// A bare `fs-read`/`fs-write` means the working directories.
    pub fn add_grant(&mut self, item: &str) -> Result<(), String> {
        let (kind, root) = match item.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (item, None),
        };
        let root = root.map(str::to_string).unwrap_or_else(|| WORKDIRS.to_string());
        if root != WORKDIRS && !root.starts_with('/') {
            return Err(format!("grant '{item}': the root must be an absolute path or {WORKDIRS}"));
        }
        match kind {
            "fs-read" => self.fs_read.push(root),
            "fs-write" => self.fs_write.push(root),
            "exec" | "process-exec" => self.process_exec = true,
            "state" => self.state = true,
            "all" => {
                self.fs_read.push(WORKDIRS.into());
                self.fs_write.push(WORKDIRS.into());
                self.process_exec = true;
                self.state = true;
            }
            other => {
                return Err(format!(
                    "unknown capability '{other}' in grant '{item}'; use fs-read[:/path], fs-write[:/path], exec, state or all"
                ));
            }
        }
        Ok(())
    }
}

/// What the host actually links for one tool: the intersection of
/// [`Declared`] and [`Policy`].
#[derive(Debug, Clone)]
pub struct Grants {
    /// Filesystem roots (a tool granted none has an empty scope).
    pub fs: FsScope,
    /// May run processes.
    pub process_exec: bool,
    /// May use the agent state.
    pub state: bool,
}

impl Grants {
    /// No capability at all.
    pub fn none(tool: &str) -> Self {
        Self { fs: FsScope::none(tool, grant_hint(tool)), process_exec: false, state: false }
    }

    /// Intersects what `declared` asks with what `policy` allows.
    /// `$WORKDIRS` expands to `working_dirs`; `read_roots` are extra
    /// read-only roots (given to built-ins). A declared root is granted
    /// when it lies under an allowed root (or vice versa: the narrower wins).
    pub fn intersect(
        tool: &str,
        declared: &Declared,
        policy: &Policy,
        working_dirs: &[PathBuf],
        read_roots: &[PathBuf],
        builtin: bool,
    ) -> Self {
        let expand = |roots: &[String], extra: &[PathBuf]| -> Vec<PathBuf> {
            let mut out: Vec<PathBuf> = Vec::new();
            for root in roots {
                if root == WORKDIRS {
                    out.extend(working_dirs.iter().cloned());
                    out.extend(extra.iter().cloned());
                } else {
                    out.push(PathBuf::from(root));
                }
            }
            out
        };
        let narrow = |asked: Vec<PathBuf>, allowed: &[PathBuf]| -> Vec<PathBuf> {
            let mut out = Vec::new();
            for a in &asked {
                for b in allowed {
                    if a.starts_with(b) {
                        out.push(a.clone());
                    } else if b.starts_with(a) {
                        out.push(b.clone());
                    }
                }
            }
            out
        };
        let write_asked = expand(&declared.fs_write, &[]);
        let write_allowed = expand(&policy.fs_write, &[]);
        let writes = narrow(write_asked.clone(), &write_allowed);
        let mut read_asked = expand(&declared.fs_read, read_roots);
        read_asked.extend(write_asked);
        let mut read_allowed = expand(&policy.fs_read, read_roots);
        read_allowed.extend(write_allowed);
        let reads = narrow(read_asked, &read_allowed);
        let mut roots: Vec<Root> = writes.into_iter().map(|path| Root { path, write: true }).collect();
        roots.extend(reads.into_iter().map(|path| Root { path, write: false }));
        Self {
            fs: FsScope::new(tool, roots, if builtin { builtin_hint() } else { grant_hint(tool) }),
            process_exec: declared.process_exec && policy.process_exec,
            state: declared.state && policy.state,
        }
    }

    /// The error text for a capability that was not granted.
    pub fn denied(&self, capability: &str) -> String {
        format!(
            "denied: {capability} is not granted to tool '{}'; grant it with --grant {}={} or in [grants.{}] of toolhost.toml",
            self.fs.tool(),
            self.fs.tool(),
            capability,
            self.fs.tool()
        )
    }
}

fn grant_hint(tool: &str) -> String {
    format!("grant it with --grant {tool}=fs-read:/path (or fs-write), or in [grants.{tool}] of toolhost.toml")
}

fn builtin_hint() -> String {
    "add the directory with --workdir (read-write) or --read-root (read-only), or in toolhost.toml".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> Declared {
        Declared { fs_read: vec![WORKDIRS.into()], fs_write: vec![], process_exec: true, network: false, state: false }
    }

    #[test]
    fn third_party_gets_nothing_by_default() {
        let g = Grants::intersect("X", &declared(), &Policy::default(), &["/w".into()], &[], false);
        assert!(g.fs.roots().is_empty());
        assert!(!g.process_exec);
    }

    #[test]
    fn grant_is_intersected_with_the_declaration() {
        let mut p = Policy::default();
        p.add_grant("fs-read").unwrap();
        p.add_grant("fs-write").unwrap();
        let g = Grants::intersect("X", &declared(), &p, &["/w".into()], &[], false);
        // Declared read only: the write grant does not widen it.
        assert_eq!(g.fs.roots().len(), 1);
        assert!(!g.fs.roots()[0].write);
        assert!(!g.process_exec, "exec declared but not granted");
    }

    #[test]
    fn narrower_root_wins() {
        let mut p = Policy::default();
        p.add_grant("fs-read:/w/sub").unwrap();
        let g = Grants::intersect("X", &declared(), &p, &["/w".into()], &[], false);
        assert_eq!(g.fs.roots()[0].path, PathBuf::from("/w/sub"));
    }

    #[test]
    fn bad_grants_are_refused_with_the_fix() {
        let mut p = Policy::default();
        assert!(p.add_grant("fs-read:relative").unwrap_err().contains("absolute"));
        assert!(p.add_grant("network").unwrap_err().contains("fs-read"));
    }
}
