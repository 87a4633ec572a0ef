//! Local processes: one session and process group per spawn, output
//! streamed as it is produced, the whole group killed at the timeout, after
//! the main child exits, and when the handle is dropped.
//!
//! Every child, sandboxed or not, leaves toolhost's session before it runs
//! anything (`setsid`: no controlling terminal, so nothing it runs can open
//! `/dev/tty`, push input into the user's terminal with `TIOCSTI` or draw on
//! it; its output reaches a terminal only as toolhost shows it, escaped),
//! reads `/dev/null` as stdin, and gets exactly stdin, stdout and stderr:
//! every other descriptor, also one toolhost inherited from whatever
//! launched it, is closed at `exec`.

use crate::sync::MutexExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::sandbox::Confinement;
use crate::backend::{BackendError, ExecRequest, ExitStatus, OutputPiece, Process};

/// How long output is still read after the process group was killed, for
/// pipes held open by a process that left the group (e.g. via `setsid`).
const READ_GRACE: Duration = Duration::from_millis(200);

/// The process group of one spawn. `alive` is true until the group has been
/// killed; the leader is never reaped while it is true, so the group id
/// cannot have been reused when it is signalled.
struct Group {
    pgid: libc::pid_t,
    alive: Mutex<bool>,
}

impl Group {
    fn kill(&self) {
        let mut alive = self.alive.lock_unpoisoned();
        if *alive {
            // SAFETY: killpg has no memory-safety preconditions; the group
            // leader is unreaped, so `pgid` still names our group.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
            *alive = false;
        }
    }
}

/// A running local process (see [`Process`]). Dropping it kills the group.
struct LocalProcess {
    output: mpsc::UnboundedReceiver<OutputPiece>,
    status: Option<oneshot::Receiver<ExitStatus>>,
    finished: Option<ExitStatus>,
    group: Arc<Group>,
}

/// Starts `request.argv` in `cwd` (see the module docs of `local`), inside
/// `confinement` when there is one.
pub(super) fn spawn(
    cwd: &Path,
    request: &ExecRequest,
    cap: u64,
    confinement: Option<Confinement>,
) -> Result<Box<dyn Process>, BackendError> {
    let Some((program, args)) = request.argv.split_first() else {
        return Err(BackendError::Invalid("empty argv: name the program to run in argv[0]".into()));
    };
    if !cwd.is_dir() {
        return Err(BackendError::NotFound(format!(
            "working directory {} does not exist or is not a directory; pass an existing cwd",
            cwd.display()
        )));
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let sandbox = confinement.as_ref().map(|confinement| {
        cmd.env("TMPDIR", confinement.temp_dir());
        confinement.child()
    });
    // SAFETY: `detach` and `enter` only make async-signal-safe system calls
    // on data prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            detach()?;
            sandbox.as_ref().map_or(Ok(()), |child| child.enter())
        });
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error(&e, program, cwd, confinement.is_some()))?;
    let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) else {
        return Err(BackendError::Io(format!("'{program}' exited before it could be supervised")));
    };
    let group = Arc::new(Group { pgid: pid, alive: Mutex::new(true) });
    let (tx, rx) = mpsc::unbounded_channel();
    let truncated = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(pump(out, tx.clone(), OutputPiece::Stdout, cap, truncated.clone())));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(pump(err, tx, OutputPiece::Stderr, cap, truncated.clone())));
    }
    let (status_tx, status_rx) = oneshot::channel();
    let cgroup = confinement.and_then(|c| c.group);
    tokio::spawn(supervise(child, group.clone(), request.timeout, readers, truncated, status_tx, cgroup));
    Ok(Box::new(LocalProcess { output: rx, status: Some(status_rx), finished: None, group }))
}

