//! toolhost's resident helper inside a Docker container (see
//! `host/src/backend/docker/protocol.rs` for the wire format).
//!
//! It is the container's main process and its PID 1 (no engine `init`),
//! reads requests on stdin and writes events on stdout, so one attached
//! stream serves every command of the session: no `docker exec` round trip
//! per call. It only starts and kills processes; it never opens a file for
//! the host. Built by `host/build.rs` with the standard library alone and
//! linked statically, so it runs in any image (busybox has no libc).
//!
//! **The channel is out of the commands' reach.** The commands run as the
//! same user, so the helper makes itself non-dumpable before anything else:
//! its `/proc/1/fd`, `mem` and `environ` then need `CAP_SYS_PTRACE`, which
//! no process in the container has (every capability is dropped, no new
//! privileges). As PID 1 of the container's PID namespace it cannot be
//! killed or stopped from inside (it installs no signal handler), and no
//! other process holds its stdin or stdout. Every event echoes the nonce
//! of its command's `SPAWN`, which the commands never see.
//!
//! **Each command** leads a session and process group of its own
//! (`setsid`: no controlling terminal) and gets exactly stdin (`/dev/null`),
//! stdout and stderr: every other descriptor is closed at `exec`. The group
//! is killed as a whole when the leader exits, and on a kill request (the
//! host's timeout, or a dropped handle). The leader stays unreaped until
//! the group is killed, so the group id cannot be reused in between.
//!
//! **Nothing outlives its command.** When a command ends, and before each
//! new one starts, every process that belongs to no running command (its
//! session is not a running command's, and no ancestor is a running
//! command's leader) is killed: a process that left its group with
//! `setsid` does not run into the next call. As PID 1 the helper also
//! reaps the orphans; a command's leader is left to its own waiter.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

const REQ_SPAWN: u8 = 1;
const REQ_KILL: u8 = 2;
const EV_READY: u8 = 0;
const EV_STARTED: u8 = 1;
const EV_STDOUT: u8 = 2;
const EV_STDERR: u8 = 3;
const EV_EXIT: u8 = 4;
const EV_SPAWN_ERROR: u8 = 5;

/// The bytes of a command's nonce.
const NONCE: usize = 16;
type Nonce = [u8; NONCE];

const SIGKILL: i32 = 9;
const P_ALL: i32 = 0;
const P_PID: i32 = 1;
const WNOHANG: i32 = 1;
const WEXITED: i32 = 4;
const WNOWAIT: i32 = 0x0100_0000;
const EINTR: i32 = 4;
const ECHILD: i32 = 10;
const PR_SET_DUMPABLE: i32 = 4;
const F_GETFD: i32 = 1;
const F_SETFD: i32 = 2;
const FD_CLOEXEC: i32 = 1;
const RLIMIT_NOFILE: i32 = 7;
const CLOSE_RANGE_CLOEXEC: u32 = 1 << 2;
// The same numbers on x86_64 and aarch64 (the unified table of new calls).
const SYS_PIDFD_SEND_SIGNAL: i64 = 424;
const SYS_PIDFD_OPEN: i64 = 434;
const SYS_CLOSE_RANGE: i64 = 436;
/// Where `si_pid` lies in a `siginfo_t` on 64-bit Linux.
const SI_PID_OFFSET: usize = 16;

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn waitid(idtype: i32, id: u32, info: *mut u8, options: i32) -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
    fn setsid() -> i32;
    fn getpid() -> i32;
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
    fn getrlimit(resource: i32, rlim: *mut [u64; 2]) -> i32;
    fn syscall(number: i64, ...) -> i64;
    fn close(fd: i32) -> i32;
}

type Out = Arc<Mutex<io::Stdout>>;

fn send(out: &Out, kind: u8, id: u32, nonce: &Nonce, payload: &[u8]) {
    let mut frame = Vec::with_capacity(4 + 5 + NONCE + payload.len());
    frame.extend_from_slice(&((5 + NONCE + payload.len()) as u32).to_le_bytes());
    frame.push(kind);
    frame.extend_from_slice(&id.to_le_bytes());
    frame.extend_from_slice(nonce);
    frame.extend_from_slice(payload);
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    if out.write_all(&frame).and_then(|_| out.flush()).is_err() {
        // The host is gone: nothing left to serve.
        std::process::exit(0);
    }
}

/// One command's process group.
struct Group {
    pgid: i32,
    /// The leader has not exited (nor been killed) yet.
    alive: Mutex<bool>,
}

impl Group {
    fn kill(&self) {
        let mut alive = self.alive.lock().unwrap_or_else(|e| e.into_inner());
        if *alive {
            // SAFETY: plain system call; the leader is unreaped, so the group id is ours.
            unsafe { kill(-self.pgid, SIGKILL) };
            *alive = false;
        }
    }

