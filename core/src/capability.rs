//! What a tool declares it needs and what the user grants it, as data:
//! [`Declared`] (WIT `capabilities`), [`Policy`] (`[grants.NAME]`,
//! `--grant`) and the rule every root obeys ([`check_root`]). The grants an
//! instance gets, their intersection, are the host's (`toolhost::capability`).
//!
//! **Roots.** A root, declared by a tool or granted by the user, is
//! `$WORKDIRS` or an absolute path without `.` or `..` components; anything
//! else is refused with an error naming it.

use serde::{Deserialize, Serialize};

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
    /// Extra environment variables for the processes the tool spawns:
    /// `"VAR"` passes toolhost's own value on (when set), `"VAR=value"`
    /// sets one. Read for built-in tools too (the only key of a built-in's
    /// `[grants.NAME]` that is).
    pub env: Vec<String>,
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
            env: Vec::new(),
        }
    }

    /// Parses one `--grant` item: `fs-read`, `fs-read:/abs/path`,
    /// `fs-write`, `fs-write:/abs/path`, `exec`, `state`, `env:VAR`,
    /// `env:VAR=value`, or `all`. A bare `fs-read`/`fs-write` means the
    /// working directories.
    pub fn add_grant(&mut self, item: &str) -> Result<(), String> {
        let (kind, root) = match item.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (item, None),
        };
        if kind == "env" {
            let entry = root.unwrap_or_default();
            check_env_entry(entry).map_err(|e| format!("grant '{item}': {e}"))?;
            self.env.push(entry.to_string());
            return Ok(());
        }
        let root = root.map(str::to_string).unwrap_or_else(|| WORKDIRS.to_string());
        check_root(&root).map_err(|e| format!("grant '{item}': {e}"))?;
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
                    "unknown capability '{other}' in grant '{item}'; use fs-read[:/path], fs-write[:/path], exec, state, env:VAR[=value] or all"
                ));
            }
        }
        Ok(())
    }

    /// Checks a policy from `[grants.NAME]`: every root absolute (or
    /// `$WORKDIRS`) and normal, every `env` entry well formed.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        for root in self.fs_read.iter().chain(&self.fs_write) {
            check_root(root).map_err(|e| format!("[grants.{name}]: {e}"))?;
        }
        for entry in &self.env {
            check_env_entry(entry).map_err(|e| format!("[grants.{name}] env: {e}"))?;
        }
        Ok(())
    }
}

/// Checks that `root` is `$WORKDIRS` or an absolute path with no `.` or
/// `..` component (so that what it names is what it says).
pub fn check_root(root: &str) -> Result<(), String> {
    if root == WORKDIRS {
        return Ok(());
    }
    if !root.starts_with('/') {
        return Err(format!("the root '{root}' must be an absolute path or exactly {WORKDIRS}"));
    }
    if root.split('/').any(|part| part == "." || part == "..") {
        return Err(format!(
            "the root '{root}' is not normal: it contains a '.' or '..' component; write the directory it means without them"
        ));
    }
    Ok(())
}

/// Checks one `env` entry: `VAR` or `VAR=value`, with a non-empty name
/// and no NUL byte.
fn check_env_entry(entry: &str) -> Result<(), String> {
    let name = entry.split_once('=').map_or(entry, |(n, _)| n);
    if name.is_empty() || entry.contains('\0') {
        return Err(format!("'{entry}' must be VAR (pass toolhost's value on) or VAR=value"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_grants_are_refused_with_the_fix() {
        let mut p = Policy::default();
        assert!(p.add_grant("fs-read:relative").unwrap_err().contains("absolute"));
        assert!(p.add_grant("network").unwrap_err().contains("fs-read"));
        assert!(p.add_grant("env:").unwrap_err().contains("VAR=value"));
    }

    #[test]
    fn roots_must_be_absolute_and_normal() {
        for bad in ["/w/..", "/w/../etc", "/w/./x", "$WORKDIRS/..", "w", "./w", "/w/sub/.."] {
            assert!(check_root(bad).is_err(), "{bad} accepted");
        }
        let err = check_root("/w/..").unwrap_err();
        assert!(err.contains("'/w/..'") && err.contains("not normal"), "{err}");
        for good in ["/", "/w", "/w/sub", "$WORKDIRS", "/w/..x", "/w/.hidden"] {
            assert!(check_root(good).is_ok(), "{good} refused");
        }
        let mut p = Policy::default();
        assert!(p.add_grant("fs-read:/w/../etc").unwrap_err().contains("not normal"));
        let p = Policy { fs_write: vec!["/w/.".into()], ..Policy::default() };
        assert!(p.validate("X").unwrap_err().contains("[grants.X]"));
    }
}
