//! Paths made normal by their text alone.

use std::path::{Component, Path, PathBuf};

/// Resolves `.` and `..` without touching the filesystem; `..` never climbs
/// above the root.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
