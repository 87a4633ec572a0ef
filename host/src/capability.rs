//! Capabilities: what a tool asked for, what the user allows, and the
//! intersection the host links. This is the one place grants are decided.
//!
//! Security defaults: a third-party tool gets nothing unless the user grants
//! it (`--grant NAME=fs-read` or `[grants.NAME]` in toolhost.toml); built-in
//! tools get the working directories read-write and the extra read-only
//! roots. Network access is never granted (no backend implements it yet).
//!
//! **Roots.** A root, declared by a tool or granted by the user, is
//! `$WORKDIRS` or an absolute path without `.` or `..` components; anything
//! else is refused with an error naming it. Declared and granted roots are
//! compared with their symlinks resolved (as far as the path exists), so
//! neither `<dir>/..` nor a symlink inside a granted root that points out of
//! it widens a grant.
//!
//! **Phases.** One call uses its grants in three shapes ([`Phase`]): the
//! permission decision runs with no capability at all, a call allowed
//! because it is read-only runs with read-only capabilities, and any other
//! allowed call runs with the full grants.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use toolhost_core::capability::{Declared, Policy, WORKDIRS, check_root};

use crate::backend::FsScope;
use crate::backend::scope::{Root, normalize_lexically};

/// The variables of toolhost's own environment a spawned process inherits;
/// every `LC_*` variable too. Everything else (API keys, tokens, ...) is
/// dropped unless the user passes it on with `env` in `[grants.NAME]`.
pub const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR"];

/// The environment of a process a tool spawns: [`INHERITED_ENV`] and `LC_*`
/// from toolhost's own environment, then the user's `extra` entries.
pub fn process_env(extra: &[String]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| INHERITED_ENV.contains(&k.as_str()) || k.starts_with("LC_"))
        .collect();
    for entry in extra {
        let (name, value) = match entry.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => match std::env::var(entry) {
                Ok(v) => (entry.clone(), v),
                Err(_) => continue,
            },
        };
        env.retain(|(k, _)| *k != name);
        env.push((name, value));
    }
    env
}

/// Which part of a call an instance serves; it decides how much of the
/// grants the instance may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `check-read-only`, `match-rule`, `check-permissions`,
    /// `generate-suggestions`: no capability at all (only `real-path`, a
    /// metadata lookup inside the read roots).
    Decide,
    /// `call` of a call allowed because the tool said it only reads:
    /// read-only roots, no process (built-ins excepted), no state writes.
    ReadOnlyCall,
    /// `call` of any other allowed call: the full grants.
    Call,
}

/// What the host actually links for one tool: the intersection of
/// [`Declared`] and [`Policy`], as used in one [`Phase`].
#[derive(Debug, Clone)]
pub struct Grants {
    /// Filesystem roots (a tool granted none has an empty scope).
    pub fs: FsScope,
    /// Granted to run processes (see [`Grants::exec_allowed`] for whether
    /// this phase may).
    pub process_exec: bool,
    /// Granted the agent state (see [`Grants::state_allowed`]).
    pub state: bool,
    /// The environment of spawned processes ([`process_env`]).
    pub env: Vec<(String, String)>,
    /// The phase these grants are shaped for.
    pub phase: Phase,
    /// A built-in tool (its read-only calls still run processes: their
    /// read-only judgement is the host's own analysis).
    pub builtin: bool,
    /// Where `real-path` may resolve: the call's scope, also while deciding.
    pub lookup: FsScope,
}

impl Grants {
    /// No capability at all.
    pub fn none(tool: &str) -> Self {
        let fs = FsScope::none(tool, grant_hint(tool));
        Self {
            lookup: fs.clone(),
            fs,
            process_exec: false,
            state: false,
            env: Vec::new(),
            phase: Phase::Call,
            builtin: false,
        }
    }

