//! toolhost's own files (the settings file of each working directory, any
//! `--config` file, the configured plugin and middleware files and plugin
//! folders, the session state folder, the compile cache) are off limits to
//! every tool, built-in or plugin, in every mode (issue #11 items 2 and 6). Each test
//! attacks through the CLI and checks the canary (the file's bytes, or the
//! absence of what the attack would create) as well as the refusal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
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
