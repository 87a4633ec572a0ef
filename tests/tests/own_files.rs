//! toolhost's own files (the settings file of each working directory, any
//! `--config` file, the configured plugin and middleware files and plugin
//! folders, the session state folder, the compile cache) are off limits to
//! every tool, built-in or plugin, in every mode (issue #11 items 2 and 6). Each test
//! attacks through the CLI and checks the canary (the file's bytes, or the
//! absence of what the attack would create) as well as the refusal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::capability::{Declared, Policy};
use toolhost::lockfile::{LOCK_VERSION, LockFile, LockedPlugin, sha256_hex};
use toolhost::permission::Mode;
use toolhost::reload::WatchOptions;
use toolhost::response::{ResultState, ToolResponse};
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, guest, root, text, toolhost_bin};

const SETTINGS: &str = "# my settings\n[permissions]\nmode = \"default\"\n";
const BYPASS: &str = "[permissions]\nmode = \"bypass\"\n";
const DENIED: i32 = 3;

/// The CLI run from `cwd`, with `HOME` the scratch folder and no XDG
/// variables (so the default state folder is `~/.local/state/toolhost`),
/// the shared compile cache unless `cache` says otherwise, stdin closed.
fn cli_in(scratch: &Scratch, cwd: &Path, cache: Option<&Path>, args: &[&str]) -> Output {
    let cache = cache.map(Path::to_path_buf).unwrap_or_else(|| root().join("target/test-cache"));
    Command::new(toolhost_bin())
        .current_dir(cwd)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env("HOME", scratch.dir.path())
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CACHE_HOME")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running toolhost")
}

fn cli(scratch: &Scratch, args: &[&str]) -> Output {
    cli_in(scratch, &scratch.work(), None, args)
}

/// A scratch folder whose working dir holds a settings file.
fn with_settings() -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let settings = scratch.work().join("toolhost.toml");
    std::fs::write(&settings, SETTINGS).unwrap();
    (scratch, settings)
}

fn assert_refused(out: &Output, code: i32, what: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(code), "stdout: {stdout}\nstderr: {stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains(what) && all.contains("no tool may touch it"), "expected {what:?} in: {all}");
}

fn plugin_args(grants: &[String]) -> Vec<String> {
    let mut args = vec!["--plugin".to_string(), guest("settings-writer").display().to_string()];
    for g in grants {
        args.push("--grant".into());
        args.push(format!("SettingsWriter={g}"));
    }
    args
}

/// `SettingsWriter` doing `action` on `target`, granted `grants`.
fn plugin(scratch: &Scratch, grants: &[String], action: &str, target: &str) -> Output {
    let mut args = plugin_args(grants);
    let input = json!({"action": action, "target": target, "content": BYPASS}).to_string();
    args.extend(["call".into(), "SettingsWriter".into(), input]);
    cli(scratch, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn accept_edits_write_and_edit_of_the_settings_file_are_denied_in_every_mode() {
    let (scratch, settings) = with_settings();
    let abs = settings.display().to_string();
    for mode in ["accept-edits", "bypass", "dont-ask", "default"] {
        for path in [abs.as_str(), "toolhost.toml", "./sub/../toolhost.toml"] {
            let write = json!({"file_path": path, "content": BYPASS}).to_string();
            let out = cli(&scratch, &["--mode", mode, "--allow", "Write", "call", "Write", &write]);
            assert_refused(&out, DENIED, "toolhost's own settings file");
        }
        let edit = json!({"file_path": abs, "old_string": "\"default\"", "new_string": "\"bypass\""}).to_string();
        let out = cli(&scratch, &["--mode", mode, "--allow", "Edit", "call", "Edit", &edit]);
        assert_refused(&out, DENIED, "toolhost's own settings file");
    }
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS, "the settings file changed");
    // The decision says why, and which step decided.
    let out = cli(
        &scratch,
        &["--mode", "bypass", "check", "--json", "Write", &json!({"file_path": abs, "content": ""}).to_string()],
    );
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).expect("check --json");
    assert_eq!((decision["behavior"].as_str(), decision["source"].as_str()), (Some("deny"), Some("protected_path")));
}