    fn running(&self) -> bool {
        *self.alive.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The commands, under one lock that starting a command, reaping an
/// orphan and sweeping survivors all take: a command being started is
/// never taken for a survivor, nor its leader reaped by the orphan reaper.
#[derive(Default)]
struct Commands {
    groups: HashMap<u32, Arc<Group>>,
    /// Leaders not reaped yet (by their own waiter).
    leaders: HashSet<i32>,
}

type Shared = Arc<Mutex<Commands>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Commands> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.data.split_at_checked(n)?;
        self.data = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> Option<String> {
        Some(String::from_utf8_lossy(self.bytes()?).into_owned())
    }
    fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.u32()?;
        (0..n).map(|_| self.string()).collect()
    }
}

fn pump(mut pipe: impl Read, out: Out, kind: u8, id: u32, nonce: Nonce, done: mpsc::Sender<()>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => send(&out, kind, id, &nonce, &buf[..n]),
        }
    }
    let _ = done.send(());
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn wait_exited_unreaped(pid: i32) {
    let mut info = [0u8; 128];
    loop {
        // SAFETY: `info` is large enough for a siginfo_t.
        let rc = unsafe { waitid(P_PID, pid as u32, info.as_mut_ptr(), WEXITED | WNOWAIT) };
        if rc == 0 || errno() != EINTR {
            return;
        }
    }
}