/// In the child before `exec`: a session of its own, which makes it the
/// leader of a new process group (the group the timeout kills) and takes
/// away the controlling terminal; and every descriptor from 3 up closed at
/// `exec`. Async-signal-safe, so it may run in a `pre_exec` hook.
///
/// Every process toolhost starts goes through it — the processes of tools,
/// the stdio servers of `[mcp_servers]` and toolhost's own helpers — so
/// none can type into the user's terminal (`TIOCSTI`) or reach a
/// descriptor toolhost inherited from whatever launched it.
///
/// # Errors
///
/// `setsid` failed: the child already leads a process group (do not
/// combine with `process_group`).
pub fn detach() -> std::io::Result<()> {
    // SAFETY: setsid has no preconditions; the child is no group leader yet.
    if unsafe { libc::setsid() } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    close_from_3_at_exec();
    Ok(())
}

/// Marks every descriptor from 3 up close-on-exec. Marked, not closed: the
/// standard library's pipe that reports a failed `exec` is among them (it
/// closes at `exec` by itself; closed now, a failed `exec` would look like
/// a success). Async-signal-safe.
fn close_from_3_at_exec() {
    let all = libc::c_uint::MAX;
    // SAFETY: a system call on plain integers.
    let marked = unsafe { libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, all, libc::CLOSE_RANGE_CLOEXEC) };
    if marked != 0 {
        mark_each_below_the_soft_limit();
    }
}

/// `close_range` with `CLOSE_RANGE_CLOEXEC` needs Linux 5.11; before that,
/// each descriptor from 3 up to the soft `RLIMIT_NOFILE` is marked with
/// `fcntl` (the kernel opens none at or above it; one opened before the
/// limit was lowered would stay open there). Async-signal-safe.
fn mark_each_below_the_soft_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes `limit`; fcntl takes plain integers.
    unsafe {
        let top =
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 { limit.rlim_cur.min(1 << 20) } else { 1024 };
        for fd in 3..top as libc::c_int {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// Why `program` could not be started in `cwd`, blamed on what failed: a
/// working directory that cannot be entered (its mode or a parent's, or
/// it is gone) fails the child's `chdir` with the same error a program
/// that cannot be executed would give.
fn spawn_error(e: &std::io::Error, program: &str, cwd: &Path, confined: bool) -> BackendError {
    use std::io::ErrorKind;
    if matches!(e.kind(), ErrorKind::PermissionDenied | ErrorKind::NotFound)
        && let Some(why) = cwd_unenterable(cwd)
    {
        return BackendError::Denied(format!(
            "cannot start '{program}': cannot enter its working directory {}: {why}; make it an existing folder \
             this user may search (chmod u+x), or pass another cwd",
            cwd.display()
        ));
    }
    match e.kind() {
        _ if confined
            && e.raw_os_error().is_some()
            && !matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) =>
        {
            BackendError::Io(format!(
                "cannot start '{program}' in the sandbox: {e}; set [backend.local] sandbox = \"off\" to run unconfined"
            ))
        }
        ErrorKind::NotFound => BackendError::NotFound(format!(
            "program '{program}' not found: {e}; check that it is installed and on PATH, or pass its absolute path"
        )),
        ErrorKind::PermissionDenied => {
            BackendError::Denied(format!("cannot execute '{program}': {e}; check that it is an executable file"))
        }
        ErrorKind::InvalidInput => BackendError::Invalid(format!(
            "cannot start '{program}': {e}; arguments and environment must not contain NUL bytes"
        )),
        _ => BackendError::Io(format!("cannot start '{program}': {e}")),
    }
}

/// Why this process could not enter `dir` (the `access(2)` check of its
/// search permission), or `None` when it can.
fn cwd_unenterable(dir: &Path) -> Option<std::io::Error> {
    use std::os::unix::ffi::OsStrExt as _;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    let rc = unsafe { libc::access(path.as_ptr(), libc::X_OK) };
    (rc != 0).then(std::io::Error::last_os_error)
}

/// Forwards one pipe to the channel; beyond `cap` bytes it keeps draining the
/// pipe (so the process never blocks on it) but drops the bytes.
async fn pump<R: AsyncRead + Unpin>(
    mut pipe: R,
    tx: mpsc::UnboundedSender<OutputPiece>,
    piece: fn(Vec<u8>) -> OutputPiece,
    cap: u64,
    truncated: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut kept: u64 = 0;
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = cap.saturating_sub(kept);
        let keep = (n as u64).min(room) as usize;
        if keep < n {
            truncated.store(true, Ordering::Relaxed);
        }
        if keep > 0 {
            kept += keep as u64;
            // A closed receiver (the caller is only waiting) just discards.
            let _ = tx.send(piece(buf[..keep].to_vec()));
        }
    }
}