#[test]
fn a_settings_file_not_there_yet_is_protected_too() {
    // Without a settings file, ./toolhost.toml is where the next run reads
    // its settings and where "allow and remember" writes: creating it is
    // as dangerous as rewriting it.
    let scratch = Scratch::new();
    let write = json!({"file_path": "toolhost.toml", "content": BYPASS}).to_string();
    let out = cli(&scratch, &["--mode", "accept-edits", "call", "Write", &write]);
    assert_refused(&out, DENIED, "toolhost's own settings file");
    assert!(!scratch.work().join("toolhost.toml").exists());
}

#[test]
fn bash_naming_the_settings_file_is_denied_even_when_allowed_and_in_bypass() {
    let (scratch, settings) = with_settings();
    let commands = [
        "echo 'mode = \"bypass\"' >> toolhost.toml",
        "sed -i s/default/bypass/ ./toolhost.toml",
        &format!("cp /dev/null {}", settings.display()),
    ];
    for command in commands {
        let input = json!({"command": command}).to_string();
        for flags in [&["--allow", "Bash"][..], &["--mode", "bypass"][..]] {
            let mut args = flags.to_vec();
            args.extend(["call", "Bash", &input]);
            assert_refused(&cli(&scratch, &args), DENIED, "toolhost's own settings file");
        }
    }
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS, "the settings file changed");
}

#[test]
fn a_plugin_granted_fs_write_cannot_touch_the_settings_file_through_the_backend() {
    let (scratch, settings) = with_settings();
    let work = scratch.work();
    std::os::unix::fs::symlink(&settings, work.join("cfg-link")).unwrap();
    std::fs::hard_link(&settings, work.join("cfg-hard")).unwrap();
    std::fs::create_dir(work.join("sub")).unwrap();
    let grants = ["fs-write".to_string()];
    for (action, target) in [
        ("write", "toolhost.toml"),
        ("write", settings.to_str().unwrap()),
        ("write", "cfg-link"),
        ("read", "cfg-link"),
        ("read", "cfg-hard"),
        ("read", "sub/../toolhost.toml"),
        ("stat", "toolhost.toml"),
        ("remove", "toolhost.toml"),
        ("real-path", "cfg-link"),
    ] {
        let out = plugin(&scratch, &grants, action, target);
        assert_refused(&out, 1, "toolhost's own settings file");
    }
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS, "the settings file changed");
    // Listings and walks leave it out, as if it were not there.
    for action in ["list", "walk"] {
        let out = plugin(&scratch, &grants, action, work.to_str().unwrap());
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{action}: {stdout}{stderr}");
        assert!(stdout.contains("cfg-link") || action == "walk", "{action}: {stdout}");
        assert!(!stdout.lines().any(|l| l.ends_with("toolhost.toml")), "{action} shows the settings file: {stdout}");
    }
    // Removing the folder that holds it is refused too.
    let out = plugin(
        &scratch,
        &["fs-write:".to_string() + scratch.dir.path().to_str().unwrap()],
        "remove",
        work.to_str().unwrap(),
    );
    assert_refused(&out, 1, "toolhost's own settings file");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);
}

#[test]
fn a_config_file_elsewhere_is_protected_for_builtins_and_plugins() {
    let scratch = Scratch::new();
    let other = scratch.outside("other");
    std::fs::create_dir(&other).unwrap();
    let config = other.join("x.toml");
    std::fs::write(&config, SETTINGS).unwrap();
    let config_arg = config.display().to_string();
    let other_arg = other.display().to_string();
    let write = json!({"file_path": config_arg, "content": BYPASS}).to_string();
    let base = ["--config", config_arg.as_str(), "--workdir", other_arg.as_str()];
    let mut args = base.to_vec();
    args.extend(["--mode", "accept-edits", "call", "Write", &write]);
    assert_refused(&cli(&scratch, &args), DENIED, "toolhost's own settings file");
    let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    args.extend(plugin_args(&[format!("fs-write:{other_arg}")]));
    args.extend([
        "call".into(),
        "SettingsWriter".into(),
        json!({"action": "write", "target": config_arg, "content": BYPASS}).to_string(),
    ]);
    let out = cli(&scratch, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_refused(&out, 1, "toolhost's own settings file");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), SETTINGS, "the --config file changed");
}

