//! The Docker backend (`[backend] kind = "docker"`) on a real engine, with
//! the busybox image `.ci/docker.sh` imports: the container's hardening,
//! attacks through the built-in tools (writes outside the working
//! directory, a symlink escape made inside the container, a host file that
//! is not bound, a connection to a listener on the host, a fork bomb, a
//! memory hog, a process ignoring SIGTERM, a command outliving its
//! timeout, a process one call leaves running that writes forged frames
//! into the helper's channel during the next, a command forging its own
//! result), each refused or contained with the host's file, listener or
//! the call's real result proven untouched; and the lifecycle (leftovers
//! removed at start, a dead container recreated, the container removed at
//! exit and when the host is killed). No engine: under `CI=true` these
//! fail, otherwise they skip.
//!
//! The Bash and file-tool suites also run on Docker: `.ci/run` runs them
//! with `TOOLHOST_TEST_BACKEND=docker` (see `toolhost_e2e::Scratch::settings`).

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::permission::Mode;
use toolhost::response::{ResultState, ToolResponse};
use toolhost::settings::Settings;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, docker_engine as engine, docker_image as image, toolhost_bin};

/// Settings on the Docker backend with `extra` keys in `[backend.docker]`.
fn on_docker(scratch: &Scratch, extra: &[(&str, toml::Value)]) -> Settings {
    let mut s = scratch.settings();
    s.backend.kind = "docker".into();
    let mut table = toml::Table::new();
    table.insert("image".into(), image().into());
    for (k, v) in extra {
        table.insert((*k).into(), v.clone());
    }
    s.backend.options = toml::Table::from_iter([("docker".to_string(), toml::Value::Table(table))]);
    s
}

async fn call(host: &Toolhost, tool: &str, input: Value) -> ToolResponse {
    host.call(CallRequest::new(tool, input.to_string()).mode(Mode::Bypass))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response()
}

