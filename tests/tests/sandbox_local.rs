//! The local sandbox (`[backend.local] sandbox = "on"`), attacked with real
//! processes through the built-in Bash tool: writes outside the working
//! directory, reads of `~/.ssh` and of toolhost's own environment, TCP and
//! UDP connections to listeners on the host, a fork bomb, a memory hog, a
//! process that ignores SIGTERM and one that escapes its process group to
//! outlive its call — each refused or contained, with the host's file or
//! listener proven untouched. The same attacks with the sandbox off (or
//! `network = true`) show each test can fail.
//!
//! The Bash and file-tool suites also run sandboxed: `.ci/run` runs them
//! with `TOOLHOST_TEST_SANDBOX=on` (see `toolhost_e2e::Scratch::settings`).

use std::io::Read as _;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::permission::Mode;
use toolhost::response::{ResultState, ToolResponse};
use toolhost::settings::Settings;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, root, toolhost_bin};

/// Settings with the sandbox on and `extra` keys in `[backend.local]`.
fn sandboxed(scratch: &Scratch, extra: &[(&str, toml::Value)]) -> Settings {
    let mut s = scratch.settings();
    let mut local = toml::Table::new();
    local.insert("sandbox".into(), "on".into());
    for (key, value) in extra {
        local.insert((*key).into(), value.clone());
    }
    s.backend.options.insert("local".into(), toml::Value::Table(local));
    s
}

/// Settings with the sandbox off, whatever `TOOLHOST_TEST_SANDBOX` says.
fn unsandboxed(scratch: &Scratch) -> Settings {
    let mut s = scratch.settings();
    s.backend.set_option("local", "sandbox", "off");
    s
}

async fn bash(host: &Toolhost, command: &str, timeout_ms: u64) -> ToolResponse {
    let input = json!({ "command": command, "timeout": timeout_ms });
    host.call(CallRequest::new("Bash", input.to_string()).mode(Mode::Bypass))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response()
}

fn exit_code(r: &ToolResponse) -> Value {
    r.metadata.get("exit_code").cloned().unwrap_or(Value::Null)
}

/// A marker unique to one test run, to find its processes in `/proc`.
fn marker(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("toolhost-{name}-{nanos}")
}

/// The pids of live processes whose command line contains `marker`
/// (zombies have none).
fn pids_with(marker: &str) -> Vec<libc::pid_t> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(marker)
            && let Ok(pid) = entry.file_name().to_string_lossy().parse()
        {
            pids.push(pid);
        }
    }
    pids
}

fn processes_with(marker: &str) -> usize {
    pids_with(marker).len()
}

/// Whether the sandbox can make cgroup v1 groups here (root, v1 `pids`).
fn cgroups_here() -> bool {
    let writable = std::fs::metadata("/sys/fs/cgroup/pids/cgroup.procs").is_ok();
    // SAFETY: getuid has no preconditions.
    writable && unsafe { libc::getuid() } == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_land_only_in_the_working_directory_and_the_private_tmp() {
    let scratch = Scratch::new();
    let canary = scratch.outside("canary.txt");
    std::fs::write(&canary, "untouched").unwrap();
    let planted = scratch.outside("planted.txt");
    let in_tmp = std::env::temp_dir().join(marker("tmp-write"));
    let host = scratch.host(sandboxed(&scratch, &[])).await;

    let attack = format!(
        "echo pwned > {c}; echo pwned >> {c}; rm -f {c}; mv {c} {c}.moved; truncate -s 0 {c}; echo x > {p}; touch {t}; \
         ln -s /etc {w}/etc-link 2>/dev/null; echo done",
        c = canary.display(),
        p = planted.display(),
        t = in_tmp.display(),
        w = scratch.work().display()
    );
    let r = bash(&host, &attack, 10_000).await;
    assert!(r.text().contains("Permission denied"), "{}", r.text());
    // stdout and stderr are two streams: their lines may come in either order.
    assert!(r.text().lines().any(|l| l == "done"), "{}", r.text());
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "untouched");
    assert!(!planted.exists() && !in_tmp.exists());
    assert!(!scratch.outside("canary.txt.moved").exists());

    // Inside the working directory and the private TMPDIR, everything works.
    let ok = "echo in > in.txt && mkdir -p sub && mv in.txt sub/ && cat sub/in.txt && \
              echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo $TMPDIR && echo e >/dev/null";
    let r = bash(&host, ok, 10_000).await;
    assert_eq!(r.state, ResultState::Success, "{}", r.text());
    let text = r.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["in", "t"], "{}", r.text());
    assert!(lines[2].contains("toolhost-sandbox-"), "TMPDIR is the private one: {}", r.text());
    assert!(!lines[2].starts_with(&*scratch.work().display().to_string()));
    assert_eq!(std::fs::read_to_string(scratch.work().join("sub/in.txt")).unwrap(), "in\n");

    // Unsandboxed, the same attack lands: the test can fail.
    let open = scratch.host(unsandboxed(&scratch)).await;
    let r = bash(&open, &format!("echo pwned > {}", canary.display()), 10_000).await;
    assert_eq!(r.state, ResultState::Success, "{}", r.text());
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "pwned\n");
}