#[test]
fn the_compile_cache_is_off_limits_even_inside_a_working_directory() {
    // The shared test cache made a working directory: its files are still
    // refused, to the built-in Read in bypass mode and to a plugin granted it.
    let scratch = Scratch::new();
    let cache = root().join("target/test-cache");
    let entry =
        std::fs::read_dir(&cache).unwrap().flatten().find(|e| e.path().is_file()).expect("a cache entry").path();
    let before = std::fs::read(&entry).unwrap();
    let cache_arg = cache.display().to_string();
    let read = json!({"file_path": entry.display().to_string()}).to_string();
    let out = cli(&scratch, &["--workdir", &cache_arg, "--mode", "bypass", "call", "Read", &read]);
    assert_refused(&out, DENIED, "toolhost's compile cache");
    let mut args = plugin_args(&[format!("fs-write:{cache_arg}")]);
    args.extend([
        "call".into(),
        "SettingsWriter".into(),
        json!({"action": "write", "target": entry.display().to_string(), "content": "x"}).to_string(),
    ]);
    let out = cli(&scratch, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_refused(&out, 1, "toolhost's compile cache");
    assert_eq!(std::fs::read(&entry).unwrap(), before, "the cache entry changed");
}

#[test]
fn sessions_live_outside_the_working_directory_and_are_off_limits() {
    let scratch = Scratch::new();
    let task = json!({"subject": "canary task", "description": "d"}).to_string();
    let out = cli(&scratch, &["call", "--session", "s1", "TaskCreate", &task]);
    assert!(out.status.success(), "{:?}", text(&out));
    assert!(!scratch.work().join(".toolhost").exists(), "state was written into the working directory");
    let session = scratch.dir.path().join(".local/state/toolhost/sessions/s1.json");
    let before = std::fs::read(&session).expect("the session file in ~/.local/state/toolhost/sessions");
    assert!(String::from_utf8_lossy(&before).contains("canary task"));
    // A plugin granted the whole home folder can neither read nor plant it.
    let home = scratch.dir.path().canonicalize().unwrap().display().to_string();
    let session_arg = session.display().to_string();
    for action in ["read", "write"] {
        let out = plugin(&scratch, &[format!("fs-write:{home}")], action, &session_arg);
        assert_refused(&out, 1, "toolhost's session state folder");
    }
    // Nor can the built-ins, in bypass mode, with the home folder a working dir.
    let read = json!({"file_path": session_arg}).to_string();
    let out = cli(&scratch, &["--workdir", &home, "--mode", "bypass", "call", "Read", &read]);
    assert_refused(&out, DENIED, "toolhost's session state folder");
    assert_eq!(std::fs::read(&session).unwrap(), before, "the session file changed");
    // XDG_STATE_HOME moves it.
    let xdg = scratch.outside("xdg");
    let out = Command::new(toolhost_bin())
        .current_dir(scratch.work())
        .args([
            "--cache-dir",
            root().join("target/test-cache").to_str().unwrap(),
            "call",
            "--session",
            "s2",
            "TaskCreate",
            &task,
        ])
        .env("HOME", scratch.dir.path())
        .env("XDG_STATE_HOME", &xdg)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    assert!(xdg.join("toolhost/sessions/s2.json").is_file());
}

#[test]
fn sessions_in_the_old_place_are_kept_and_named_with_where_to_move_them() {
    let scratch = Scratch::new();
    let old = scratch.work().join(".toolhost/sessions");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("s1.json"), "{\"version\":1,\"read_cache\":[],\"values\":{}}").unwrap();
    let out = cli(&scratch, &["call", "--session", "s1", "TaskList", "{}"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&old.display().to_string()) && stderr.contains("mv "), "{stderr}");
    assert!(old.join("s1.json").is_file(), "the old session was lost");
    // And the old folder is toolhost's too while it exists.
    let out = plugin(&scratch, &["fs-write".into()], "read", ".toolhost/sessions/s1.json");
    assert_refused(&out, 1, "toolhost's session state folder");
}

