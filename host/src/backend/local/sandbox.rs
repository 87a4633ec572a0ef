//! The local sandbox: what confines a process that Bash, PowerShell or a
//! plugin with `exec` starts on the local backend
//! (`[backend.local] sandbox = "on" | "auto" | "off"`, `--sandbox`).
//!
//! Each process enters, between `fork` and `exec` and before it runs any of
//! its own code:
//!
//! * **Landlock** (ABI 3 or later): it may write only under the roots its
//!   tool may write (the working directories for the built-ins; none in a
//!   read-only call) and a private temporary directory (`TMPDIR`), plus
//!   `/dev/null`, `/dev/zero` and `/dev/full`; it may read everything
//!   except the secrets (`~/.ssh`, `~/.aws`, … [`SECRETS`],
//!   `deny_read`, and toolhost's own files outside those roots), cut out as
//!   `rules.rs` explains. With ABI 4 and later it may not bind or connect
//!   TCP sockets unless `network = true`; with ABI 6 and later it may not
//!   signal processes outside its sandbox (toolhost, the user's other
//!   programs) nor reach abstract Unix sockets outside it. Landlock also
//!   keeps it from `ptrace` and `/proc/PID/mem` of processes outside its
//!   sandbox, but not from `/proc/PID/environ`: for that the process drops
//!   every capability and toolhost makes itself non-dumpable. No terminal
//!   is writable, and with ABI 5 and later no ioctl is allowed on a device
//!   it opens itself (a terminal's `TIOCSTI` included); like every process
//!   toolhost starts, it has no controlling terminal (`process.rs`).
//! * **seccomp**: no `TIOCSTI` or `TIOCLINUX` on any descriptor, and unless
//!   `network = true` no socket at all (`seccomp.rs`).
//! * **Limits**: at most `max_processes` processes and `max_memory_bytes`
//!   of memory for the whole tree where cgroup v1 groups can be made
//!   (`cgroup.rs`; then everything left in the group is killed when the
//!   process ends, also what escaped its process group with `setsid`), and
//!   `RLIMIT_DATA` of `max_memory_bytes` per process always; without
//!   cgroups, `RLIMIT_NPROC` bounds the processes of a user that is not root.
//!
//! `"on"` refuses to start where the kernel lacks Landlock ABI 3 (an error
//! that says what was found); `"auto"` then runs processes unconfined with a
//! warning; `"off"` (the default) does not confine.

mod cgroup;
mod rules;
mod seccomp;

pub(super) use cgroup::Group;

use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};
use landlock::{
    ABI, Access as _, AccessFs, AccessNet, CompatLevel, Compatible as _, PathBeneath, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, Scope,
};
use serde::Deserialize;

use crate::backend::{BackendError, ExecRequest};
use crate::protected::ProtectedPaths;
use crate::sync::MutexExt as _;

/// The secrets no sandboxed process reads, relative to the home directory:
/// keys and credentials of SSH, GnuPG, cloud and container tools, package
/// registries and password stores.
pub const SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker",
    ".password-store",
    ".local/share/keyrings",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".pgpass",
];

/// The oldest Landlock ABI the sandbox accepts: 3 (Linux 6.2) is the first
/// that governs truncation, without which a process could empty any file.
pub const MIN_LANDLOCK_ABI: i32 = 3;

/// Whether processes are confined (`[backend.local] sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Always; start-up fails where the kernel cannot.
    On,
    /// Where the kernel can; elsewhere unconfined, with a warning.
    Auto,
    /// Never (processes run with the user's rights).
    #[default]
    Off,
}

impl std::str::FromStr for SandboxMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(Self::On),
            "auto" => Ok(Self::Auto),
            "off" => Ok(Self::Off),
            other => Err(format!("sandbox must be \"on\", \"auto\" or \"off\", not \"{other}\"")),
        }
    }
}