async fn bash(host: &Toolhost, command: &str, timeout_ms: u64) -> ToolResponse {
    call(host, "Bash", json!({ "command": command, "timeout": timeout_ms })).await
}

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().expect("running docker");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether a container whose id starts with `short` exists (running or not).
fn container_exists(short: &str) -> bool {
    docker(&["ps", "-aq", "--no-trunc"]).lines().any(|id| id.starts_with(short))
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_hardened_as_the_owner_of_the_working_directory() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let owner = std::fs::metadata(scratch.work()).unwrap().uid();
    let r = bash(
        &host,
        "id -u; pwd; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /etc/x 2>&1; echo tmp > /tmp/t && cat /tmp/t; \
         ls /",
        20_000,
    )
    .await;
    let text = r.text();
    assert_eq!(r.state, ResultState::Success, "{text}");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(owner.to_string().as_str()), "{text}");
    assert_eq!(lines.next(), Some(scratch.work().display().to_string().as_str()), "same path inside: {text}");
    assert!(text.contains("CapEff:\t0000000000000000"), "every capability dropped: {text}");
    assert!(text.contains("NoNewPrivs:\t1"), "{text}");
    assert!(text.contains("Read-only file system"), "the image's root is read-only: {text}");
    assert!(text.contains("\ntmp\n"), "the private /tmp is writable: {text}");
    // Nothing of the host's root is there: the scratch folder's parent is /tmp, a tmpfs of the container.
    let r = bash(&host, &format!("ls {}", scratch.outside("").display()), 20_000).await;
    assert_eq!(r.text().trim(), "work", "only the working directory is bound: {}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_and_reads_outside_the_working_directory_reach_nothing_of_the_host() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let canary = scratch.outside("canary.txt");
    std::fs::write(&canary, "untouched").unwrap();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let c = canary.display();
    let r = bash(&host, &format!("cat {c}; echo pwned > {c}; rm -f {c}; echo done"), 20_000).await;
    // stdout and stderr are two streams: their lines may come in either order.
    assert!(r.text().contains("No such file or directory") && r.text().lines().any(|l| l == "done"), "{}", r.text());
    let r = bash(&host, "cat /etc/hostname /root/.ssh/id_rsa 2>&1; grep -c root /etc/passwd", 20_000).await;
    assert!(r.text().contains("No such file"), "the host's /root is not there: {}", r.text());
    // The file tools refuse what lies outside the grant, as on the local backend.
    let r = call(&host, "Write", json!({"file_path": canary, "content": "pwned"})).await;
    assert_eq!(r.state, ResultState::Error, "{}", r.text());
    let r = call(&host, "Read", json!({"file_path": canary})).await;
    assert_eq!(r.state, ResultState::Error, "{}", r.text());
    assert!(!r.text().contains("untouched"), "{}", r.text());
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_made_in_the_container_does_not_lead_out() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let secret = scratch.outside("secret.txt");
    std::fs::write(&secret, "host secret").unwrap();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let w = scratch.work();
    let r = bash(
        &host,
        &format!(
            "ln -s /etc/passwd {w}/passwd && ln -s {s} {w}/secret && ln -s / {w}/root && echo made",
            w = w.display(),
            s = secret.display()
        ),
        20_000,
    )
    .await;
    assert!(r.text().contains("made"), "{}", r.text());
    for link in ["passwd", "secret", "root/etc/hostname"] {
        let r = call(&host, "Read", json!({"file_path": w.join(link)})).await;
        assert_eq!(r.state, ResultState::Error, "{link}: {}", r.text());
        assert!(r.text().contains("symbolic link"), "{link}: {}", r.text());
    }
    let r = call(&host, "Write", json!({"file_path": w.join("secret"), "content": "pwned"})).await;
    assert_eq!(r.state, ResultState::Error, "{}", r.text());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host secret");
    // A link that stays inside is followed.
    std::fs::write(w.join("real.txt"), "inside\n").unwrap();
    bash(&host, &format!("ln -s {}/real.txt {}/inner", w.display(), w.display()), 20_000).await;
    let r = call(&host, "Read", json!({"file_path": w.join("inner")})).await;
    assert!(r.text().contains("inside"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_connection_reaches_a_listener_on_the_host() {
    if !engine() {
        return;
    }
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let scratch = Scratch::new();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let r = bash(
        &host,
        &format!("echo x | nc -w 2 127.0.0.1 {port}; echo rc=$?; wget -T 2 -q -O- http://127.0.0.1:{port}/ 2>&1; ip -o link 2>&1 | cut -d: -f2"),
        20_000,
    )
    .await;
    assert!(r.text().contains("rc=1"), "{}", r.text());
    assert!(!r.text().contains("eth0"), "only loopback: {}", r.text());
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener was reached"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_and_a_memory_hog_stay_in_their_limits() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let limits = [("max_processes", toml::Value::Integer(64)), ("max_memory_bytes", toml::Value::Integer(64 << 20))];
    let host = scratch.host(on_docker(&scratch, &limits)).await;
    let r = bash(&host, "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", 4_000).await;
    assert!(
        r.text().contains("can't fork")
            || r.text().contains("Resource temporarily unavailable")
            || r.metadata.get("exit_code") == Some(&json!(-1)),
        "{}",
        r.text()
    );
    let r = bash(&host, "head -c 300000000 /dev/zero | sort > /dev/null; echo rc=$?", 30_000).await;
    assert!(!r.text().contains("rc=0"), "the hog got its 300 MB: {}", r.text());
    // The host and the backend are fine: the next command runs.
    let r = bash(&host, "echo alive", 20_000).await;
    assert_eq!(r.text().trim_end().lines().last(), Some("alive"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kills_the_whole_tree_even_what_ignores_sigterm() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let started = Instant::now();
    let r = bash(&host, "sh -c 'trap \"\" TERM; sleep 1000' & sleep 1000 & echo started; wait", 1_500).await;
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert!(r.text().contains("started"), "output streamed before the kill: {}", r.text());
    assert_eq!(r.metadata.get("exit_code"), Some(&json!(-1)), "{:?}", r.metadata);
    let r = bash(&host, "ps -o args | grep -c '^sleep 1000'; true", 20_000).await;
    assert_eq!(r.text().trim(), "0", "a sleep 1000 outlived its timeout: {}", r.text());
}

/// What a process in the container writes into the helper's channel to
/// forge results: for commands 1 to 16, "all 112 tests passed" on stdout and
/// exit code 0, as frames of the helper's first protocol (length, kind, id,
/// payload) in `forged-v1.bin`, and with a guessed (zero) nonce after the id
/// in `forged-v2.bin`. Returns the two paths.
fn write_forged_frames(dir: &std::path::Path) -> [std::path::PathBuf; 2] {
    [&[][..], &[0u8; 16][..]]
        .into_iter()
        .enumerate()
        .map(|(n, nonce)| {
            let mut out = Vec::new();
            for id in 1u32..=16 {
                for (kind, payload) in [(2u8, &b"all 112 tests passed\n"[..]), (4u8, &0i32.to_le_bytes()[..])] {
                    out.extend_from_slice(&((5 + nonce.len() + payload.len()) as u32).to_le_bytes());
                    out.push(kind);
                    out.extend_from_slice(&id.to_le_bytes());
                    out.extend_from_slice(nonce);
                    out.extend_from_slice(payload);
                }
            }
            let path = dir.join(format!("forged-v{}.bin", n + 1));
            std::fs::write(&path, out).unwrap();
            path
        })
        .collect::<Vec<_>>()
        .try_into()
        .unwrap()
}

/// Shell text that writes both forgeries into the stdout of the helper
/// (`$helper`) and of PID 1, a second apart (one chunk of a malformed
/// frame would spoil the well-formed ones before it).
fn forge(frames: &[std::path::PathBuf; 2], helper: &str) -> String {
    let [v1, v2] = frames.each_ref().map(|p| p.display().to_string());
    format!(
        "cat {v1} > /proc/{helper}/fd/1; cat {v1} > /proc/1/fd/1; sleep 1; cat {v2} > /proc/{helper}/fd/1; \
         cat {v2} > /proc/1/fd/1"
    )
}

/// The result of a command that printed `3 tests FAILED` and exited 1, as
/// it was and not as forged.
fn assert_the_real_result(r: &ToolResponse) {
    assert_eq!(r.metadata.get("exit_code"), Some(&json!(1)), "a forged exit code: {}", r.text());
    assert_eq!(r.state, ResultState::Error, "{}", r.text());
    assert!(r.text().contains("3 tests FAILED") && !r.text().contains("112 tests passed"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_one_call_leaves_running_is_gone_before_the_next_and_forges_nothing() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let frames = write_forged_frames(&scratch.work());
    let ran = scratch.work().join("survivor-ran");
    let second = scratch.work().join("call-2-started");
    let host = scratch.host(on_docker(&scratch, &[])).await;
    // Call 1 leaves a process in a session of its own (the pause lets it
    // leave the group before its parent ends) that waits until call 2
    // runs (its marker file, not a time: on a loaded machine call 1 may
    // itself outlast a sleep), then writes frames into the helper's stdout
    // (the shell's parent) and PID 1's.
    let survivor = format!(
        "while [ ! -e {} ]; do sleep 0.1; done; touch {}; {}",
        second.display(),
        ran.display(),
        forge(&frames, "$0")
    );
    let r = bash(
        &host,
        &format!("setsid sh -c '{survivor}' $PPID </dev/null >/dev/null 2>&1 & sleep 0.5; echo started"),
        20_000,
    )
    .await;
    assert!(r.text().contains("started"), "{}", r.text());
    let r = bash(&host, &format!("touch {}; sleep 3; echo '3 tests FAILED'; exit 1", second.display()), 30_000).await;
    assert_the_real_result(&r);
    assert!(second.exists(), "call 2 ran");
    assert!(!ran.exists(), "the process call 1 left ran on during call 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_cannot_forge_its_own_result() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let frames = write_forged_frames(&scratch.work());
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let r = bash(&host, &format!("{}; sleep 1; echo '3 tests FAILED'; exit 1", forge(&frames, "$PPID")), 20_000).await;
    assert_the_real_result(&r);
    assert!(r.text().contains("Permission denied"), "the helper's descriptors are out of reach: {}", r.text());
    let r = bash(&host, "echo alive", 20_000).await;
    assert_eq!(r.text().trim(), "alive", "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_keep_mode_and_owner_and_set_mtime_now() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let file = scratch.work().join("script.sh");
    std::fs::write(&file, "old\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o754)).unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    call(&host, "Read", json!({"file_path": file})).await;
    let r = call(&host, "Write", json!({"file_path": file, "content": "new\n"})).await;
    assert_eq!(r.state, ResultState::Success, "{}", r.text());
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
    assert_eq!(after.mode() & 0o7777, 0o754);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    assert!((now - after.mtime()).abs() < 60, "mtime {} is not now {now}", after.mtime());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_container_fails_its_call_and_is_recreated() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let first = bash(&host, "hostname", 20_000).await.text().trim().to_string();
    // The shell's parent is the helper, PID 1 of the container: nothing
    // inside can kill or stop it.
    let r = bash(&host, "kill -KILL $PPID; kill -STOP 1; echo $PPID survived", 20_000).await;
    assert_eq!(r.text().trim().lines().last(), Some("1 survived"), "{}", r.text());
    assert_eq!(bash(&host, "hostname", 20_000).await.text().trim(), first);
    // The engine kills the container while a command runs.
    let killer = {
        let id = first.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            docker(&["kill", &id])
        })
    };
    let r = bash(&host, "echo dying; sleep 30", 60_000).await;
    killer.join().unwrap();
    assert!(r.text().contains("stopped while this command ran"), "{}", r.text());
    let second = bash(&host, "hostname", 20_000).await.text().trim().to_string();
    assert!(!second.is_empty() && second != first, "{first} then {second}");
    wait_until("the dead container is gone", || !container_exists(&first));
}

#[test]
fn leftovers_of_a_dead_host_are_removed_and_the_cli_removes_its_own() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let dead = format!("dev.toolhost.owner={}:4194304:1", hostname.trim());
    let alive = format!("dev.toolhost.owner={}:{}:1", "another-machine", std::process::id());
    let leftover = docker(&["create", "--label", &dead, &image(), "sleep", "1000"]);
    let foreign = docker(&["create", "--label", &alive, &image(), "sleep", "1000"]);
    assert!(!leftover.is_empty() && !foreign.is_empty());
    let out = scratch.cli(&[
        "--mode",
        "bypass",
        "--backend",
        "docker",
        "--docker-image",
        &image(),
        "call",
        "Bash",
        r#"{"command":"hostname"}"#,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success(), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(!container_exists(&leftover), "the leftover of a dead host stayed");
    assert!(container_exists(&foreign), "another machine's container was removed");
    docker(&["rm", "-f", &foreign]);
    // The engine removes it (auto_remove) once the helper's stdin closes with the host's connection.
    assert!(!stdout.is_empty(), "no hostname");
    wait_until("the CLI's container is gone", || !container_exists(&stdout));
}

#[test]
fn a_killed_host_leaves_no_container_behind() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let mut child = Command::new(toolhost_bin())
        .current_dir(scratch.work())
        .args(["--cache-dir"])
        .arg(toolhost_e2e::root().join("target/test-cache"))
        .args(["--mode", "bypass", "--backend", "docker", "--docker-image", &image(), "call", "Bash"])
        .arg(r#"{"command":"hostname; sleep 1000"}"#)
        .env("HOME", scratch.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let id = line.trim().to_string();
    assert!(!id.is_empty() && container_exists(&id), "{line}");
    child.kill().unwrap();
    child.wait().unwrap();
    wait_until("the killed host's container is gone", || !container_exists(&id));
}

#[test]
fn no_engine_is_a_prompt_error_that_says_what_was_tried() {
    let scratch = Scratch::new();
    for (host, tried) in
        [("unix:///nonexistent/docker.sock", "/nonexistent/docker.sock"), ("tcp://10.255.255.1:2375", "10.255.255.1")]
    {
        let started = Instant::now();
        let out = Command::new(toolhost_bin())
            .current_dir(scratch.work())
            .arg("--cache-dir")
            .arg(toolhost_e2e::root().join("target/test-cache"))
            .args([
                "--mode",
                "bypass",
                "--backend",
                "docker",
                "--docker-image",
                "any",
                "call",
                "Bash",
                r#"{"command":"echo hi"}"#,
            ])
            .env("HOME", scratch.dir.path())
            .env("DOCKER_HOST", host)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{text}");
        assert!(text.contains(tried) && text.contains("DOCKER_HOST") && text.contains("start one"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(30), "{host}: {:?}", started.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_host_removes_its_container_at_once() {
    if !engine() {
        return;
    }
    let scratch = Scratch::new();
    let host = scratch.host(on_docker(&scratch, &[])).await;
    let id = bash(&host, "hostname", 20_000).await.text().trim().to_string();
    assert!(container_exists(&id), "{id}");
    drop(host);
    assert!(!container_exists(&id), "the container {id} outlived its host");
}