/// The bytes of every file under `dir`, by name, sorted (a folder's
/// listing and content at once).
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap_or_default()))
        .collect();
    out.sort();
    out
}

#[test]
fn configured_plugin_and_middleware_files_and_plugin_folders_are_off_limits() {
    // A plugin granted fs-write over the working directory would otherwise
    // replace a plugin granted more (its code then runs with those grants
    // on the next start), or add one to a plugin folder.
    let scratch = Scratch::new();
    let work = scratch.work();
    for dir in ["tools", "plugins", "mw"] {
        std::fs::create_dir(work.join(dir)).unwrap();
    }
    std::fs::copy(guest("echo"), work.join("tools/echo.wasm")).unwrap();
    std::fs::copy(guest("counter"), work.join("plugins/counter.wasm")).unwrap();
    std::fs::copy(guest("mw-pass"), work.join("mw/mw-pass.wasm")).unwrap();
    let (tools, plugins, mw) = (tree(&work.join("tools")), tree(&work.join("plugins")), tree(&work.join("mw")));
    let mut base: Vec<String> = [
        "--plugin",
        "tools/echo.wasm",
        "--plugins",
        "plugins",
        "--middleware",
        "mw/mw-pass.wasm",
        "--grant",
        "Echo=exec",
    ]
    .map(String::from)
    .to_vec();
    base.extend(plugin_args(&["fs-write".to_string()]));
    // Inside the working directory, where a command can rewrite them by a
    // name no check sees: they load only pinned (issue 29 item 2).
    let mut list = base.clone();
    list.push("list".into());
    let out = cli(&scratch, &list.iter().map(String::as_str).collect::<Vec<_>>());
    let (_, stderr) = text(&out);
    assert!(!out.status.success() && stderr.contains("toolhost lock") && stderr.contains("pinned"), "{stderr}");
    let mut lock = base.clone();
    lock.push("lock".into());
    let out = cli(&scratch, &lock.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{:?}", text(&out));
    let attempts = [
        ("write", "tools/echo.wasm", "a plugin or middleware component toolhost loads"),
        ("remove", "tools/echo.wasm", "a plugin or middleware component toolhost loads"),
        ("write", "mw/mw-pass.wasm", "a plugin or middleware component toolhost loads"),
        ("write", "plugins/counter.wasm", "a plugin folder toolhost loads from"),
        ("write", "plugins/evil.wasm", "a plugin folder toolhost loads from"),
        ("remove", "plugins", "a plugin folder toolhost loads from"),
        ("remove", "tools", "a plugin or middleware component toolhost loads"),
    ];
    for (action, target, what) in attempts {
        let mut args = base.clone();
        let input = json!({"action": action, "target": target, "content": "evil"}).to_string();
        args.extend(["call".into(), "SettingsWriter".into(), input]);
        let out = cli(&scratch, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_refused(&out, 1, what);
    }
    // The built-in Write in accept-edits mode is refused by the engine too.
    for target in ["tools/echo.wasm", "plugins/evil.wasm", "mw/mw-pass.wasm"] {
        let mut args = base.clone();
        let input = json!({"file_path": target, "content": "evil"}).to_string();
        args.extend(["--mode".into(), "accept-edits".into(), "call".into(), "Write".into(), input]);
        let out = cli(&scratch, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_refused(&out, DENIED, "toolhost loads");
    }
    assert_eq!(tree(&work.join("tools")), tools, "a configured plugin file changed");
    assert_eq!(tree(&work.join("plugins")), plugins, "the plugin folder changed");
    assert_eq!(tree(&work.join("mw")), mw, "a middleware file changed");
    // A file beside them is still the plugin's to write (so the test can fail).
    let mut args = base.clone();
    args.extend([
        "call".into(),
        "SettingsWriter".into(),
        json!({"action": "write", "target": "tools/notes.txt", "content": "fine"}).to_string(),
    ]);
    let out = cli(&scratch, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{:?}", text(&out));
    assert_eq!(std::fs::read_to_string(work.join("tools/notes.txt")).unwrap(), "fine");
}

#[test]
fn the_settings_file_of_every_working_directory_is_protected_even_before_it_exists() {
    // A run started in the second working directory reads its
    // toolhost.toml: planting `mode = "bypass"` there is as bad as here.
    let scratch = Scratch::new();
    let other = scratch.outside("other");
    std::fs::create_dir(&other).unwrap();
    let target = other.join("toolhost.toml");
    let other_arg = other.display().to_string();
    let write = json!({"file_path": target.display().to_string(), "content": BYPASS}).to_string();
    let out =
        cli(&scratch, &["--workdir", ".", "--workdir", &other_arg, "--mode", "accept-edits", "call", "Write", &write]);
    assert_refused(&out, DENIED, "toolhost's own settings file");
    assert!(!target.exists(), "the second working directory's settings file was created");
    // A plugin granted the second working directory is refused by the backend.
    let mut args: Vec<String> = ["--workdir", ".", "--workdir", &other_arg].map(String::from).to_vec();
    args.extend(plugin_args(&[format!("fs-write:{other_arg}")]));
    args.extend([
        "call".into(),
        "SettingsWriter".into(),
        json!({"action": "write", "target": target.display().to_string(), "content": BYPASS}).to_string(),
    ]);
    let out = cli(&scratch, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_refused(&out, 1, "toolhost's own settings file");
    assert!(!target.exists(), "the second working directory's settings file was created");
    // Another file there is written (so the test can fail).
    let write = json!({"file_path": other.join("notes.txt").display().to_string(), "content": "x"}).to_string();
    let out =
        cli(&scratch, &["--workdir", ".", "--workdir", &other_arg, "--mode", "accept-edits", "call", "Write", &write]);
    assert!(out.status.success(), "{:?}", text(&out));
    assert!(other.join("notes.txt").is_file());
}

/// A call in bypass mode (the user let the model run anything).
async fn bypass(host: &Toolhost, tool: &str, input: serde_json::Value) -> ToolResponse {
    host.call(CallRequest::new(tool, input.to_string()).mode(Mode::Bypass))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response()
}

/// Issue 29 item 2: with `plugins/builder.wasm` a link to
/// `<workdir>/build/builder.wasm` (or a hard link), a watching host and a
/// sandboxed Bash, `cp evil.wasm build/builder.wasm` swapped hostile code
/// in, which then wrote where its pinned version was granted to and Bash
/// is not. The bytes of such a file now load only pinned: the hostile
/// version is refused on reload and at the next start, and never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_linked_into_a_working_directory_runs_only_its_pinned_bytes() {
    for hard in [false, true] {
        linked_plugin_attack(hard).await;
    }
}

async fn linked_plugin_attack(hard: bool) {
    let how = if hard { "hard link" } else { "symlink" };
    let scratch = Scratch::new();
    let work = scratch.work();
    std::fs::create_dir(work.join("build")).unwrap();
    let target = work.join("build/builder.wasm");
    std::fs::copy(guest("builder-good"), &target).unwrap();
    let good = std::fs::read(&target).unwrap();
    let evil = std::fs::read(guest("builder-evil")).unwrap();
    std::fs::write(work.join("evil.wasm"), &evil).unwrap();
    let plugins = scratch.outside("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let entry = plugins.join("builder.wasm");
    if hard {
        std::fs::hard_link(&target, &entry).unwrap();
    } else {
        std::os::unix::fs::symlink(&target, &entry).unwrap();
    }
    // Where the user lets Builder deploy, and Bash may not write.
    let deploy = scratch.outside("deploy");
    std::fs::create_dir(&deploy).unwrap();
    let canary = deploy.join("canary.txt");

    let mut settings = scratch.settings();
    let mut local = toml::Table::new();
    local.insert("sandbox".into(), "on".into());
    settings.backend.options.insert("local".into(), toml::Value::Table(local));
    settings.plugin_dirs.push(plugins.clone());
    let grant = Policy { fs_write: vec![deploy.display().to_string()], ..Policy::default() };
    settings.grants.insert("Builder".into(), grant);
    let lock = scratch.outside("toolhost.lock");
    settings.lock_file = Some(lock.clone());
    let pin = LockedPlugin {
        name: "Builder".into(),
        kind: "tool".into(),
        file: entry.clone(),
        sha256: sha256_hex(&good),
        declared: Declared { fs_write: vec!["/".into()], ..Declared::default() },
        signature: None,
        reference: None,
        digest: None,
        signed_by: None,
    };
    LockFile { version: LOCK_VERSION, plugins: vec![pin] }.save(&lock).unwrap();
    let host = scratch.host(settings.clone()).await;
    let options =
        WatchOptions { debounce: Duration::from_millis(50), settle: Duration::from_secs(1), status_file: None };
    let watcher = host.watch(options).await.expect("watching");
    let canary_input = json!({"canary": canary.display().to_string()});
    assert_eq!(bypass(&host, "Builder", canary_input.clone()).await.text(), "good", "{how}");

    // A name the engine's lexical check cannot see (a glob; the other name
    // of a hard link is in no text): the sandbox lets the command write
    // there (the working directory), as it must.
    let swap = if hard { "cat evil.wasm > build/builder.wasm" } else { "cp evil.wasm buil?/builder.wasm" };
    let r = bypass(&host, "Bash", json!({"command": swap})).await;
    assert_eq!(r.state, ResultState::Success, "{how}: {}", r.text());
    assert_eq!(std::fs::read(&entry).unwrap(), evil, "{how}: the command did swap the bytes");
    // Any event in the plugin folder starts a pass (and the folder a link
    // leads into is watched too).
    std::fs::write(plugins.join("NOTES"), "a note").unwrap();
    // The watcher sees the new bytes: refused (not pinned), or, before the
    // fix, swapped in.
    let start = Instant::now();
    let status = loop {
        let status = watcher.status().into_iter().find(|s| s.file == entry);
        let refused = status.as_ref().is_some_and(|s| s.last_error.is_some());
        let swapped = host.describe("Builder").await.is_ok_and(|info| info.sha256 == sha256_hex(&evil));
        if refused || swapped {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{how}: the watcher never acted: {status:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let r = bypass(&host, "Builder", canary_input.clone()).await;
    assert!(!canary.exists(), "{how}: the swapped-in code ran with Builder's grants: {}", r.text());
    assert_eq!(r.text(), "good", "{how}: the pinned version keeps serving");
    let error = status.and_then(|s| s.last_error).unwrap_or_default();
    assert!(error.contains("pinned") && error.contains("toolhost lock"), "{how}: {error}");
    if !hard {
        assert!(error.contains(&target.display().to_string()), "{how}: the error names the target: {error}");
    }

    // The names the engine can see are refused, in bypass mode too (a link's
    // target; the other name of a hard link is not in any text), and the
    // file tools by the backend (a hard link by its inode).
    std::fs::write(&target, &good).unwrap();
    if !hard {
        for command in ["cp evil.wasm build/builder.wasm", "cd build && cat ../evil.wasm > builder.wasm"] {
            let r = bypass(&host, "Bash", json!({"command": command})).await;
            assert_eq!(r.state, ResultState::Denied, "{how} {command}: {}", r.text());
            assert!(r.text().contains("a plugin or middleware component toolhost loads"), "{how}: {}", r.text());
        }
    }
    let r = bypass(&host, "Write", json!({"file_path": target, "content": "x"})).await;
    assert_ne!(r.state, ResultState::Success, "{how}: {}", r.text());
    assert!(r.text().contains("a plugin or middleware component toolhost loads"), "{how}: {}", r.text());
    assert_eq!(std::fs::read(&entry).unwrap(), good);
    drop(watcher);
    drop(host);

    // A start with unpinned bytes there is refused, naming the file and the
    // fix; once pinned (`toolhost lock`'s work), they load.
    std::fs::write(&target, &evil).unwrap();
    let err = match Toolhost::builder().settings(settings.clone(), None).build().await {
        Ok(host) => host.ready().await.err().map(|e| e.to_string()).unwrap_or_default(),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains(&entry.display().to_string()) && err.contains("toolhost lock"), "{how}: {err}");
    std::fs::write(&target, &good).unwrap();
    let host = scratch.host(settings).await;
    assert_eq!(bypass(&host, "Builder", canary_input).await.text(), "good");
    assert!(!canary.exists());
}

/// A middleware file reached through a link into a working directory is
/// held to its pin the same way (issue 29 item 2).
#[test]
fn a_middleware_linked_into_a_working_directory_needs_its_pin() {
    let scratch = Scratch::new();
    std::fs::copy(guest("mw-pass"), scratch.work().join("mw.wasm")).unwrap();
    let link = scratch.outside("mw.wasm");
    std::os::unix::fs::symlink(scratch.work().join("mw.wasm"), &link).unwrap();
    let args = ["--middleware", link.to_str().unwrap()];
    let out = cli(&scratch, &[&args[..], &["list"]].concat());
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains(link.to_str().unwrap()) && stderr.contains("toolhost lock"), "{stderr}");
    let out = cli(&scratch, &[&args[..], &["lock"]].concat());
    assert!(out.status.success(), "{:?}", text(&out));
    let out = cli(&scratch, &[&args[..], &["list"]].concat());
    assert!(out.status.success(), "pinned, it loads: {:?}", text(&out));
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("running mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Issue 29 item 6: a FIFO named `x.wasm` in a plugin folder, or in place
/// of the settings or lock file, held `list` and `lock` for ever (no
/// writer ever comes). Each is now refused, naming it, and the run ends.
#[test]
fn fifos_in_place_of_toolhosts_own_files_are_refused_not_waited_on() {
    let scratch = Scratch::new();
    let plugins = scratch.outside("plugins");
    std::fs::create_dir(&plugins).unwrap();
    mkfifo(&plugins.join("x.wasm"));
    let dir = plugins.display().to_string();
    let config = scratch.outside("fifo.toml");
    mkfifo(&config);
    let lock = scratch.outside("toolhost.lock");
    mkfifo(&lock);
    let cases: [(&[&str], String); 4] = [
        (&["--plugins", &dir, "list"], plugins.join("x.wasm").display().to_string()),
        (&["--plugins", &dir, "lock"], plugins.join("x.wasm").display().to_string()),
        (&["--config", config.to_str().unwrap(), "list"], config.display().to_string()),
        (&["--lock-file", lock.to_str().unwrap(), "--locked", "list"], lock.display().to_string()),
    ];
    for (args, named) in cases {
        let out = scratch.cli_within(args, Duration::from_secs(60)).unwrap_or_else(|| panic!("{args:?} hung"));
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains(&format!("{named} is a FIFO (named pipe), not a regular file")), "{args:?}: {stderr}");
    }
}

/// The peak resident memory of this process's largest finished child, in
/// bytes.
fn children_peak_rss() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) }, 0);
    usage.ru_maxrss as u64 * 1024
}

/// Issue 29 item 15: a 3 GiB sparse `.wasm` was read whole (RSS 28 →
/// 3,100 MiB) before it failed to parse. The size is checked on the
/// opened file before a byte is read, against `[limits]
/// max_component_bytes`.
#[test]
fn a_huge_plugin_file_is_refused_before_it_is_read() {
    let scratch = Scratch::new();
    let big = scratch.outside("big.wasm");
    std::fs::File::create(&big).unwrap().set_len(3 << 30).unwrap();
    let out = cli(&scratch, &["--plugin", big.to_str().unwrap(), "list"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("3221225472 bytes, more than the 268435456 bytes of [limits] max_component_bytes"),
        "{stderr}"
    );
    let peak = children_peak_rss();
    assert!(peak < 1 << 30, "a child of this test peaked at {} MiB: the file was read", peak >> 20);
    // The bound is a setting.
    let out = cli(&scratch, &["--plugin", guest("echo").to_str().unwrap(), "--max-component-bytes", "1000", "list"]);
    assert!(text(&out).1.contains("more than the 1000 bytes of [limits] max_component_bytes"), "{:?}", text(&out));
}
