//! Issue 11, items 3, 4, 5, 7 and 8 and the state-value bound: a plugin's
//! grants are not live before the decision, a read-only claim buys only
//! read-only capabilities, declared roots cannot widen a grant, the read
//! cache holds only what the host read, and a spawned process gets a
//! scrubbed environment and a working directory inside the roots. Each
//! test performs the attack with the `check-writes` (or `dotdot-root`)
//! guest and checks that nothing happened outside.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use serde_json::json;
use toolhost::permission::Mode;
use toolhost::response::ResultState;
use toolhost::settings::Settings;
use toolhost::state::AgentState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, call, guest, root, text, toolhost_bin};

/// Runs the CLI in `scratch` with `args`, `stdin` as its input and `env`
/// added to its environment.
fn cli(scratch: &Scratch, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(toolhost_bin())
        .current_dir(scratch.work())
        .arg("--cache-dir")
        .arg(root().join("target/test-cache"))
        .args(args)
        .env("HOME", scratch.dir.path())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running toolhost");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("writing stdin");
    child.wait_with_output().expect("waiting for toolhost")
}

/// `--no-builtins --plugin check-writes` plus each grant.
fn plugin_args(grants: &[&str]) -> Vec<String> {
    let mut args = vec!["--no-builtins".to_string(), "--plugin".into(), guest("check-writes").display().to_string()];
    for g in grants {
        args.push("--grant".into());
        args.push(format!("CheckWrites={g}"));
    }
    args
}