    /// Intersects what `declared` asks with what `policy` allows.
    /// `$WORKDIRS` expands to `working_dirs`; `read_roots` are extra
    /// read-only roots (given to built-ins). A declared root is granted
    /// when it lies under an allowed root (or vice versa: the narrower wins),
    /// both compared with their symlinks resolved; the root is kept in its
    /// given (lexically normal) form.
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
                } else if check_root(root).is_ok() {
                    out.push(PathBuf::from(root));
                } else {
                    tracing::warn!(tool, "root '{root}' is not absolute and normal; not granted");
                }
            }
            out
        };
        let write_asked = expand(&declared.fs_write, &[]);
        let write_allowed = expand(&policy.fs_write, &[]);
        let writes = narrow(&write_asked, &write_allowed);
        let mut read_asked = expand(&declared.fs_read, read_roots);
        read_asked.extend(write_asked);
        let mut read_allowed = expand(&policy.fs_read, read_roots);
        read_allowed.extend(write_allowed);
        let reads = narrow(&read_asked, &read_allowed);
        let mut roots: Vec<Root> = writes.into_iter().map(|path| Root::new(path, true)).collect();
        roots.extend(reads.into_iter().map(|path| Root::new(path, false)));
        let fs = FsScope::new(tool, roots, if builtin { builtin_hint() } else { grant_hint(tool) });
        let process_exec = declared.process_exec && policy.process_exec;
        Self {
            lookup: fs.clone(),
            fs,
            process_exec,
            state: declared.state && policy.state,
            env: if process_exec { process_env(&policy.env) } else { Vec::new() },
            phase: Phase::Call,
            builtin,
        }
    }

    /// These (full) grants shaped for `phase`: [`Phase::Decide`] keeps
    /// nothing but the `real-path` lookup scope; [`Phase::ReadOnlyCall`]
    /// makes every root read-only.
    pub fn for_phase(&self, phase: Phase) -> Self {
        let tool = self.fs.tool();
        let fs = match phase {
            Phase::Call => self.fs.clone(),
            Phase::ReadOnlyCall => self.fs.read_only(READ_ONLY_HINT),
            Phase::Decide => FsScope::none(tool, DECIDE_HINT),
        };
        Self { fs, phase, lookup: self.lookup.clone(), env: self.env.clone(), ..*self }
    }

    /// Whether this instance may spawn a process; the error says why not.
    pub fn exec_allowed(&self) -> Result<(), String> {
        if !self.process_exec {
            return Err(self.denied("exec"));
        }
        match self.phase {
            Phase::Call => Ok(()),
            Phase::ReadOnlyCall if self.builtin => Ok(()),
            Phase::ReadOnlyCall | Phase::Decide => Err(self.withheld("exec")),
        }
    }

    /// Whether this instance may use the agent state (`write`: change a
    /// value); the error says why not.
    pub fn state_allowed(&self, write: bool) -> Result<(), String> {
        if !self.state {
            return Err(self.denied("state"));
        }
        match self.phase {
            Phase::Call => Ok(()),
            Phase::ReadOnlyCall if !write => Ok(()),
            Phase::ReadOnlyCall | Phase::Decide => Err(self.withheld(if write { "state writes" } else { "state" })),
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

    /// The error text for a granted capability this phase withholds.
    fn withheld(&self, capability: &str) -> String {
        let why = match self.phase {
            Phase::Decide => DECIDE_HINT,
            Phase::ReadOnlyCall | Phase::Call => READ_ONLY_HINT,
        };
        format!("denied: {capability} is not available to tool '{}' here: {why}", self.fs.tool())
    }
}

/// A tool's grants shaped for each [`Phase`], computed once per loaded tool
/// (resolving roots touches the filesystem; a call only clones an `Arc`).
#[derive(Debug)]
pub struct PhaseGrants {
    call: Arc<Grants>,
    read_only: Arc<Grants>,
    decide: Arc<Grants>,
}

impl PhaseGrants {
    /// The three shapes of the full grants `call`.
    pub fn new(call: Grants) -> Self {
        Self {
            read_only: Arc::new(call.for_phase(Phase::ReadOnlyCall)),
            decide: Arc::new(call.for_phase(Phase::Decide)),
            call: Arc::new(call),
        }
    }

    /// The grants for `phase`.
    pub fn get(&self, phase: Phase) -> Arc<Grants> {
        match phase {
            Phase::Call => self.call.clone(),
            Phase::ReadOnlyCall => self.read_only.clone(),
            Phase::Decide => self.decide.clone(),
        }
    }
}

/// Why a permission check has no capability.
const DECIDE_HINT: &str = "a tool's permission check (check-read-only, match-rule, check-permissions, generate-suggestions) runs with no capability at all; only `call` gets the grants";

/// Why a read-only call cannot write.
const READ_ONLY_HINT: &str = "this call was allowed because the tool said it is read-only, so it runs with read-only capabilities (no writes, no processes, no state changes)";

/// The roots of `asked` that `allowed` covers: a pair whose resolved forms
/// nest gives the narrower of the two, in its given form. A root that
/// cannot be resolved (a dangling symlink) is not granted.
fn narrow(asked: &[PathBuf], allowed: &[PathBuf]) -> Vec<PathBuf> {
    let allowed: Vec<(PathBuf, PathBuf)> =
        allowed.iter().filter_map(|b| Some((normalize_lexically(b), resolved(b)?))).collect();
    let mut out = Vec::new();
    for a in asked {
        let Some(real_a) = resolved(a) else { continue };
        for (b, real_b) in &allowed {
            if real_a.starts_with(real_b) {
                out.push(normalize_lexically(a));
            } else if real_b.starts_with(&real_a) {
                out.push(b.clone());
            }
        }
    }
    out
}

/// `path` made lexically normal, then with its symlinks resolved as far as
/// it exists (the missing rest appended as is). `None` when an existing
/// component cannot be resolved (a dangling or looping symlink, no access).
pub fn resolved(path: &Path) -> Option<PathBuf> {
    let normal = normalize_lexically(path);
    let mut existing = normal.as_path();
    let mut missing = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(mut real) => {
                real.extend(missing.iter().rev());
                return Some(real);
            }
            Err(_) if std::fs::symlink_metadata(existing).is_ok() => return None,
            Err(_) => {
                missing.push(existing.file_name()?.to_owned());
                existing = existing.parent()?;
            }
        }
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
    fn a_dot_dot_root_never_widens_a_grant() {
        let declared = Declared { fs_read: vec!["/w/..".into(), "/w/sub/../..".into()], ..Declared::default() };
        let policy = Policy { fs_read: vec!["/w".into()], ..Policy::default() };
        let g = Grants::intersect("X", &declared, &policy, &[], &[], false);
        assert!(g.fs.roots().is_empty(), "{:?}", g.fs.roots());
    }

    #[test]
    fn a_symlink_out_of_the_granted_root_is_not_granted() {
        let dir = tempfile::tempdir().unwrap();
        let granted = dir.path().join("granted");
        std::fs::create_dir_all(granted.join("sub")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), granted.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("missing"), granted.join("dangling")).unwrap();
        let root = |p: &Path| p.display().to_string();
        let declared = Declared {
            fs_read: vec![
                root(&granted.join("link")),
                root(&granted.join("link/deeper")),
                root(&granted.join("dangling")),
                root(&granted.join("sub")),
            ],
            ..Declared::default()
        };
        let policy = Policy { fs_read: vec![root(&granted)], ..Policy::default() };
        let g = Grants::intersect("X", &declared, &policy, &[], &[], false);
        let roots: Vec<&Path> = g.fs.roots().iter().map(|r| r.path.as_path()).collect();
        assert_eq!(roots, vec![granted.join("sub").as_path()]);
    }

    #[test]
    fn phases_shape_the_grants() {
        let all = Policy::builtin();
        let declared = Declared {
            fs_read: vec![],
            fs_write: vec![WORKDIRS.into()],
            process_exec: true,
            network: false,
            state: true,
        };
        for builtin in [false, true] {
            let full = Grants::intersect("X", &declared, &all, &["/w".into()], &[], builtin);
            assert!(full.exec_allowed().is_ok() && full.state_allowed(true).is_ok());
            assert!(full.fs.roots().iter().any(|r| r.write));

            let ro = full.for_phase(Phase::ReadOnlyCall);
            assert!(ro.fs.roots().iter().all(|r| !r.write) && !ro.fs.roots().is_empty());
            assert_eq!(ro.exec_allowed().is_ok(), builtin, "only built-ins keep exec in read-only calls");
            assert!(ro.state_allowed(false).is_ok());
            let err = ro.state_allowed(true).unwrap_err();
            assert!(err.starts_with("denied:") && err.contains("read-only"), "{err}");

            let decide = full.for_phase(Phase::Decide);
            assert!(decide.fs.roots().is_empty());
            assert_eq!(decide.lookup.roots(), full.fs.roots(), "real-path may still resolve");
            assert!(decide.exec_allowed().unwrap_err().contains("permission check"));
            assert!(decide.state_allowed(false).is_err());
        }
        let none = Grants::none("X").for_phase(Phase::ReadOnlyCall);
        assert!(none.exec_allowed().unwrap_err().contains("not granted"), "not granted says how to grant it");
    }

    #[test]
    fn processes_inherit_only_the_allow_list_and_what_the_user_adds() {
        // SAFETY: this test's own variables, not read by other threads.
        unsafe {
            std::env::set_var("TOOLHOST_UNIT_SECRET", "s3cret");
            std::env::set_var("TOOLHOST_UNIT_PASSED", "passed");
        }
        let env = process_env(&["TOOLHOST_UNIT_PASSED".into(), "EXTRA=1".into(), "PATH=/only".into()]);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("TOOLHOST_UNIT_SECRET"), None);
        assert_eq!(get("TOOLHOST_UNIT_PASSED"), Some("passed"));
        assert_eq!(get("EXTRA"), Some("1"));
        assert_eq!(get("PATH"), Some("/only"), "a configured value replaces the inherited one");
        assert!(env.iter().all(|(k, _)| INHERITED_ENV.contains(&k.as_str())
            || k.starts_with("LC_")
            || ["TOOLHOST_UNIT_PASSED", "EXTRA"].contains(&k.as_str())));
    }
}