/// `[backend.local]`: the sandbox of the local backend.
///
/// ```toml
/// [backend.local]
/// sandbox = "on"                 # "on" | "auto" | "off" (default)
/// network = false                # let processes use the network
/// max_processes = 1024           # per process tree
/// max_memory_bytes = 4294967296  # per process tree (cgroups), and per process
/// deny_read = ["~/.config/secret-tool"]   # more secrets
/// allow_write = ["~/.cargo", "~/.cache"]  # more writable places, for every process
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// Whether processes are confined.
    pub sandbox: SandboxMode,
    /// Let processes open sockets (default false: no network at all).
    pub network: bool,
    /// Processes of one tree, at most (default 1024).
    pub max_processes: u32,
    /// Memory of one tree (where cgroups serve) and of each process
    /// (`RLIMIT_DATA`), at most (default 4 GiB).
    pub max_memory_bytes: u64,
    /// Paths no process reads, besides [`SECRETS`] (`~/` allowed).
    pub deny_read: Vec<PathBuf>,
    /// Paths every process may write besides its tool's writable roots
    /// (`~/` allowed): caches and toolchains such as `~/.cargo`.
    pub allow_write: Vec<PathBuf>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            sandbox: SandboxMode::Off,
            network: false,
            max_processes: 1024,
            max_memory_bytes: 4 << 30,
            deny_read: Vec::new(),
            allow_write: Vec::new(),
        }
    }
}

/// The Landlock ABI this kernel offers, or the errno of the probe
/// (`ENOSYS`: not built in; `EOPNOTSUPP`: not enabled at boot).
pub fn landlock_abi() -> Result<i32, std::io::Error> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no attribute pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(rc as i32) }
}

/// The confinement of the local backend's processes (see the module docs).
#[derive(Debug)]
pub struct Sandbox {
    abi: ABI,
    abi_number: i32,
    network: bool,
    filter: Option<Arc<[seccomp::Instruction]>>,
    secrets: Vec<PathBuf>,
    working_dirs: Vec<PathBuf>,
    allow_write: Vec<PathBuf>,
    cap_last: u32,
    tmp: PathBuf,
    max_processes: u32,
    max_memory_bytes: u64,
    cgroups: Option<cgroup::Controllers>,
    protected: Arc<ProtectedPaths>,
}

