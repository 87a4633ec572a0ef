//! Process and memory limits for a sandboxed process tree, through the
//! cgroup v1 `pids` and `memory` controllers where toolhost may create
//! groups (as root, or where they are delegated to the user): one group per
//! spawn under `toolhost-sandbox-<host pid>-<n>`, entered by the child before it
//! runs anything, and emptied (every member killed, including those that
//! left the process group with `setsid`) when the process ends.
//!
//! cgroup v2 needs the host process itself moved to a leaf to put children
//! in groups of their own; toolhost does not move itself, so there the
//! limits are the rlimits alone (see `sandbox.rs`).

use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The parent groups of this host, one per controller.
#[derive(Debug)]
pub(super) struct Controllers {
    pids: PathBuf,
    memory: Option<PathBuf>,
    next: AtomicU64,
}

impl Controllers {
    /// Creates this host's parent groups; `None` when the pids controller
    /// is not a writable cgroup v1 hierarchy here.
    pub(super) fn open() -> Option<Self> {
        static SANDBOXES: AtomicU64 = AtomicU64::new(0);
        let seq = SANDBOXES.fetch_add(1, Ordering::Relaxed);
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let parent = |controller: &str| -> Option<PathBuf> {
            let rel = own.lines().find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
                names.split(',').any(|n| n == controller).then(|| path.trim_start_matches('/').to_string())
            })?;
            let name = format!("toolhost-sandbox-{}-{}", std::process::id(), seq);
            let base = Path::new("/sys/fs/cgroup").join(controller).join(rel);
            sweep_stale(&base);
            let dir = base.join(name);
            match std::fs::create_dir(&dir) {
                Ok(()) => {
                    super::remove_at_exit(dir.clone(), false);
                    Some(dir)
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Some(dir),
                Err(_) => None,
            }
        };
        let pids = parent("pids")?;
        Some(Self { pids, memory: parent("memory"), next: AtomicU64::new(0) })
    }

    /// Whether trees get a memory limit too.
    pub(super) fn has_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// A fresh group for one process tree with these limits.
    pub(super) fn group(&self, max_processes: u32, max_memory_bytes: u64) -> std::io::Result<Group> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut dirs = Vec::new();
        let pids = self.pids.join(n.to_string());
        std::fs::create_dir(&pids)?;
        dirs.push(pids.clone());
        let group = |dirs: Vec<PathBuf>| Group { dirs, procs: Vec::new() };
        let mut made = group(dirs);
        write(&pids.join("pids.max"), &max_processes.to_string())?;
        made.procs.push(open_procs(&pids)?);
        if let Some(memory) = &self.memory {
            let dir = memory.join(n.to_string());
            std::fs::create_dir(&dir)?;
            made.dirs.push(dir.clone());
            write(&dir.join("memory.limit_in_bytes"), &max_memory_bytes.to_string())?;
            made.procs.push(open_procs(&dir)?);
        }
        Ok(made)
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.pids);
        if let Some(memory) = &self.memory {
            let _ = std::fs::remove_dir(memory);
        }
    }
}

/// Whether `name` (`toolhost-sandbox-<pid>…`) belongs to a host that is
/// no longer running.
pub(super) fn of_a_dead_host(name: &str) -> bool {
    let Some(pid) = name.strip_prefix("toolhost-sandbox-").and_then(|r| r.split('-').next()) else { return false };
    let Ok(pid) = pid.parse::<libc::pid_t>() else { return false };
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes the groups a crashed (or killed) host left under `base`,
/// killing what still runs in them.
fn sweep_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !of_a_dead_host(&name.to_string_lossy()) {
            continue;
        }
        let parent = entry.path();
        for child in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            if child.path().is_dir() {
                drop(Group { dirs: vec![child.path()], procs: Vec::new() });
            }
        }
        let _ = std::fs::remove_dir(&parent);
    }
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new().write(true).open(path)?.write_all(value.as_bytes())
}

fn open_procs(dir: &Path) -> std::io::Result<OwnedFd> {
    Ok(File::options().write(true).open(dir.join("cgroup.procs"))?.into())
}

/// The groups of one process tree; dropping it kills what is left in them
/// and removes them.
#[derive(Debug)]
pub(crate) struct Group {
    dirs: Vec<PathBuf>,
    procs: Vec<OwnedFd>,
}

impl Group {
    /// The `cgroup.procs` descriptors the child writes itself into.
    pub(super) fn procs_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(|fd| fd.as_raw_fd()).collect()
    }

    /// Kills every member until the group is empty (a fork bomb keeps
    /// forking while it is killed; the pids limit bounds each round).
    pub(super) fn kill_all(&self) {
        let Some(pids) = self.dirs.first() else { return };
        for _ in 0..200 {
            let members = std::fs::read_to_string(pids.join("cgroup.procs")).unwrap_or_default();
            let members: Vec<libc::pid_t> = members.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if members.is_empty() {
                return;
            }
            for pid in members {
                kill_member(pid, pids);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// SIGKILLs `pid` through a pidfd once it is known to be a member of the
/// group at `dir` (so a recycled pid is never signalled).
fn kill_member(pid: libc::pid_t, dir: &Path) {
    // SAFETY: pidfd_open takes a pid and flags; the result is owned below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return;
    }
    // SAFETY: a fresh descriptor owned by nothing else.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as RawFd) };
    // `/sys/fs/cgroup/pids/<rel>` is `N:pids:/<rel>` in /proc/PID/cgroup.
    let rel = dir.components().skip(5).collect::<PathBuf>();
    let line = format!(":pids:/{}", rel.display());
    let member =
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| c.lines().any(|l| l.ends_with(&line)));
    if member {
        // SAFETY: pidfd_send_signal on a valid pidfd with no siginfo.
        unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, fd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_all();
        self.procs.clear();
        for dir in self.dirs.iter().rev() {
            // A killed member may take a moment to leave the group.
            for _ in 0..100 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