fn run(scratch: &Scratch, grants: &[&str], rest: &[&str], env: &[(&str, &str)]) -> (String, String, Option<i32>) {
    let mut args = plugin_args(grants);
    args.extend(rest.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(scratch, &args, "", env);
    let (stdout, stderr) = text(&out);
    (stdout, stderr, out.status.code())
}

/// The files the attacks left in `dir`.
fn left_behind(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("listing the work dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("canary-") || n.starts_with("spawned-"))
        .collect();
    names.sort();
    names
}

const EVERYTHING: &[&str] = &["fs-write", "exec", "state"];

#[test]
fn permission_exports_run_with_no_capability() {
    let scratch = Scratch::new();
    let work = scratch.work();
    let input = json!({"dir": work, "action": "attack"}).to_string();
    // A content rule makes the engine ask the tool's match-rule; the default
    // mode's ask runs generate-suggestions too.
    let rule = ["--deny", "CheckWrites(never-matches)"];

    // (a) `check`, single and batch, runs all four exports.
    let input = input.as_str();
    let (stdout, stderr, _) = run(&scratch, EVERYTHING, &[rule[0], rule[1], "check", "CheckWrites", input], &[]);
    assert!(stdout.starts_with("ASK"), "{stdout}{stderr}");
    let line = json!({"id": 1, "tool": "CheckWrites", "input": {"dir": work}}).to_string();
    let mut args = plugin_args(EVERYTHING);
    args.extend(["--deny", "CheckWrites(never-matches)", "check", "--batch"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&scratch, &args, &format!("{line}\n{line}\n"), &[]);
    assert_eq!(text(&out).0.lines().count(), 2, "{:?}", text(&out));
    assert_eq!(left_behind(&work), Vec::<String>::new(), "a check wrote or ran something");

    // (b) Denied calls: explore mode (not read-only), a deny rule, and an
    // ask nobody can answer.
    for rest in [
        ["--mode", "explore", "call", "CheckWrites", input],
        ["--deny", "CheckWrites", "call", "CheckWrites", input],
        [rule[0], rule[1], "call", "CheckWrites", input],
    ] {
        let (stdout, stderr, code) = run(&scratch, EVERYTHING, &rest, &[]);
        assert_eq!(code, Some(3), "{rest:?} was not denied: {stdout}{stderr}");
        assert_eq!(left_behind(&work), Vec::<String>::new(), "{rest:?} wrote or ran something");
    }

    // (c) An allowed call still gets its grants, in `call` only.
    let rest = [rule[0], rule[1], "--mode", "bypass", "call", "CheckWrites", input];
    let (stdout, stderr, code) = run(&scratch, EVERYTHING, &rest, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("write: ok\nexec: ok\nstate: ok"), "{stdout}{stderr}");
    assert_eq!(left_behind(&work), vec!["canary-call".to_string(), "spawned-call".to_string()]);
}

/// A host with `CheckWrites` granted `grants`.
async fn plugin_host(scratch: &Scratch, grants: &[&str], builtins: bool) -> Toolhost {
    let mut s = scratch.settings();
    s.builtins = builtins;
    s.plugins.push(guest("check-writes"));
    for g in grants {
        s.grants.entry("CheckWrites".into()).or_default().add_grant(g).unwrap();
    }
    scratch.host(s).await
}

async fn call_in(
    host: &Toolhost,
    tool: &str,
    input: serde_json::Value,
    mode: Mode,
    session: &Arc<AgentState>,
) -> (ResultState, String) {
    let request = CallRequest::new(tool, input.to_string()).mode(mode).session(session.clone());
    let r = host.call(request).finish(PermissionAnswer::Deny).await.into_response();
    (r.state, r.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_exports_set_no_state() {
    let scratch = Scratch::new();
    let host = plugin_host(&scratch, EVERYTHING, false).await;
    let work = scratch.work();
    let input = json!({"dir": work, "action": "attack"});
    let ctx = host.permission_context("CheckWrites", Mode::Default);
    let rules = toolhost::permission::RuleSet::from_strings(&[], &["CheckWrites(x)".to_string()], &[]).unwrap();
    host.check("CheckWrites", &input, &ctx, &rules).await.unwrap();
    let session = Arc::new(AgentState::new());
    call_in(&host, "CheckWrites", input.clone(), Mode::Explore, &session).await;
    call_in(&host, "CheckWrites", input.clone(), Mode::Default, &session).await;
    async fn keys(s: &AgentState) -> Vec<String> {
        s.snapshot().await.unwrap().values.keys().cloned().collect()
    }
    assert_eq!(keys(host.state()).await, Vec::<String>::new());
    assert_eq!(keys(&session).await, Vec::<String>::new());
    let (state, out) = call_in(&host, "CheckWrites", input, Mode::Bypass, &session).await;
    assert_eq!(state, ResultState::Success, "{out}");
    assert_eq!(keys(&session).await, vec!["pwned-call".to_string()], "only `call` may set state");
}

#[test]
fn a_read_only_claim_buys_only_read_only_capabilities() {
    for mode in ["explore", "default"] {
        let scratch = Scratch::new();
        let work = scratch.work();
        std::fs::write(work.join("canary-call"), "original").unwrap();
        let input = json!({"dir": work, "read_only": true, "action": "attack"}).to_string();
        let (stdout, stderr, code) =
            run(&scratch, EVERYTHING, &["--mode", mode, "call", "CheckWrites", input.as_str()], &[]);
        assert_eq!(code, Some(0), "{mode}: {stdout}{stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        for (line, what) in lines.iter().zip(["write", "exec", "state"]) {
            assert!(line.starts_with(&format!("{what}: ")), "{mode}: {stdout}");
            assert!(line.contains("denied") && line.contains("read-only"), "{mode}: {what} not refused: {line}");
        }
        assert_eq!(std::fs::read_to_string(work.join("canary-call")).unwrap(), "original", "{mode}");
        assert_eq!(left_behind(&work), vec!["canary-call".to_string()], "{mode}: a process ran");
    }
}

#[test]
fn declared_roots_cannot_widen_a_grant() {
    // A fixed place: the guests declare these paths at build time.
    let base = Path::new("/tmp/toolhost-e2e-roots");
    std::fs::create_dir_all(base).unwrap();
    let lock = std::fs::File::create(base.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let granted = base.join("granted");
    let outside = base.join("outside");
    std::fs::create_dir_all(&granted).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
    let link = granted.join("link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let scratch = Scratch::new();

    // `<granted>/..` is refused at load, naming the root.
    let grant = format!("DotDot=fs-read:{}", granted.display());
    let dotdot = guest("dotdot-root").display().to_string();
    let out = cli(&scratch, &["--no-builtins", "--plugin", &dotdot, "--grant", &grant, "list"], "", &[]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("/tmp/toolhost-e2e-roots/granted/..") && stderr.contains("not normal"), "{stderr}");

    // A symlink inside the granted root that points out does not widen it.
    let grant = format!("fs-read:{}", granted.display());
    let input = json!({"action": "read", "path": link.join("secret.txt")}).to_string();
    let (stdout, stderr, _) =
        run(&scratch, &[grant.as_str()], &["--mode", "bypass", "call", "CheckWrites", input.as_str()], &[]);
    assert!(stdout.contains("denied"), "{stdout}{stderr}");
    assert!(!stdout.contains("top secret"), "the symlink widened the grant: {stdout}");

    // Non-normal grant roots are refused too.
    for bad in ["fs-read:/tmp/../etc", "fs-write:/tmp/./x"] {
        let (stdout, stderr, code) = run(&scratch, &[bad], &["list"], &[]);
        assert_eq!(code, Some(1), "{bad}: {stdout}{stderr}");
        assert!(stderr.contains("not normal"), "{bad}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_cache_holds_only_what_the_host_read() {
    let scratch = Scratch::new();
    let file = scratch.work().join("notes.txt");
    std::fs::write(&file, "real content\n").unwrap();
    let path = file.display().to_string();
    let session = Arc::new(AgentState::new());
    let host = plugin_host(&scratch, &["fs-read", "state"], true).await;

    // A plugin caches a made-up base; Edit must not edit from it.
    let poison = json!({"action": "poison", "path": path, "content": "fake base\n"});
    assert_eq!(call_in(&host, "CheckWrites", poison, Mode::Bypass, &session).await.0, ResultState::Success);
    let edit = json!({"file_path": path, "old_string": "fake", "new_string": "evil"});
    let (state, out) = call_in(&host, "Edit", edit, Mode::Bypass, &session).await;
    assert_eq!(state, ResultState::Error, "{out}");
    assert!(out.contains("must first read it"), "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "real content\n");

    // Read → Edit still works.
    let read = json!({"file_path": path});
    assert_eq!(call_in(&host, "Read", read, Mode::Bypass, &session).await.0, ResultState::Success);
    // A plugin with only `state` cannot see (or drop) what Read cached.
    let other = Scratch::new();
    let state_only = plugin_host(&other, &["state"], false).await;
    let peek = json!({"action": "peek", "path": path});
    assert_eq!(call_in(&state_only, "CheckWrites", peek, Mode::Bypass, &session).await.1, "None");
    let edit = json!({"file_path": path, "old_string": "real", "new_string": "edited"});
    let (state, out) = call_in(&host, "Edit", edit, Mode::Bypass, &session).await;
    assert_eq!(state, ResultState::Success, "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "edited content\n");
}

#[test]
fn spawned_processes_get_a_scrubbed_environment_and_a_cwd_inside_the_roots() {
    let scratch = Scratch::new();
    let secret = [("TOOLHOST_CANARY_SECRET", "s3cret-value"), ("PASSED_ON", "yes-please")];
    let grants = ["exec", "fs-read", "env:EXTRA_VAR=hello", "env:PASSED_ON"];
    let env_input = json!({"action": "env"}).to_string();
    let (stdout, stderr, code) =
        run(&scratch, &grants, &["--mode", "bypass", "call", "CheckWrites", env_input.as_str()], &secret);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains("TOOLHOST_CANARY_SECRET") && !stdout.contains("s3cret-value"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "EXTRA_VAR=hello"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "PASSED_ON=yes-please"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("PATH=")), "{stdout}");

    let pwd = |cwd: &str| {
        let input = json!({"action": "pwd", "cwd": cwd}).to_string();
        run(&scratch, &grants, &["--mode", "bypass", "call", "CheckWrites", input.as_str()], &[])
    };
    let (stdout, stderr, _) = pwd("/");
    assert!(stdout.contains("denied: the working directory / is not inside the roots granted"), "{stdout}{stderr}");
    let work = scratch.work().display().to_string();
    let (stdout, stderr, code) = pwd(&work);
    assert_eq!((code, stdout.trim()), (Some(0), work.as_str()), "{stderr}");

    // The built-in Bash gets the same scrubbed environment.
    let bash = json!({"command": "echo \"[$TOOLHOST_CANARY_SECRET]\""}).to_string();
    let out = cli(&scratch, &["--mode", "bypass", "call", "Bash", bash.as_str()], "", &secret);
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("[]") && !stdout.contains("s3cret"), "{stdout}{stderr}");
}

#[test]
fn state_values_are_bounded() {
    let scratch = Scratch::new();
    let big = json!({"action": "big-state", "size": 64 << 20}).to_string();
    let (stdout, stderr, _) =
        run(&scratch, &["state"], &["--mode", "bypass", "call", "CheckWrites", big.as_str()], &[]);
    assert!(
        stdout.contains("refused: the value for 'big' is 67108869 bytes, more than the 1048576 bytes"),
        "{stdout}{stderr}"
    );
    assert!(stdout.contains("max_state_value_bytes"), "{stdout}");
    let with_limit = |size: usize| {
        let input = json!({"action": "big-state", "size": size}).to_string();
        let rest = ["--max-state-value-bytes", "100", "--mode", "bypass", "call", "CheckWrites", input.as_str()];
        run(&scratch, &["state"], &rest, &[]).0
    };
    assert_eq!(with_limit(50).trim(), "stored");
    assert!(with_limit(200).contains("refused"), "{}", with_limit(200));
}

#[test]
fn the_agent_state_is_bounded_in_bytes_and_keys() {
    // A plugin granted `state` stores a new key on each `set` until refused.
    let scratch = Scratch::new();
    let plugin = guest("state-hoarder");
    let hoard = |session: &str, flags: &[&str], input: serde_json::Value| {
        let mut args = vec![
            "--no-builtins",
            "--plugin",
            plugin.to_str().unwrap(),
            "--grant",
            "StateHoarder=state",
            "--allow",
            "StateHoarder",
            // A named session is saved whole at each change: 67 values of
            // a megabyte are 2 GB written, minutes on a loaded debug build.
            // The bounds are the subject here, not the time.
            "--timeout-ms",
            "900000",
        ];
        args.extend_from_slice(flags);
        let input = input.to_string();
        args.extend(["call", "--session", session, "StateHoarder", &input]);
        let out = cli(&scratch, &args, "", &[]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}{stderr}");
        let file = scratch.cli_sessions().join(format!("{session}.json"));
        (stdout, std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0))
    };
    // Default: 64 MiB in all. Values of 1 000 002 bytes of JSON text plus
    // keys of 7 or 8 bytes: 67 fit.
    let (stdout, file) = hoard("default", &[], json!({"bytes": 1_000_000}));
    assert!(stdout.contains("stored 67\n"), "{stdout}");
    assert!(stdout.contains("more than the 67108864 bytes") && stdout.contains("limits.max_state_bytes"), "{stdout}");
    assert!(file > 60 << 20 && file < (64 << 20) + 4096, "the session file holds {file} bytes");
    // The setting is a flag: 1 MiB holds 15 values of 65 545 bytes.
    let (stdout, file) = hoard("small", &["--max-state-bytes", "1048576"], json!({"bytes": 65536}));
    assert!(stdout.contains("stored 15\n") && stdout.contains("--max-state-bytes"), "{stdout}");
    assert!(file < (1 << 20) + 4096, "the session file holds {file} bytes");
    // And the number of keys, for `set` and `compare-and-set`.
    for cas in [false, true] {
        let session = format!("keys-{cas}");
        let (stdout, _) = hoard(&session, &["--max-state-keys", "50"], json!({"bytes": 1, "keys": 1000, "cas": cas}));
        assert!(stdout.contains("stored 50\n"), "{stdout}");
        assert!(stdout.contains("holds 50 keys") && stdout.contains("limits.max_state_keys"), "{stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_root_swapped_for_a_symlink_is_refused() {
    // A plugin granted `work/sub`; between two calls `sub` becomes a
    // symlink to a canary folder. The grant was for what `sub` was.
    let scratch = Scratch::new();
    let work = scratch.work();
    let sub = work.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let canary = scratch.outside("canary");
    std::fs::create_dir(&canary).unwrap();
    std::fs::write(canary.join("keep.txt"), "canary\n").unwrap();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("settings-writer"));
    s.grants.entry("SettingsWriter".into()).or_default().add_grant(&format!("fs-write:{}", sub.display())).unwrap();
    let host = scratch.host(s).await;
    let write = |name: &str| json!({"action": "write", "target": sub.join(name), "content": "pwned"});
    let first = toolhost_e2e::call(&host, "SettingsWriter", write("a.txt"), PermissionAnswer::Deny).await;
    assert_eq!(first.state, ResultState::Success, "{}", first.text());
    assert!(sub.join("a.txt").is_file());
    std::fs::rename(&sub, work.join("sub-old")).unwrap();
    std::os::unix::fs::symlink(&canary, &sub).unwrap();
    let second = toolhost_e2e::call(&host, "SettingsWriter", write("b.txt"), PermissionAnswer::Deny).await;
    assert_eq!(second.state, ResultState::Error, "{}", second.text());
    assert!(
        second.text().contains("now leads to") && second.text().contains("replaced by a symlink"),
        "{}",
        second.text()
    );
    let names: Vec<_> = std::fs::read_dir(&canary).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names, ["keep.txt"], "the canary folder changed");
    assert_eq!(std::fs::read_to_string(canary.join("keep.txt")).unwrap(), "canary\n");
}

/// Issue 13: a component is asked for its metadata at load time, before any
/// grant, and gets a backend that refuses everything there, even though the
/// user granted it the canary's folder and processes (those are for its
/// calls): nothing is written, read or run, and it is shown no path of the
/// host machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_probe_gets_a_backend_that_refuses_everything() {
    let probe = ProbeCanary::new();
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("probe-attack"));
    grant_probe_everything(&mut s, "ProbeAttack");
    let host = scratch.host(s).await;
    let report = host.describe("ProbeAttack").await.expect("ProbeAttack loads").description;
    probe.assert_refused(&report);
}

/// The same attack from a middleware's `info` export (called at load time,
/// before any grant applies) is refused the same way; and on calls, a
/// middleware is handed its own `[middleware.NAME]` table, never another
/// middleware's or a tool's settings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middleware_info_probe_gets_nothing_and_a_middleware_sees_only_its_own_settings() {
    let probe = ProbeCanary::new();
    let scratch = Scratch::new();
    let text = format!(
        "builtins = false\nplugins = [{:?}]\n[tools.Echo]\nsecret = \"tool-secret\"\n\
         [middleware]\nfiles = [{:?}]\n[middleware.attach]\nEcho = [\"mw-probe-attack\"]\n\
         [middleware.mw-probe-attack]\nmine = 1\n[middleware.other]\nsecret = \"other-secret\"\n",
        guest("echo"),
        guest("mw-probe-attack")
    );
    let mut s = scratch.settings_file(&text);
    grant_probe_everything(&mut s, "mw-probe-attack");
    let host = scratch.host(s).await;
    let info = host.middleware().into_iter().find(|m| m.name == "mw-probe-attack").expect("the middleware loads");
    probe.assert_refused(&info.description);

    let text = call(&host, "Echo", json!({"text": "hi"}), PermissionAnswer::AllowOnce).await.text();
    assert!(text.contains(r#"config: {"mine":1}"#), "{text}");
    assert!(!text.contains("secret"), "another's settings reached the middleware: {text}");
    probe.assert_untouched();
}

/// The canary folder the probe attacks ([`tests/guests/probe-attack`]).
struct ProbeCanary {
    dir: &'static Path,
}

impl ProbeCanary {
    fn new() -> Self {
        let dir = Path::new("/tmp/toolhost-e2e-probe");
        std::fs::create_dir_all(dir).expect("canary folder");
        std::fs::write(dir.join("canary"), "untouched").expect("canary");
        let _ = std::fs::remove_file(dir.join("spawned"));
        Self { dir }
    }

    /// Every attempt in `report` was refused, and nothing outside changed.
    fn assert_refused(&self, report: &str) {
        let outcome = |attempt: &str| {
            let prefix = format!("{attempt}: ");
            report.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("no {attempt}: {report}"))
        };
        for attempt in ["write", "read"] {
            assert!(outcome(attempt).contains("asked for its metadata gets no file or process operation"), "{report}");
        }
        assert!(outcome("exec").starts_with("ToolError::Denied("), "{report}");
        assert_eq!((outcome("cwd"), outcome("home")), ("/", "/"), "no host path: {report}");
        self.assert_untouched();
    }

    fn assert_untouched(&self) {
        assert_eq!(std::fs::read_to_string(self.dir.join("canary")).expect("canary"), "untouched");
        assert!(!self.dir.join("spawned").exists(), "a process ran");
    }
}

/// Grants `name` writes to the canary folder and processes, so that only
/// the probe's own backend can stop the attack.
fn grant_probe_everything(s: &mut Settings, name: &str) {
    let policy = s.grants.entry(name.into()).or_default();
    for cap in ["fs-write:/tmp/toolhost-e2e-probe", "exec"] {
        policy.add_grant(cap).expect("a valid grant");
    }
}