/// In the child before `exec`: a session of its own (no controlling
/// terminal), and every descriptor but 0, 1 and 2 closed at `exec`.
/// Async-signal-safe: system calls only.
fn detach() -> io::Result<()> {
    // SAFETY: plain system calls on integers.
    unsafe {
        if setsid() < 0 {
            return Err(io::Error::last_os_error());
        }
        // Marked, not closed: the standard library's pipe that reports a
        // failed exec is open too, and closes at exec by itself.
        if syscall(SYS_CLOSE_RANGE, 3i64, i64::from(u32::MAX), i64::from(CLOSE_RANGE_CLOEXEC)) == 0 {
            return Ok(());
        }
        // Linux before 5.11: each descriptor the soft limit allows.
        let mut limit = [0u64; 2];
        let top = if getrlimit(RLIMIT_NOFILE, &mut limit) == 0 { limit[0].min(1 << 20) as i32 } else { 1024 };
        for fd in 3..top {
            let flags = fcntl(fd, F_GETFD);
            if flags >= 0 && flags & FD_CLOEXEC == 0 {
                fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

fn spawn(out: &Out, shared: &Shared, spawned: &mpsc::Sender<()>, id: u32, mut req: Reader<'_>) {
    let nonce: Nonce = match req.take(NONCE).and_then(|n| n.try_into().ok()) {
        Some(n) => n,
        None => [0; NONCE],
    };
    let (Some(argv), Some(cwd), Some(env)) = (req.strings(), req.string(), req.strings()) else {
        send(out, EV_SPAWN_ERROR, id, &nonce, b"\x03malformed spawn request");
        return;
    };
    let Some((program, args)) = argv.split_first() else {
        send(out, EV_SPAWN_ERROR, id, &nonce, b"\x03empty argv");
        return;
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().filter_map(|kv| kv.split_once('=')))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: `detach` makes only async-signal-safe system calls.
    unsafe { cmd.pre_exec(detach) };
    if !cwd.is_empty() {
        cmd.current_dir(&cwd);
    }
    let mut commands = lock(shared);
    // What earlier commands left running goes before this one starts.
    sweep(&commands);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            drop(commands);
            let kind: u8 = match e.kind() {
                io::ErrorKind::NotFound => 1,
                io::ErrorKind::PermissionDenied => 2,
                _ => 3,
            };
            let mut payload = vec![kind];
            payload.extend_from_slice(e.to_string().as_bytes());
            send(out, EV_SPAWN_ERROR, id, &nonce, &payload);
            return;
        }
    };
    let pid = child.id() as i32;
    let group = Arc::new(Group { pgid: pid, alive: Mutex::new(true) });
    commands.groups.insert(id, group.clone());
    commands.leaders.insert(pid);
    drop(commands);
    let _ = spawned.send(());
    send(out, EV_STARTED, id, &nonce, &(pid as u32).to_le_bytes());
    let (done_tx, done_rx) = mpsc::channel();
    let mut readers = 0;
    if let Some(p) = child.stdout.take() {
        let (o, d) = (out.clone(), done_tx.clone());
        std::thread::spawn(move || pump(p, o, EV_STDOUT, id, nonce, d));
        readers += 1;
    }
    if let Some(p) = child.stderr.take() {
        let (o, d) = (out.clone(), done_tx.clone());
        std::thread::spawn(move || pump(p, o, EV_STDERR, id, nonce, d));
        readers += 1;
    }
    drop(done_tx);
    let (out, shared) = (out.clone(), shared.clone());
    std::thread::spawn(move || {
        wait_exited_unreaped(pid);
        group.kill();
        // Everything of this command, also what left its group or session.
        sweep(&lock(&shared));
        let code = match child.wait() {
            Ok(s) => s.code().unwrap_or_else(|| -s.signal().unwrap_or(0).max(1)),
            Err(_) => -1,
        };
        lock(&shared).leaders.remove(&pid);
        // Pipes still held elsewhere get a grace (the sweep killed their holders).
        let deadline = std::time::Instant::now() + Duration::from_millis(200);
        for _ in 0..readers {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                break;
            }
        }
        lock(&shared).groups.remove(&id);
        send(&out, EV_EXIT, id, &nonce, &code.to_le_bytes());
    });
}

/// A process as `/proc/PID/stat` shows it.
struct Proc {
    ppid: i32,
    session: i32,
    zombie: bool,
    start: u64,
}

fn stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name, which may hold anything: state, ppid, pgrp,
    // session, … and the start time as the 20th field after the state.
    let fields: Vec<&str> = text.get(text.rfind(')')? + 2..)?.split(' ').collect();
    Some(Proc {
        zombie: fields.first()? == &"Z",
        ppid: fields.get(1)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Kills every process that belongs to no running command, until a pass
/// finds none (a process may fork while it is being killed).
fn sweep(commands: &Commands) {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { getpid() };
    let running: HashSet<i32> = commands.groups.values().filter(|g| g.running()).map(|g| g.pgid).collect();
    for _ in 0..200 {
        let procs: HashMap<i32, Proc> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|pid| Some((pid, stat(pid)?)))
            .collect();
        let belongs = |pid: i32| {
            let mut at = pid;
            // Bounded: a chain through processes that come and go cannot loop for ever.
            for _ in 0..procs.len() {
                let Some(p) = procs.get(&at) else { return false };
                if running.contains(&at) || running.contains(&p.session) {
                    return true;
                }
                if p.ppid <= 1 || p.ppid == me {
                    return false;
                }
                at = p.ppid;
            }
            false
        };
        let mut killed = 0;
        for (&pid, p) in &procs {
            if pid == me || pid == 1 || p.zombie || belongs(pid) {
                continue;
            }
            kill_if_same(pid, p.start);
            killed += 1;
        }
        if killed == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGKILLs `pid` through a pidfd, once it is known to still be the
/// process that started at `start` (a pid is never signalled after reuse).
fn kill_if_same(pid: i32, start: u64) {
    // SAFETY: pidfd_open takes a pid and flags; the descriptor is closed below.
    let fd = unsafe { syscall(SYS_PIDFD_OPEN, i64::from(pid), 0i64) } as i32;
    if fd < 0 {
        return;
    }
    if stat(pid).is_some_and(|p| p.start == start) {
        // SAFETY: a valid pidfd, no siginfo.
        unsafe { syscall(SYS_PIDFD_SEND_SIGNAL, i64::from(fd), i64::from(SIGKILL), std::ptr::null::<u8>(), 0i64) };
    }
    // SAFETY: closes the descriptor opened above.
    unsafe { close(fd) };
}

/// As PID 1, reaps every orphan that ends; a command's leader is left to
/// its waiter, which reaps it once its group is killed. With no child at
/// all it waits for the next command (`spawned`).
fn reap_orphans(shared: Shared, spawned: mpsc::Receiver<()>) {
    let mut info = [0u8; 128];
    loop {
        // SAFETY: `info` is large enough for a siginfo_t.
        let rc = unsafe { waitid(P_ALL, 0, info.as_mut_ptr(), WEXITED | WNOWAIT) };
        if rc != 0 {
            if errno() == ECHILD {
                if spawned.recv().is_err() {
                    return;
                }
                while spawned.try_recv().is_ok() {}
            }
            continue;
        }
        let pid = i32::from_ne_bytes(info[SI_PID_OFFSET..SI_PID_OFFSET + 4].try_into().expect("4 bytes"));
        let commands = lock(&shared);
        if commands.leaders.contains(&pid) {
            drop(commands);
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        // SAFETY: reaps one child that has exited, or nothing.
        unsafe { waitpid(pid, std::ptr::null_mut(), WNOHANG) };
    }
}

fn main() {
    // First of all: out of reach of the commands' /proc (see the module docs).
    // SAFETY: prctl with integer arguments.
    if unsafe { prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        eprintln!("toolhost helper: cannot make itself non-dumpable: {}", io::Error::last_os_error());
        std::process::exit(1);
    }
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    let shared: Shared = Arc::default();
    let (spawned, spawns) = mpsc::channel();
    {
        let shared = shared.clone();
        std::thread::spawn(move || reap_orphans(shared, spawns));
    }
    send(&out, EV_READY, 0, &[0; NONCE], &[]);
    let mut stdin = io::stdin().lock();
    loop {
        let mut len = [0u8; 4];
        if stdin.read_exact(&mut len).is_err() {
            break;
        }
        let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
        if body.len() < 5 || stdin.read_exact(&mut body).is_err() {
            break;
        }
        let id = u32::from_le_bytes([body[1], body[2], body[3], body[4]]);
        match body[0] {
            REQ_SPAWN => spawn(&out, &shared, &spawned, id, Reader { data: &body[5..] }),
            REQ_KILL => {
                let group = lock(&shared).groups.get(&id).cloned();
                if let Some(group) = group {
                    group.kill();
                }
            }
            _ => break,
        }
    }
    // The host closed the stream (it exited or crashed): end every command.
    // As PID 1, its exit ends everything else in the container too.
    for group in lock(&shared).groups.values() {
        group.kill();
    }
}
