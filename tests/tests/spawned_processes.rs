//! What a process that a tool starts can reach of the toolhost that started
//! it, in every backend and sandbox mode: the user's terminal (it must not
//! type into it with `TIOCSTI`, nor draw on it with escape sequences) and
//! the descriptors toolhost inherited from whatever launched it (it must get
//! exactly stdin, stdout and stderr). Each attack runs through the real
//! `toolhost` CLI and the built-in Bash tool: on a real pseudo-terminal that
//! is the CLI's controlling terminal, or with a connected loopback socket
//! inherited as descriptor 6; with the local sandbox off, on, and on the
//! Docker backend where an engine answers (`source .ci/docker.sh`).

use std::ffi::CStr;
use std::fs::File;
use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use toolhost_e2e::{Scratch, docker_engine, docker_image, root, toolhost_bin};

/// Where the CLI runs the command.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Place {
    Unsandboxed,
    Sandboxed,
    Docker,
}

impl Place {
    /// The local backend with the sandbox off and on, and the Docker backend
    /// where an engine answers (under `CI=true` it must).
    fn all() -> Vec<Place> {
        let mut places = vec![Place::Unsandboxed, Place::Sandboxed];
        if docker_engine() {
            places.push(Place::Docker);
        }
        places
    }

    fn args(self) -> Vec<String> {
        match self {
            Place::Unsandboxed => vec!["--sandbox".into(), "off".into()],
            Place::Sandboxed => vec!["--sandbox".into(), "on".into()],
            Place::Docker => vec!["--backend".into(), "docker".into(), "--docker-image".into(), docker_image()],
        }
    }
}

/// The CLI, set to run `command` with the Bash tool in bypass mode.
fn cli(scratch: &Scratch, place: Place, command: &str) -> Command {
    let mut cmd = Command::new(toolhost_bin());
    cmd.current_dir(scratch.work())
        .arg("--cache-dir")
        .arg(root().join("target/test-cache"))
        .args(place.args())
        .args(["--mode", "bypass", "call", "Bash"])
        .arg(serde_json::json!({ "command": command, "timeout": 60_000 }).to_string())
        .env("HOME", scratch.dir.path())
        .env_remove("XDG_STATE_HOME");
    cmd
}

/// A pseudo-terminal pair, both ends close-on-exec, the terminal in raw
/// mode: no echo and no line editing, so every byte pushed into its input
/// queue stays there to be counted.
struct Pty {
    master: File,
    slave: OwnedFd,
    /// `/dev/pts/N`.
    path: String,
}

fn pty() -> Pty {
    // SAFETY: plain calls on the descriptor they return; `name` is a
    // NUL-terminated buffer ptsname_r fills; `t` is plain data tcgetattr fills.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(master >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = File::from_raw_fd(master);
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0);
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()), 0);
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(slave >= 0, "opening the terminal: {}", std::io::Error::last_os_error());
        let slave = OwnedFd::from_raw_fd(slave);
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(slave.as_raw_fd(), &mut t), 0);
        libc::cfmakeraw(&mut t);
        assert_eq!(libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &t), 0);
        let path = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        Pty { master, slave, path }
    }
}

impl Pty {
    /// Runs `cmd` with this terminal as its controlling terminal and its
    /// stdin, stdout and stderr, as a shell starts a program; returns
    /// whether it succeeded and everything it (or anything else) wrote to
    /// the terminal.
    fn run(&self, mut cmd: Command) -> (bool, Vec<u8>) {
        let end = || Stdio::from(self.slave.try_clone().expect("dup of the terminal"));
        cmd.stdin(end()).stdout(end()).stderr(end());
        // SAFETY: setsid and ioctl only, in the child before exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let mut master = self.master.try_clone().expect("dup of the master");
            let done = done.clone();
            // Read as it is written (a full terminal would block toolhost),
            // until it has ended and nothing more comes for 200 ms.
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let mut poll = libc::pollfd { fd: master.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd.
                    let ready = unsafe { libc::poll(&mut poll, 1, 200) };
                    if ready > 0 {
                        match master.read(&mut buf) {
                            Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
                            _ => break,
                        }
                    } else if done.load(Ordering::Acquire) {
                        break;
                    }
                }
                seen
            })
        };
        let status = cmd.spawn().expect("starting toolhost").wait().expect("waiting for toolhost");
        done.store(true, Ordering::Release);
        (status.success(), reader.join().expect("the terminal reader"))
    }

    /// What waits in the terminal's input queue: what its shell would read
    /// and run next.
    fn queued_input(&self) -> Vec<u8> {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int.
        assert_eq!(unsafe { libc::ioctl(self.slave.as_raw_fd(), libc::FIONREAD, &mut n) }, 0);
        let mut queued = vec![0u8; n.max(0) as usize];
        if n > 0 {
            // SAFETY: reads at most the bytes the buffer holds.
            let got = unsafe { libc::read(self.slave.as_raw_fd(), queued.as_mut_ptr().cast(), queued.len()) };
            queued.truncate(got.max(0) as usize);
        }
        queued
    }
}