impl Sandbox {
    /// The sandbox `settings` ask for, or `None` when processes run
    /// unconfined (`"off"`, or `"auto"` where the kernel cannot; warned).
    /// `home` is the user's home (where [`SECRETS`] live).
    /// Processes may write under `working_dirs` (unless their call was
    /// admitted as read-only).
    pub fn from_settings(
        settings: &SandboxSettings,
        home: &Path,
        working_dirs: &[PathBuf],
        protected: Arc<ProtectedPaths>,
    ) -> Result<Option<Self>> {
        if settings.sandbox == SandboxMode::Off {
            return Ok(None);
        }
        match Self::new(settings, home, working_dirs, protected) {
            Ok(sandbox) => Ok(Some(sandbox)),
            Err(e) if settings.sandbox == SandboxMode::Auto => {
                tracing::warn!("[backend.local] sandbox = \"auto\": processes run unconfined, with your rights: {e:#}");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn new(
        settings: &SandboxSettings,
        home: &Path,
        working_dirs: &[PathBuf],
        protected: Arc<ProtectedPaths>,
    ) -> Result<Self> {
        let abi_number = match landlock_abi() {
            Ok(n) if n >= MIN_LANDLOCK_ABI => n,
            Ok(n) => bail!(
                "the sandbox needs Landlock ABI {MIN_LANDLOCK_ABI} (Linux 6.2) or later, and this kernel offers ABI {n}; \
                 run on a newer kernel, or set [backend.local] sandbox = \"auto\" (unconfined, with a warning) or \"off\""
            ),
            Err(e) => bail!(
                "the sandbox needs Landlock, which this kernel does not offer (landlock_create_ruleset: {e}); run on \
                 Linux 6.2 or later with Landlock enabled (CONFIG_SECURITY_LANDLOCK, `landlock` in the lsm= boot list), \
                 or set [backend.local] sandbox = \"auto\" (unconfined, with a warning) or \"off\""
            ),
        };
        let filter = match (settings.network, seccomp::filter(settings.network)) {
            (_, Some(prog)) => Some(Arc::from(prog)),
            (true, None) => None,
            (false, None) => bail!(
                "the sandbox has no seccomp filter for this architecture to keep processes off the network; set \
                 [backend.local] network = true, or sandbox = \"off\""
            ),
        };
        if settings.max_processes == 0 || settings.max_memory_bytes == 0 {
            bail!("[backend.local] max_processes and max_memory_bytes must be greater than 0");
        }
        let expand = |key: &str, path: &PathBuf| -> Result<PathBuf> {
            let text = path.to_string_lossy();
            match text.strip_prefix("~/") {
                Some(rest) => Ok(home.join(rest)),
                None if path.is_absolute() => Ok(path.clone()),
                None => {
                    bail!("[backend.local] {key}: {} is not an absolute path (or ~/…); write it so", path.display())
                }
            }
        };
        let mut secrets: Vec<PathBuf> = SECRETS.iter().map(|s| home.join(s)).collect();
        for path in &settings.deny_read {
            secrets.push(expand("deny_read", path)?);
        }
        let allow_write = settings.allow_write.iter().map(|p| expand("allow_write", p)).collect::<Result<_>>()?;
        let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63);
        // A process of the same user may read toolhost's environment through
        // /proc/PID/environ (Landlock does not cover it); a process that is
        // not dumpable keeps it to processes with CAP_SYS_PTRACE, which the
        // sandbox drops.
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
            bail!("cannot make toolhost non-dumpable (prctl PR_SET_DUMPABLE): {}", std::io::Error::last_os_error());
        }
        let tmp = private_temp_dir()?;
        let cgroups = cgroup::Controllers::open();
        // SAFETY: getuid has no preconditions.
        if cgroups.is_none() && unsafe { libc::getuid() } == 0 {
            tracing::warn!(
                "the sandbox cannot make cgroup v1 pids/memory groups here, and root is exempt from RLIMIT_NPROC: \
                 the number of processes a sandboxed command starts is not bounded"
            );
        }
        Ok(Self {
            abi: ABI::from(abi_number),
            abi_number,
            network: settings.network,
            filter,
            secrets,
            working_dirs: working_dirs.to_vec(),
            allow_write,
            cap_last,
            tmp,
            max_processes: settings.max_processes,
            max_memory_bytes: settings.max_memory_bytes,
            cgroups,
            protected,
        })
    }

    /// What confines processes, for logs and `--help`-level reports.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("Landlock ABI {}", self.abi_number)];
        parts.push(match (self.network, &self.filter) {
            (false, _) => "seccomp: no sockets, no TIOCSTI".to_string(),
            (true, Some(_)) => "network allowed, seccomp: no TIOCSTI".into(),
            (true, None) => "network allowed".into(),
        });
        parts.push(match &self.cgroups {
            Some(c) if c.has_memory() => "cgroup v1 pids and memory limits".into(),
            Some(_) => "cgroup v1 pids limit".into(),
            None => "rlimits only".to_string(),
        });
        parts.join(", ")
    }

    /// Whether each process tree gets a cgroup (a process-count limit for
    /// every user, and a final sweep that kills what left the process group).
    pub fn has_cgroups(&self) -> bool {
        self.cgroups.is_some()
    }

    /// The private temporary directory (the processes' `TMPDIR`).
    pub fn temp_dir(&self) -> &Path {
        &self.tmp
    }

