//! The filesystem scope granted to one tool: the only roots its paths may
//! resolve under. Built by the capability module, enforced by backends.

use std::path::{Path, PathBuf};

pub use toolhost_core::path::normalize_lexically;

use super::BackendError;

/// Whether an operation reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading, listing, stat.
    Read,
    /// Creating, writing, removing.
    Write,
}

/// One granted root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Absolute, lexically normal path of the root.
    pub path: PathBuf,
    /// Whether writes are allowed under it (reads always are).
    pub write: bool,
    /// Its symlink-free form when the scope was made ([`FsScope::new`]
    /// fills it in); the local backend refuses the root once its real path
    /// is another (a folder swapped for a symlink after the grant).
    pub real: Option<PathBuf>,
}

impl Root {
    /// A root at `path`; `real` is filled in by [`FsScope::new`].
    pub fn new(path: impl Into<PathBuf>, write: bool) -> Self {
        Self { path: path.into(), write, real: None }
    }
}

/// The roots granted to one tool, with the hint shown when a path is refused.
///
/// Security default: [`FsScope::none`] grants nothing, so every path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsScope {
    tool: String,
    roots: Vec<Root>,
    /// How the user can widen the scope, e.g. `--grant NAME=fs-read:/path`.
    hint: String,
    /// Why writes are refused everywhere, when the scope was made read-only
    /// for one call ([`FsScope::read_only`]).
    read_only_because: Option<String>,
}

impl FsScope {
    /// A scope that refuses every path.
    pub fn none(tool: &str, hint: impl Into<String>) -> Self {
        Self { tool: tool.to_string(), roots: Vec::new(), hint: hint.into(), read_only_because: None }
    }

    /// A scope over `roots`; duplicate roots keep the widest access. Each
    /// root's real path is resolved now (as far as it exists), unless given.
    pub fn new(tool: &str, roots: Vec<Root>, hint: impl Into<String>) -> Self {
        let mut merged: Vec<Root> = Vec::new();
        for root in roots {
            let path = normalize_lexically(&root.path);
            match merged.iter_mut().find(|r| r.path == path) {
                Some(existing) => existing.write |= root.write,
                None => {
                    let real = root.real.or_else(|| crate::capability::resolved(&path));
                    merged.push(Root { path, write: root.write, real })
                }
            }
        }
        Self { tool: tool.to_string(), roots: merged, hint: hint.into(), read_only_because: None }
    }

    /// The same roots, every one read-only; a refused write says `because`.
    pub fn read_only(&self, because: impl Into<String>) -> Self {
        let roots = self.roots.iter().map(|r| Root { write: false, ..r.clone() }).collect();
        Self { roots, read_only_because: Some(because.into()), ..self.clone() }
    }

    /// The same scope narrowed to what `visible` shows (absolute, symlink-free
    /// folders, each with whether it may be written): a root inside a visible
    /// folder stays (read-only when the folder is), a root holding visible
    /// folders becomes those folders, anything else goes. The Docker backend
    /// uses it so that a tool reaches only what its container has bound.
    pub fn within(&self, visible: &[(PathBuf, bool)]) -> Self {
        let mut roots = Vec::new();
        for r in &self.roots {
            let real = r.real.clone().unwrap_or_else(|| r.path.clone());
            for (folder, write) in visible {
                if real.starts_with(folder) {
                    roots.push(Root { path: r.path.clone(), write: r.write && *write, real: r.real.clone() });
                } else if let Ok(rel) = folder.strip_prefix(&real) {
                    roots.push(Root { path: r.path.join(rel), write: r.write && *write, real: Some(folder.clone()) });
                }
            }
        }
        Self { read_only_because: self.read_only_because.clone(), ..Self::new(&self.tool, roots, self.hint.clone()) }
    }

    /// The granted roots.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The roots writes are allowed under, symlinks resolved where they
    /// were when the scope was made: where a confined process may write.
    pub fn write_roots(&self) -> Vec<PathBuf> {
        self.roots.iter().filter(|r| r.write).map(|r| r.real.clone().unwrap_or_else(|| r.path.clone())).collect()
    }