/// Pushes `touch CANARY` into the terminal with `TIOCSTI` through every
/// way a process might have to it (`/dev/tty`, its stdin, stdout and
/// stderr, and the terminal's own path when given) and writes a coloured
/// mark to each it could open; says on stdout what each attempt did.
const INJECT: &str = r#"
import fcntl, os, sys, termios
line = ("touch %s\n" % sys.argv[1]).encode()
for name in ["/dev/tty", "0", "1", "2"] + sys.argv[2:]:
    fd = None
    try:
        if name.isdigit():
            fd = int(name)
        else:
            try:
                fd = os.open(name, os.O_RDWR | os.O_NOCTTY)
            except OSError:
                fd = os.open(name, os.O_RDONLY | os.O_NOCTTY)
        for byte in line:
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))
        print("INJECTED through", name)
    except OSError as e:
        print("refused", name, e.strerror)
    if fd is not None and not name.isdigit():
        try:
            os.write(fd, b"\x1b[33mTTY-MARK\n")
        except OSError:
            pass
"#;

/// Fails listing every place where `attack` found something wrong, after
/// trying them all.
fn in_every_place(attack: impl Fn(Place) -> Vec<String>) {
    let failures: Vec<String> = Place::all()
        .into_iter()
        .flat_map(|place| attack(place).into_iter().map(move |f| format!("{place:?}: {f}")))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_command_cannot_type_into_or_draw_on_the_users_terminal() {
    let python = if std::path::Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    in_every_place(|place| {
        let scratch = Scratch::new();
        let canary = scratch.outside("typed-by-a-command");
        std::fs::write(scratch.work().join("inject.py"), INJECT).unwrap();
        let terminal = pty();
        // With the sandbox off a process has the user's rights, and root's
        // CAP_SYS_ADMIN lets TIOCSTI reach any terminal it can name: only
        // the sandbox is asked to hold against that.
        let by_name = if place == Place::Sandboxed { terminal.path.as_str() } else { "" };
        let command = format!(
            "if command -v {python} >/dev/null; then {python} inject.py {canary} {by_name}; else echo no python; fi; \
             printf 'A\\033]0;PWNED-TITLE\\007B\\033[31mRED-MARK\\n'; printf '\\033[32mERR-MARK\\n' >&2; \
             printf '\\033[34mSH-TTY-MARK\\n' > /dev/tty; echo end",
            canary = canary.display()
        );
        let (ok, shown) = terminal.run(cli(&scratch, place, &command));
        let shown = String::from_utf8_lossy(&shown);
        let mut failures = Vec::new();
        let queued = terminal.queued_input();
        if !queued.is_empty() {
            failures.push(format!(
                "a command typed {:?} into the user's terminal, for its shell to run",
                String::from_utf8_lossy(&queued)
            ));
        }
        for raw in ["\x1b]0;PWNED", "\x1b[31mRED-MARK", "\x1b[32mERR-MARK", "\x1b[33mTTY-MARK", "\x1b[34mSH-TTY"] {
            if shown.contains(raw) {
                failures.push(format!("{raw:?} reached the terminal raw"));
            }
        }
        let attack_ran = place == Place::Docker || shown.contains("refused /dev/tty") || shown.contains("INJECTED");
        let escaped = shown.contains("\\x1b[31mRED-MARK") && shown.contains("\\x1b[32mERR-MARK");
        if !ok || !shown.contains("end") || !attack_ran || !escaped || shown.contains("INJECTED") || canary.exists() {
            failures.push("the command did not run as expected, or injected (see above)".into());
        }
        if !failures.is_empty() {
            failures.push(format!("the terminal showed: {shown:?}"));
        }
        failures
    });
}

#[test]
fn a_command_gets_only_stdin_stdout_and_stderr() {
    in_every_place(|place| {
        let scratch = Scratch::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let mut cmd = cli(&scratch, place, "echo x >&6; echo written=$?; ls /proc/self/fd");
        let fd = client.as_raw_fd();
        // SAFETY: dup2 and fcntl only, in the child before exec.
        unsafe {
            cmd.pre_exec(move || {
                // As a launcher hands on a descriptor: at 6, not close-on-exec.
                let rc = if fd == 6 { libc::fcntl(6, libc::F_SETFD, 0) } else { libc::dup2(fd, 6) };
                if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
            });
        }
        let out: Output = cmd.stdin(Stdio::null()).output().expect("running toolhost");
        drop(client);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        server.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut received = Vec::new();
        let _ = server.read_to_end(&mut received);
        let mut failures = Vec::new();
        if !received.is_empty() || text.contains("written=0") {
            failures.push(format!("the listener received {received:?} through an inherited socket"));
        }
        let fds: Vec<&str> = text.lines().filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())).collect();
        // `ls` lists its own descriptors: the three standard ones and the folder it reads.
        if fds != ["0", "1", "2", "3"] {
            failures.push(format!("the command had descriptors {fds:?}"));
        }
        if !failures.is_empty() {
            failures.push(format!("its output: {text}"));
        }
        failures
    });
}