/// Blocks until `pid` has exited, without reaping it (so its process group
/// id stays reserved until we kill the group).
fn wait_exited_unreaped(pid: libc::pid_t) {
    loop {
        // SAFETY: `info` is a plain C struct written by waitid; zeroed is a
        // valid initial value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

async fn supervise(
    mut child: tokio::process::Child,
    group: Arc<Group>,
    timeout: Duration,
    readers: Vec<JoinHandle<()>>,
    truncated: Arc<AtomicBool>,
    status_tx: oneshot::Sender<ExitStatus>,
    cgroup: Option<super::sandbox::Group>,
) {
    let pgid = group.pgid;
    let exited = tokio::task::spawn_blocking(move || wait_exited_unreaped(pgid));
    // A zero timeout times out at once, as the reference (§5.9).
    let timed_out = timeout.is_zero() || tokio::time::timeout(timeout, exited).await.is_err();
    // The leader has exited (unreaped) or is still running: either way the
    // group id is ours. Kill everything left in it.
    group.kill();
    if let Some(cgroup) = cgroup {
        // Also what left the process group (`setsid`): the whole tree.
        let _ = tokio::task::spawn_blocking(move || drop(cgroup)).await;
    }
    let status = child.wait().await;
    let deadline = tokio::time::Instant::now() + READ_GRACE;
    for mut reader in readers {
        if tokio::time::timeout_at(deadline, &mut reader).await.is_err() {
            reader.abort();
        }
    }
    let code = match status {
        Ok(s) if !timed_out => s.code().unwrap_or(-1),
        _ => -1,
    };
    let _ = status_tx.send(ExitStatus { code, timed_out, truncated: truncated.load(Ordering::Relaxed) });
}

#[async_trait]
impl Process for LocalProcess {
    async fn next_output(&mut self) -> Option<OutputPiece> {
        self.output.recv().await
    }

    async fn wait(&mut self) -> ExitStatus {
        if let Some(done) = self.finished {
            return done;
        }
        // Unread output is discarded (the WIT contract): closed, nothing
        // more is sent, and what was already sent is dropped.
        self.output.close();
        while self.output.try_recv().is_ok() {}
        let status = match self.status.take() {
            Some(rx) => rx.await.unwrap_or(ExitStatus { code: -1, timed_out: false, truncated: false }),
            None => ExitStatus { code: -1, timed_out: false, truncated: false },
        };
        self.finished = Some(status);
        status
    }
}

impl Drop for LocalProcess {
    fn drop(&mut self) {
        self.group.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_of_old_kernels_marks_every_inherited_descriptor() {
        // In a forked child: marking descriptors is for a process about to exec.
        // SAFETY: the child makes only system calls, then `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: system calls on plain integers.
            let code = unsafe {
                // dup gives a copy without close-on-exec, as a launcher hands one on.
                let inherited = libc::dup(2);
                let high = libc::fcntl(inherited, libc::F_DUPFD, 200);
                libc::fcntl(high, libc::F_SETFD, 0);
                mark_each_below_the_soft_limit();
                let marked = |fd| libc::fcntl(fd, libc::F_GETFD) & libc::FD_CLOEXEC != 0;
                match (marked(inherited), marked(high), marked(2)) {
                    (true, true, false) => 0,
                    _ => 1,
                }
            };
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status:#x}");
    }
}