    /// The confinement of the process `request` starts.
    pub(super) fn confine(&self, request: &ExecRequest) -> Result<Confinement, BackendError> {
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            BackendError::Io(format!(
                "cannot prepare the sandbox ({what}: {e}); set [backend.local] sandbox = \"off\" to run unconfined"
            ))
        };
        let granted: &[PathBuf] = if request.read_only { &[] } else { &request.write_roots };
        let working: &[PathBuf] = if request.read_only { &[] } else { &self.working_dirs };
        let writable: Vec<PathBuf> = working
            .iter()
            .chain(granted)
            .chain(&self.allow_write)
            .filter_map(|r| std::fs::canonicalize(r).ok())
            .collect();
        let mut secrets: Vec<PathBuf> = self.secrets.iter().filter_map(|s| std::fs::canonicalize(s).ok()).collect();
        // toolhost's own files outside the writable roots are secrets too;
        // inside them only the backend's checks and the engine guard them.
        for entry in self.protected.entries() {
            for path in std::iter::once(&entry.path).chain(entry.real.as_ref()) {
                if let Ok(real) = std::fs::canonicalize(path)
                    && !writable.iter().any(|w| real.starts_with(w))
                {
                    secrets.push(real);
                }
            }
        }
        tracing::debug!(?writable, ?secrets, "sandbox for one process");
        let all = AccessFs::from_all(self.abi);
        let device = AccessFs::from_file(self.abi) & !AccessFs::Execute;
        let mut grants = vec![rules::Grant { path: "/".into(), access: AccessFs::from_read(self.abi) }];
        grants.extend(writable.iter().map(|w| rules::Grant { path: w.clone(), access: all }));
        grants.push(rules::Grant { path: self.tmp.clone(), access: all });
        // Not /dev/tty: a sandboxed process has no terminal to write to.
        for dev in ["/dev/null", "/dev/zero", "/dev/full"] {
            grants.push(rules::Grant { path: dev.into(), access: device });
        }
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(all)
            .map_err(|e| failed("Landlock file rights", &e))?;
        if !self.network && self.abi_number >= 4 {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(self.abi))
                .map_err(|e| failed("Landlock network rights", &e))?;
        }
        if self.abi_number >= 6 {
            ruleset = ruleset.scope(Scope::from_all(self.abi)).map_err(|e| failed("Landlock scopes", &e))?;
        }
        let mut created = ruleset.create().map_err(|e| failed("Landlock ruleset", &e))?;
        for rule in rules::rules(self.abi, &grants, &secrets) {
            created =
                created.add_rule(PathBeneath::new(rule.fd, rule.access)).map_err(|e| failed("Landlock rule", &e))?;
        }
        let ruleset: Option<OwnedFd> = created.into();
        let ruleset = ruleset.ok_or_else(|| failed("Landlock ruleset", &"not created"))?;
        let group = match &self.cgroups {
            Some(c) => Some(c.group(self.max_processes, self.max_memory_bytes).map_err(|e| failed("cgroup", &e))?),
            None => None,
        };
        let mut rlimits = vec![(libc::RLIMIT_DATA, self.max_memory_bytes), (libc::RLIMIT_CORE, 0)];
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        if group.is_none() && uid != 0 {
            // RLIMIT_NPROC counts every process of the user, not only ours.
            rlimits.push((libc::RLIMIT_NPROC, processes_of(uid) + u64::from(self.max_processes)));
        }
        let child = ChildSetup {
            ruleset: ruleset.as_raw_fd(),
            filter: self.filter.clone(),
            procs: group.as_ref().map(|g| g.procs_fds()).unwrap_or_default(),
            rlimits,
            cap_last: self.cap_last,
        };
        Ok(Confinement { _ruleset: ruleset, group, child: Arc::new(child), tmp: self.tmp.clone() })
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// What this process made that must go when it exits, even through
/// `std::process::exit` (which runs no destructor, and is how the CLI
/// ends): the private temporary directories (`true`: a whole tree) and the
/// parent cgroups (`false`: only once empty). What a crash leaves, the next
/// start removes (`private_temp_dir`, `cgroup::Controllers::open`).
static AT_EXIT: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());

fn remove_at_exit(path: PathBuf, tree: bool) {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registers a function that takes and returns nothing.
        unsafe { libc::atexit(remove_leftovers) };
    });
    AT_EXIT.lock_unpoisoned().push((path, tree));
}

