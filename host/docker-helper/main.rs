//! toolhost's resident helper inside a Docker container (see
//! `host/src/backend/docker/protocol.rs` for the wire format).
//!
//! It is the container's main process (under the engine's `init`), reads
//! requests on stdin and writes events on stdout, so one attached stream
//! serves every command of the session: no `docker exec` round trip per
//! call. It only starts and kills processes; it never opens a file for
//! the host. Built by `host/build.rs` with the standard library alone and
//! linked statically, so it runs in any image (busybox has no libc).
//!
//! Each command leads its own process group; the group is killed as a
//! whole when the leader exits, and on a kill request (the host's
//! timeout, or a dropped handle). The leader stays unreaped until the
//! group is killed, so the group id cannot be reused in between.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const REQ_SPAWN: u8 = 1;
const REQ_KILL: u8 = 2;
const EV_READY: u8 = 0;
const EV_STARTED: u8 = 1;
const EV_STDOUT: u8 = 2;
const EV_STDERR: u8 = 3;
const EV_EXIT: u8 = 4;
const EV_SPAWN_ERROR: u8 = 5;

const SIGKILL: i32 = 9;
const P_PID: i32 = 1;
const WEXITED: i32 = 4;
const WNOWAIT: i32 = 0x0100_0000;
const EINTR: i32 = 4;

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn waitid(idtype: i32, id: u32, info: *mut u8, options: i32) -> i32;
}

type Out = Arc<Mutex<io::Stdout>>;

fn send(out: &Out, kind: u8, id: u32, payload: &[u8]) {
    let mut frame = Vec::with_capacity(9 + payload.len());
    frame.extend_from_slice(&((5 + payload.len()) as u32).to_le_bytes());
    frame.push(kind);
    frame.extend_from_slice(&id.to_le_bytes());
    frame.extend_from_slice(payload);
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    if out.write_all(&frame).and_then(|_| out.flush()).is_err() {
        // The host is gone: nothing left to serve.
        std::process::exit(0);
    }
}

struct Group {
    pgid: i32,
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
}

struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.data.split_at_checked(4)?;
        self.data = rest;
        Some(u32::from_le_bytes(head.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        let (head, rest) = self.data.split_at_checked(n)?;
        self.data = rest;
        Some(head)
    }
    fn string(&mut self) -> Option<String> {
        Some(String::from_utf8_lossy(self.bytes()?).into_owned())
    }
    fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.u32()?;
        (0..n).map(|_| self.string()).collect()
    }
}

fn pump(mut pipe: impl Read, out: Out, kind: u8, id: u32, done: mpsc::Sender<()>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => send(&out, kind, id, &buf[..n]),
        }
    }
    let _ = done.send(());
}

fn wait_exited_unreaped(pid: i32) {
    let mut info = [0u8; 128];
    loop {
        // SAFETY: `info` is large enough for a siginfo_t.
        let rc = unsafe { waitid(P_PID, pid as u32, info.as_mut_ptr(), WEXITED | WNOWAIT) };
        if rc == 0 || io::Error::last_os_error().raw_os_error() != Some(EINTR) {
            return;
        }
    }
}

fn spawn(out: &Out, groups: &Arc<Mutex<HashMap<u32, Arc<Group>>>>, id: u32, mut req: Reader<'_>) {
    let (Some(argv), Some(cwd), Some(env)) = (req.strings(), req.string(), req.strings()) else {
        send(out, EV_SPAWN_ERROR, id, b"\x03malformed spawn request");
        return;
    };
    let Some((program, args)) = argv.split_first() else {
        send(out, EV_SPAWN_ERROR, id, b"\x03empty argv");
        return;
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().filter_map(|kv| kv.split_once('=')))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if !cwd.is_empty() {
        cmd.current_dir(&cwd);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let kind: u8 = match e.kind() {
                io::ErrorKind::NotFound => 1,
                io::ErrorKind::PermissionDenied => 2,
                _ => 3,
            };
            let mut payload = vec![kind];
            payload.extend_from_slice(e.to_string().as_bytes());
            send(out, EV_SPAWN_ERROR, id, &payload);
            return;
        }
    };
    let pid = child.id() as i32;
    let group = Arc::new(Group { pgid: pid, alive: Mutex::new(true) });
    groups.lock().unwrap_or_else(|e| e.into_inner()).insert(id, group.clone());
    send(out, EV_STARTED, id, &(pid as u32).to_le_bytes());
    let (done_tx, done_rx) = mpsc::channel();
    let mut readers = 0;
    if let Some(p) = child.stdout.take() {
        let (o, d) = (out.clone(), done_tx.clone());
        std::thread::spawn(move || pump(p, o, EV_STDOUT, id, d));
        readers += 1;
    }
    if let Some(p) = child.stderr.take() {
        let (o, d) = (out.clone(), done_tx.clone());
        std::thread::spawn(move || pump(p, o, EV_STDERR, id, d));
        readers += 1;
    }
    drop(done_tx);
    let (out, groups) = (out.clone(), groups.clone());
    std::thread::spawn(move || {
        wait_exited_unreaped(pid);
        group.kill();
        let code = match child.wait() {
            Ok(s) => s.code().unwrap_or_else(|| -s.signal().unwrap_or(0).max(1)),
            Err(_) => -1,
        };
        // Pipes held by a process that left the group (setsid) get a grace.
        let deadline = std::time::Instant::now() + Duration::from_millis(200);
        for _ in 0..readers {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                break;
            }
        }
        groups.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        send(&out, EV_EXIT, id, &code.to_le_bytes());
    });
}

fn main() {
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    let groups: Arc<Mutex<HashMap<u32, Arc<Group>>>> = Arc::default();
    send(&out, EV_READY, 0, &[]);
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
            REQ_SPAWN => spawn(&out, &groups, id, Reader { data: &body[5..] }),
            REQ_KILL => {
                let group = groups.lock().unwrap_or_else(|e| e.into_inner()).get(&id).cloned();
                if let Some(group) = group {
                    group.kill();
                }
            }
            _ => break,
        }
    }
    // The host closed the stream (it exited or crashed): end every command.
    for group in groups.lock().unwrap_or_else(|e| e.into_inner()).values() {
        group.kill();
    }
}