/// Runs the CLI with `HOME` at the scratch folder and `SECRET_TOKEN` in its
/// own environment, as a user would with keys in `~/.ssh`.
fn cli_bash(scratch: &Scratch, sandbox: &str, command: &str) -> (bool, String) {
    let out = Command::new(toolhost_bin())
        .current_dir(scratch.work())
        .arg("--cache-dir")
        .arg(root().join("target/test-cache"))
        .args(["--sandbox", sandbox, "call", "Bash", &json!({ "command": command }).to_string(), "--mode", "bypass"])
        .env("HOME", scratch.dir.path())
        .env("SECRET_TOKEN", "hunter2-token")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("running toolhost");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn secrets_in_home_and_the_hosts_environment_are_not_readable() {
    let scratch = Scratch::new();
    let home = scratch.dir.path();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE-KEY-MATERIAL").unwrap();
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), "AWS-SECRET-MATERIAL").unwrap();
    std::fs::write(home.join("notes.txt"), "plain notes").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh"), scratch.work().join("keys")).unwrap();
    let attack = "cat ~/.ssh/id_ed25519; cat keys/id_ed25519; cat ~/.aws/credentials; \
                  cp ~/.ssh/id_ed25519 stolen; mv ~/.ssh ~/.ssh2; tr '\\0' ' ' < /proc/$PPID/environ; \
                  cat ~/notes.txt; cat /etc/hostname >/dev/null && echo etc-readable";

    let (_, text) = cli_bash(&scratch, "on", attack);
    for secret in ["PRIVATE-KEY-MATERIAL", "AWS-SECRET-MATERIAL", "hunter2-token"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert!(text.contains("plain notes") && text.contains("etc-readable"), "reads elsewhere work: {text}");
    assert!(!scratch.work().join("stolen").exists());
    assert!(home.join(".ssh/id_ed25519").exists(), "the secret stays where it was");

    // Unsandboxed, the same command reads them all.
    let (_, text) = cli_bash(&scratch, "off", attack);
    for secret in ["PRIVATE-KEY-MATERIAL", "AWS-SECRET-MATERIAL", "hunter2-token"] {
        assert!(text.contains(secret), "{secret} expected without the sandbox: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_connection_reaches_a_listener_on_the_host() {
    let scratch = Scratch::new();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tcp_port, udp_port) = (tcp.local_addr().unwrap().port(), udp.local_addr().unwrap().port());
    let command = format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{tcp_port}'; bash -c 'echo hi > /dev/udp/127.0.0.1/{udp_port}'; \
         python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"/run/docker.sock\")'; echo end"
    );

    let host = scratch.host(sandboxed(&scratch, &[])).await;
    let r = bash(&host, &command, 10_000).await;
    assert!(r.text().contains("Permission denied"), "{}", r.text());
    assert!(r.text().contains("PermissionError"), "no Unix socket either: {}", r.text());
    assert!(tcp.accept().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), "a TCP connection got through");
    let mut buf = [0u8; 16];
    assert!(udp.recv(&mut buf).is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), "a datagram got through");

    // With `network = true` the same command connects: the test can fail.
    let host = scratch.host(sandboxed(&scratch, &[("network", true.into())])).await;
    let r = bash(&host, &command, 10_000).await;
    assert!(r.text().ends_with("end\n"), "{}", r.text());
    let (mut conn, _) = tcp.accept().expect("with network = true the connection arrives");
    conn.set_nonblocking(false).unwrap();
    let mut got = String::new();
    conn.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hi\n");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(udp.recv(&mut buf).unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_held_to_max_processes_and_swept_away() {
    if !cgroups_here() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with cgroup v1 pids: the sandbox must bound processes"
        );
        eprintln!(
            "skipped: the sandbox bounds root's processes only through cgroup v1 groups, which cannot be made here"
        );
        return;
    }
    let scratch = Scratch::new();
    let host = scratch.host(sandboxed(&scratch, &[("max_processes", 40.into())])).await;
    let mark = marker("bomb");
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done, mark) = (peak.clone(), done.clone(), mark.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(processes_with(&mark), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let bomb = format!("bash -c 'exec -a {mark} bash -c \"f() {{ f | f & }}; f; sleep 60\"'");
    let r = bash(&host, &bomb, 3_000).await;
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    assert_eq!(r.metadata["timed_out"], true, "{}", r.text());
    let peak = peak.load(Ordering::Relaxed);
    assert!(peak > 5 && peak <= 40, "the bomb ran, held to 40 processes: peak {peak}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&mark) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_with(&mark), 0, "every process of the bomb is gone");
    let r = bash(&host, "echo alive", 10_000).await;
    assert_eq!(r.text(), "alive\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_hog_is_stopped_at_max_memory_bytes() {
    let scratch = Scratch::new();
    let host = scratch.host(sandboxed(&scratch, &[("max_memory_bytes", (256i64 << 20).into())])).await;
    let start = Instant::now();
    // `tail` keeps a whole line in memory, and a gigabyte of zeros is one line.
    let r = bash(&host, "head -c 2000000000 /dev/zero | tail", 60_000).await;
    assert_eq!(r.state, ResultState::Error, "{}", r.text());
    // RLIMIT_DATA makes the allocation fail; the cgroup's limit, where there
    // is one, may kill the process first (SIGKILL: exit 137).
    assert!(r.text().contains("memory exhausted") || exit_code(&r) == 137, "{}", r.text());
    assert!(start.elapsed() < Duration::from_secs(30));
    let r = bash(&host, "head -c 100000000 /dev/zero | tail | wc -c", 60_000).await;
    assert_eq!(r.text(), "100000000\n", "a process within the limit runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_ignores_sigterm_or_leaves_its_group_is_killed() {
    let scratch = Scratch::new();
    let host = scratch.host(sandboxed(&scratch, &[])).await;
    let stubborn = marker("stubborn");
    let start = Instant::now();
    let r = bash(&host, &format!("trap '' TERM; bash -c 'trap \"\" TERM; exec -a {stubborn} sleep 60'"), 500).await;
    assert_eq!(r.metadata["timed_out"], true, "{}", r.text());
    assert!(start.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(processes_with(&stubborn), 0, "the SIGTERM-proof process is gone");

    if !cgroups_here() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root with cgroup v1 pids: escapees must be swept");
        eprintln!("skipped the setsid part: no cgroup v1 groups here");
        return;
    }
    // `setsid` leaves the process group, which is all the timeout kills
    // unsandboxed; the sandbox's cgroup sweep still finds it. (The pause
    // lets the escapee leave the group before its parent ends.)
    let escapee = marker("escapee");
    let escape = |host: Toolhost| {
        let command = format!("setsid -f bash -c 'exec -a {escapee} sleep 60' >/dev/null 2>&1; sleep 0.5; echo left");
        async move {
            let r = bash(&host, &command, 10_000).await;
            assert_eq!((r.text().as_str(), exit_code(&r)), ("left\n", json!(0)));
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    escape(host).await;
    assert_eq!(processes_with(&escapee), 0, "the process that left its group is gone");

    escape(scratch.host(unsandboxed(&scratch)).await).await;
    assert_eq!(processes_with(&escapee), 1, "unsandboxed, it outlives its call (the test can fail)");
    for pid in pids_with(&escapee) {
        // SAFETY: kill with a pid this test started and a signal number.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Runs the CLI where `landlock_create_ruleset` fails with `ENOSYS`, as on
/// a kernel without Landlock (a seccomp filter installed before `exec`).
fn cli_without_landlock(scratch: &Scratch, sandbox: &str) -> (bool, String) {
    let mut cmd = Command::new(toolhost_bin());
    cmd.current_dir(scratch.work())
        .arg("--cache-dir")
        .arg(root().join("target/test-cache"))
        .args(["--sandbox", sandbox, "call", "Bash", r#"{"command":"echo ran"}"#, "--mode", "bypass"])
        .env("HOME", scratch.dir.path())
        .stdin(Stdio::null());
    // SAFETY: prctl only, on a filter built before the fork.
    unsafe {
        cmd.pre_exec(|| {
            let filter = [
                libc::sock_filter { code: 0x20, jt: 0, jf: 0, k: 0 }, // ld nr
                libc::sock_filter { code: 0x15, jt: 0, jf: 1, k: libc::SYS_landlock_create_ruleset as u32 },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32 },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW },
            ];
            let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut _ };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("running toolhost");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn on_without_landlock_refuses_to_start_and_auto_warns() {
    let scratch = Scratch::new();
    let (ok, text) = cli_without_landlock(&scratch, "on");
    assert!(!ok, "{text}");
    assert!(text.contains("needs Landlock") && text.contains("does not offer"), "{text}");
    assert!(!text.contains("ran"), "{text}");

    let (ok, text) = cli_without_landlock(&scratch, "auto");
    assert!(ok, "{text}");
    assert!(text.contains("ran"), "{text}");
    assert!(text.contains("unconfined"), "auto says it runs unconfined: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_of_a_read_only_call_writes_nowhere_but_its_tmp() {
    use toolhost::backend::local::LocalBackend;
    use toolhost::backend::local::sandbox::{Sandbox, SandboxMode, SandboxSettings};
    use toolhost::backend::{Backend, ExecRequest};

    let scratch = Scratch::new();
    let work = scratch.work();
    let settings = SandboxSettings { sandbox: SandboxMode::On, ..Default::default() };
    let sandbox =
        Sandbox::from_settings(&settings, scratch.dir.path(), std::slice::from_ref(&work), Default::default())
            .expect("the sandbox starts")
            .expect("on");
    let backend = LocalBackend::new(work.clone(), scratch.dir.path().into()).with_sandbox(Arc::new(sandbox));
    let run = |read_only: bool| ExecRequest {
        argv: vec!["/bin/sh".into(), "-c".into(), "touch made; touch \"$TMPDIR/scratch\" && echo tmp-ok".into()],
        cwd: None,
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        timeout: Duration::from_secs(10),
        max_output_bytes: 0,
        write_roots: vec![],
        read_only,
    };
    let output = |mut p: Box<dyn toolhost::backend::Process>| async move {
        let mut text = Vec::new();
        while let Some(piece) = p.next_output().await {
            match piece {
                toolhost::backend::OutputPiece::Stdout(b) | toolhost::backend::OutputPiece::Stderr(b) => text.extend(b),
            }
        }
        p.wait().await;
        String::from_utf8_lossy(&text).into_owned()
    };
    let text = output(backend.spawn(&run(true)).await.unwrap()).await;
    assert!(text.contains("Permission denied") && text.contains("tmp-ok"), "{text}");
    assert!(!work.join("made").exists(), "a read-only call's process wrote in the working directory");

    let text = output(backend.spawn(&run(false)).await.unwrap()).await;
    assert!(work.join("made").exists(), "the same process in a call that may write does: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_crashed_host_left_is_removed_at_start() {
    // A pid that no longer runs: a child that has exited and been reaped.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let tmp = std::env::temp_dir().join(format!("toolhost-sandbox-{dead}-left"));
    std::fs::create_dir_all(tmp.join("sub")).unwrap();
    std::fs::write(tmp.join("sub/file"), "x").unwrap();
    let mark = marker("left-running");
    let mut cgroup = None;
    if cgroups_here() {
        let group = std::path::PathBuf::from(format!("/sys/fs/cgroup/pids/toolhost-sandbox-{dead}-0"));
        std::fs::create_dir_all(group.join("0")).unwrap();
        let mut sleeper = Command::new("bash").args(["-c", &format!("exec -a {mark} sleep 60")]).spawn().unwrap();
        std::fs::write(group.join("0/cgroup.procs"), sleeper.id().to_string()).unwrap();
        std::thread::spawn(move || sleeper.wait());
        cgroup = Some(group);
    } else {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root with cgroup v1 pids");
    }

    let scratch = Scratch::new();
    let host = scratch.host(sandboxed(&scratch, &[])).await;
    assert!(!tmp.exists(), "the dead host's temporary directory is removed");
    if let Some(group) = cgroup {
        assert!(!group.exists(), "the dead host's cgroup is removed");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(processes_with(&mark), 0, "what still ran in it is killed");
    }
    assert_eq!(bash(&host, "echo fine", 10_000).await.text(), "fine\n");
}