/// The stdio server of an `[mcp_servers.NAME]` table is not trusted either
/// (docs/security.md, *Who is trusted*): started by `toolhost list` with a
/// connected loopback socket inherited as descriptor 6, it must get exactly
/// its protocol pipes and stderr, and lead a session of its own (no
/// controlling terminal to type into).
#[test]
fn an_upstream_server_gets_only_its_pipes_and_no_terminal() {
    let scratch = Scratch::new();
    let seen = scratch.outside("upstream-saw");
    let script = format!(
        "echo x >&6 && echo written >> {seen}; ls /proc/self/fd >> {seen}; \
         [ \"$(cut -d' ' -f6 /proc/$$/stat)\" = \"$$\" ] && echo session-leader >> {seen}; \
         exec {fixture} --stdio --conformance",
        seen = seen.display(),
        fixture = env!("CARGO_BIN_EXE_mcp_fixture"),
    );
    std::fs::write(
        scratch.work().join("toolhost.toml"),
        format!("[mcp_servers.fd]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {script:?}]\n"),
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let mut cmd = Command::new(toolhost_bin());
    cmd.current_dir(scratch.work())
        .arg("--cache-dir")
        .arg(root().join("target/test-cache"))
        .args(["list", "--json"])
        .env("HOME", scratch.dir.path())
        .env_remove("XDG_STATE_HOME");
    let fd = client.as_raw_fd();
    // SAFETY: dup2 and fcntl only, in the child before exec.
    unsafe {
        cmd.pre_exec(move || {
            let rc = if fd == 6 { libc::fcntl(6, libc::F_SETFD, 0) } else { libc::dup2(fd, 6) };
            if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
        });
    }
    let out = cmd.stdin(Stdio::null()).output().expect("running toolhost");
    drop(client);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && listing.contains("mcp__fd__"), "the server did not serve: {out:?}");
    server.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut received = Vec::new();
    let _ = server.read_to_end(&mut received);
    let seen = std::fs::read_to_string(&seen).expect("the server's notes");
    assert!(received.is_empty() && !seen.contains("written"), "the listener received {received:?}: {seen}");
    let fds: Vec<&str> = seen.lines().filter(|l| l.bytes().all(|b| b.is_ascii_digit())).collect();
    assert_eq!(fds, ["0", "1", "2", "3"], "the server's descriptors (ls lists its own 3): {seen}");
    assert!(seen.contains("session-leader"), "the server shares toolhost's session (and terminal): {seen}");
}