extern "C" fn remove_leftovers() {
    let paths = std::mem::take(&mut *AT_EXIT.lock_unpoisoned());
    for (path, tree) in paths.into_iter().rev() {
        let _ = if tree { std::fs::remove_dir_all(&path) } else { std::fs::remove_dir(&path) };
    }
}

/// A fresh directory only this user can enter, under the system's.
fn private_temp_dir() -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt as _;
    let base = std::env::temp_dir();
    // What hosts that did not end cleanly left behind (ours only).
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let stale = cgroup::of_a_dead_host(&entry.file_name().to_string_lossy());
        if stale && entry.metadata().is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == uid && m.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    for attempt in 0..16u32 {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let dir = base.join(format!("toolhost-sandbox-{}-{nanos:x}{attempt}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                let dir = std::fs::canonicalize(&dir)?;
                remove_at_exit(dir.clone(), true);
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!(
                "cannot create the sandbox's temporary directory under {}: {e}; set TMPDIR to a writable folder",
                base.display()
            ),
        }
    }
    bail!("cannot create the sandbox's temporary directory under {}: every name taken", base.display())
}

/// How many processes `uid` runs now.
fn processes_of(uid: libc::uid_t) -> u64 {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else { continue };
        let real = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|l| l.split_whitespace().next());
        if real.and_then(|r| r.parse::<libc::uid_t>().ok()) == Some(uid) {
            n += 1;
        }
    }
    n
}

/// The sandbox of one process, held by the parent until the process ends.
pub(super) struct Confinement {
    _ruleset: OwnedFd,
    /// The cgroups of the tree; dropping them kills what is left.
    pub(super) group: Option<Group>,
    child: Arc<ChildSetup>,
    tmp: PathBuf,
}

impl Confinement {
    /// What the child runs between `fork` and `exec`.
    pub(super) fn child(&self) -> Arc<ChildSetup> {
        self.child.clone()
    }

    /// The `TMPDIR` of the process.
    pub(super) fn temp_dir(&self) -> &Path {
        &self.tmp
    }
}

/// The type `setrlimit` takes its resource as (glibc has its own).
#[cfg(target_env = "gnu")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type Resource = libc::c_int;

/// What the child does to enter the sandbox: only raw descriptors and
/// prepared data, so nothing allocates or locks after `fork`.
pub(super) struct ChildSetup {
    ruleset: RawFd,
    filter: Option<Arc<[seccomp::Instruction]>>,
    procs: Vec<RawFd>,
    rlimits: Vec<(Resource, u64)>,
    cap_last: u32,
}

impl ChildSetup {
    /// Enters the sandbox (in the child, before `exec`): the cgroups, the
    /// rlimits, every capability dropped (root's too, from the bounding set,
    /// so `exec` gives none back), `no_new_privs`, Landlock, then seccomp.
    /// Async-signal-safe.
    pub(super) fn enter(&self) -> std::io::Result<()> {
        let check = |rc: libc::c_long| if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
        for &fd in &self.procs {
            // SAFETY: writing a static buffer to an open descriptor.
            check(unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } as libc::c_long)?;
        }
        for &(resource, value) in &self.rlimits {
            let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
            // SAFETY: `limit` is a valid rlimit.
            check(unsafe { libc::setrlimit(resource, &limit) } as libc::c_long)?;
        }
        // SAFETY: prctl, capset and the Landlock system call take plain
        // integers or pointers to the local structs below.
        unsafe {
            for cap in 0..=self.cap_last {
                // EPERM without CAP_SETPCAP (not root): nothing to drop then.
                libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
            }
            libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0);
            let header = CapHeader { version: 0x2008_0522, pid: 0 };
            let data = [CapData::default(); 2];
            check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()))?;
        }
        // SAFETY: prctl and the Landlock system call take plain integers.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } as libc::c_long)?;
        check(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset, 0u32) })?;
        if let Some(prog) = &self.filter {
            seccomp::install(prog)?;
        }
        Ok(())
    }
}

/// `struct __user_cap_header_struct` (version 3).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`: all zero, no capability.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
