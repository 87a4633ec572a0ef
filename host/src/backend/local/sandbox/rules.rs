//! The Landlock rules of one sandboxed process: which file hierarchies it
//! may read and write, computed from the grants and the secrets.
//!
//! Landlock only grants (a rule gives rights on a hierarchy, and rights
//! accumulate downwards), so "read everything but `~/.ssh`" is spelled by
//! cutting: on each folder on the way from a grant's root to a secret, only
//! the right to list it is granted, and every other entry of that folder
//! (not on the way, not a secret) gets the grant's rights as a hierarchy of
//! its own. Rules bind to inodes, not names, so renaming a secret does not
//! bring it back into reach, and moving it under a granted folder is refused
//! by the kernel (`EXDEV`) because it would gain rights.
//!
//! Symbolic links among those entries get no rule: a path through one is
//! judged where it leads, so a link to a secret leads nowhere.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use landlock::{ABI, AccessFs, BitFlags};

/// Rights on one hierarchy.
#[derive(Debug, Clone)]
pub(super) struct Grant {
    /// Canonical path of the hierarchy's root.
    pub path: PathBuf,
    /// What may be done under it.
    pub access: BitFlags<AccessFs>,
}

/// One Landlock rule to add: an `O_PATH` descriptor and its rights.
pub(super) struct Rule {
    pub fd: OwnedFd,
    pub access: BitFlags<AccessFs>,
}

/// The rules that give `grants` but nothing of `secrets` (canonical paths).
/// A grant that lies inside a secret is dropped; an entry that cannot be
/// opened gets no rule (the process cannot reach it).
pub(super) fn rules(abi: ABI, grants: &[Grant], secrets: &[PathBuf]) -> Vec<Rule> {
    let mut out = Vec::new();
    for grant in grants {
        if secrets.iter().any(|s| grant.path.starts_with(s)) {
            continue;
        }
        let inside: Vec<&PathBuf> = secrets.iter().filter(|s| s.starts_with(&grant.path)).collect();
        if inside.is_empty() {
            push(&mut out, abi, &grant.path, grant.access);
            continue;
        }
        let mut on_the_way = BTreeSet::new();
        for secret in &inside {
            for ancestor in secret.ancestors().skip(1) {
                if !ancestor.starts_with(&grant.path) {
                    break;
                }
                on_the_way.insert(ancestor.to_path_buf());
            }
        }
        let list_only = grant.access & AccessFs::ReadDir;
        for folder in &on_the_way {
            push(&mut out, abi, folder, list_only);
            let Ok(entries) = std::fs::read_dir(folder) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if on_the_way.contains(&path) || inside.iter().any(|s| **s == path) {
                    continue;
                }
                push(&mut out, abi, &path, grant.access);
            }
        }
    }
    out
}

/// Adds a rule for `path` unless it is a symlink or cannot be opened; a
/// file keeps only the rights that apply to files.
fn push(out: &mut Vec<Rule>, abi: ABI, path: &Path, access: BitFlags<AccessFs>) {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { return };
    // SAFETY: a plain open of a NUL-terminated path; the descriptor is owned
    // below.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return;
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `st` is plain data written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut st) } != 0 {
        return;
    }
    let access = match st.st_mode & libc::S_IFMT {
        libc::S_IFLNK => return,
        libc::S_IFDIR => access,
        _ => access & AccessFs::from_file(abi),
    };
    if !access.is_empty() {
        out.push(Rule { fd, access });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(rules: &[Rule]) -> Vec<(PathBuf, bool)> {
        rules
            .iter()
            .map(|r| {
                let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&r.fd));
                (std::fs::read_link(link).unwrap(), r.access.contains(AccessFs::ReadFile))
            })
            .collect()
    }

    #[test]
    fn a_secret_is_cut_out_of_its_grant_and_links_get_no_rule() {
        let dir = std::env::temp_dir().join(format!("toolhost-rules-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(dir.join("home/src")).unwrap();
        std::fs::write(dir.join("home/notes"), "n").unwrap();
        std::os::unix::fs::symlink(dir.join("home/.ssh"), dir.join("home/keys")).unwrap();
        let dir = dir.canonicalize().unwrap();
        let grant = Grant { path: dir.clone(), access: AccessFs::from_read(ABI::V3) };
        let rules = rules(ABI::V3, &[grant], &[dir.join("home/.ssh")]);
        let got = covered(&rules);
        assert!(got.contains(&(dir.clone(), false)), "{got:?}");
        assert!(got.contains(&(dir.join("home"), false)), "{got:?}");
        assert!(got.contains(&(dir.join("home/src"), true)), "{got:?}");
        assert!(got.contains(&(dir.join("home/notes"), true)), "{got:?}");
        assert!(!got.iter().any(|(p, _)| p.ends_with(".ssh") || p.ends_with("keys")), "{got:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