    /// The tool this scope belongs to.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Finds the innermost root containing the absolute `path` that allows
    /// `access`, and the path relative to it. `..` is resolved lexically
    /// first, so `/root/../etc` is judged as `/etc`; symlinks are the
    /// backend's job (cap-std refuses to follow one out of the root).
    pub fn locate(&self, path: &str, access: Access) -> Result<(&Root, PathBuf), BackendError> {
        let requested = Path::new(path);
        if !requested.is_absolute() {
            return Err(BackendError::Denied(format!(
                "{path} is not an absolute path; tools must pass absolute paths"
            )));
        }
        let normal = normalize_lexically(requested);
        let found = self
            .roots
            .iter()
            .filter(|r| access == Access::Read || r.write)
            .filter_map(|r| normal.strip_prefix(&r.path).ok().map(|rel| (r, rel.to_path_buf())))
            .max_by_key(|(r, _)| r.path.as_os_str().len());
        found.ok_or_else(|| self.refusal(&normal, access))
    }

    /// The error for a path outside the scope.
    pub fn refusal(&self, path: &Path, access: Access) -> BackendError {
        let verb = match access {
            Access::Read => "read",
            Access::Write => "write",
        };
        let granted: Vec<String> = self
            .roots
            .iter()
            .filter(|r| access == Access::Read || r.write)
            .map(|r| r.path.display().to_string())
            .collect();
        let granted = if granted.is_empty() { "none".to_string() } else { granted.join(", ") };
        let hint = match (&self.read_only_because, access) {
            (Some(because), Access::Write) => because,
            _ => &self.hint,
        };
        BackendError::Denied(format!(
            "{verb} access to {} is outside the roots granted to tool '{}' ({verb}: {granted}); {hint}",
            path.display(),
            self.tool,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> FsScope {
        FsScope::new("Read", vec![Root::new("/work", true), Root::new("/docs", false)], "add it with --workdir")
    }

    #[test]
    fn dot_dot_cannot_leave_a_root() {
        let err = scope().locate("/work/../etc/passwd", Access::Read).unwrap_err();
        assert!(err.to_string().contains("/etc/passwd"), "{err}");
        assert!(err.to_string().contains("--workdir"), "{err}");
    }

    #[test]
    fn read_only_roots_refuse_writes() {
        assert!(scope().locate("/docs/a.md", Access::Read).is_ok());
        assert!(scope().locate("/docs/a.md", Access::Write).is_err());
        let scope = scope();
        let (root, rel) = scope.locate("/work/src/../x.rs", Access::Write).unwrap();
        assert_eq!(root.path, PathBuf::from("/work"));
        assert_eq!(rel, PathBuf::from("x.rs"));
    }

    #[test]
    fn prefix_of_a_name_is_not_containment() {
        assert!(scope().locate("/workshop/a", Access::Read).is_err());
    }

    #[test]
    fn within_keeps_only_what_is_visible() {
        let visible = vec![(PathBuf::from("/work"), true), (PathBuf::from("/docs/api"), true)];
        let narrowed = scope().within(&visible);
        assert!(narrowed.locate("/work/a", Access::Write).is_ok());
        assert!(narrowed.locate("/docs/api/x.md", Access::Read).is_ok());
        assert!(narrowed.locate("/docs/api/x.md", Access::Write).is_err(), "the root was read-only");
        assert!(narrowed.locate("/docs/other.md", Access::Read).is_err(), "not bound");
        let ro = scope().within(&[(PathBuf::from("/work"), false)]);
        assert!(ro.locate("/work/a", Access::Write).is_err());
    }

    #[test]
    fn empty_scope_refuses_everything() {
        let none = FsScope::none("Evil", "grant it with --grant Evil=fs-read:/path");
        let err = none.locate("/work/a", Access::Read).unwrap_err();
        assert!(err.to_string().contains("none"), "{err}");
    }
}
