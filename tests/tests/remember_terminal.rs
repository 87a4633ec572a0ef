//! "Allow and remember" on a real terminal (issue #21): the prompt names the
//! file it will write (absolute), the rule is saved there (created when
//! missing, comments kept, `--config` honoured), a folder that cannot be
//! written is said so with the rule to add by hand, and the next call runs
//! without a question. `script` (util-linux) gives the CLI a pseudo-terminal.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;
use toolhost_e2e::{Scratch, have_script, root, text, toolhost_bin};

const RULE: &str = "Bash(touch x:*)";

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `toolhost [extra] call Bash {"command": "touch x"}` on a pseudo-terminal
/// in the working dir, answering `answer`; returns the screen.
fn on_terminal(scratch: &Scratch, extra: &[&str], answer: &str) -> (String, Output) {
    on_terminal_calling(scratch, extra, "Bash", &json!({"command": "touch x"}), answer)
}

/// `toolhost [extra] call TOOL INPUT` on a pseudo-terminal in the working
/// dir, answering `answer`; returns the screen.
fn on_terminal_calling(
    scratch: &Scratch,
    extra: &[&str],
    tool: &str,
    input: &serde_json::Value,
    answer: &str,
) -> (String, Output) {
    let mut cmd = format!("{} --cache-dir {}", toolhost_bin().display(), root().join("target/test-cache").display());
    for arg in extra {
        cmd.push(' ');
        cmd.push_str(&quote(arg));
    }
    cmd.push_str(&format!(" call {tool} "));
    cmd.push_str(&quote(&input.to_string()));
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(scratch.work())
        .env("HOME", scratch.dir.path())
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    child.stdin.take().expect("stdin").write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().expect("wait");
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

/// The same call with no terminal: runs only if a rule allows it (an ask
/// is a denial, exit 3).
fn without_terminal(scratch: &Scratch, extra: &[&str]) -> Output {
    let _ = std::fs::remove_file(scratch.work().join("x"));
    without_terminal_calling(scratch, extra, "Bash", &json!({"command": "touch x"}))
}

/// `toolhost [extra] call TOOL INPUT` with no terminal.
fn without_terminal_calling(scratch: &Scratch, extra: &[&str], tool: &str, input: &serde_json::Value) -> Output {
    let input = input.to_string();
    let mut args = extra.to_vec();
    args.extend(["call", tool, &input]);
    Command::new(toolhost_bin())
        .current_dir(scratch.work())
        .arg("--cache-dir")
        .arg(root().join("target/test-cache"))
        .args(&args)
        .env("HOME", scratch.dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("toolhost")
}

fn assert_remembered_then_allowed(scratch: &Scratch, file: &Path, extra: &[&str], screen: &str, out: &Output) {
    assert!(out.status.success(), "{screen}");
    assert!(
        screen.contains(&format!("[a] allow and remember {RULE} in {}", file.display())),
        "the prompt does not name {}:\n{screen}",
        file.display()
    );
    assert!(scratch.work().join("x").exists(), "the command did not run:\n{screen}");
    let saved = toolhost::settings::Settings::load(file).expect("a valid settings file");
    assert!(saved.permissions.allow.iter().any(|r| r == RULE), "{:?}", saved.permissions);
    let again = without_terminal(scratch, extra);
    assert!(again.status.success(), "the second call was not allowed: {:?}", text(&again));
    assert!(scratch.work().join("x").exists());
}

#[test]
fn remember_creates_the_settings_file_when_there_is_none() {
    if !have_script() {
        return;
    }
    let scratch = Scratch::new();
    let file = scratch.work().join("toolhost.toml");
    let (screen, out) = on_terminal(&scratch, &[], "a\n");
    assert_remembered_then_allowed(&scratch, &file, &[], &screen, &out);
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.starts_with("# toolhost settings. Created by toolhost's \"allow and remember\" on "), "{saved}");
    assert!(saved.contains(&format!("to keep `{RULE}`")), "{saved}");
}

#[test]
fn remember_keeps_an_existing_file_its_comments_and_order() {
    if !have_script() {
        return;
    }
    let scratch = Scratch::new();
    let file = scratch.work().join("toolhost.toml");
    let before = "# my project\nbuiltins = true # keep\n\n[permissions]\n# reads are fine\nallow = [\n  \"Read\", # always\n]\n\n[limits]\ntimeout_ms = 60000\n";
    std::fs::write(&file, before).unwrap();
    let (screen, out) = on_terminal(&scratch, &[], "a\n");
    assert_remembered_then_allowed(&scratch, &file, &[], &screen, &out);
    let saved = std::fs::read_to_string(&file).unwrap();
    for kept in
        ["# my project", "builtins = true # keep", "# reads are fine", "\"Read\", # always", "timeout_ms = 60000"]
    {
        assert!(saved.contains(kept), "lost {kept:?}:\n{saved}");
    }
    assert!(saved.find("[permissions]") < saved.find("[limits]"), "order changed:\n{saved}");
}

#[test]
fn remember_writes_to_the_config_file_given() {
    if !have_script() {
        return;
    }
    let scratch = Scratch::new();
    let conf_dir = scratch.outside("conf");
    std::fs::create_dir(&conf_dir).unwrap();
    let file = conf_dir.join("other.toml");
    std::fs::write(&file, "# elsewhere\n").unwrap();
    let config = file.display().to_string();
    let (screen, out) = on_terminal(&scratch, &["--config", &config], "a\n");
    assert_remembered_then_allowed(&scratch, &file, &["--config", &config], &screen, &out);
    assert!(std::fs::read_to_string(&file).unwrap().starts_with("# elsewhere\n"));
    assert!(!scratch.work().join("toolhost.toml").exists(), "the rule went to ./toolhost.toml, not --config");
}

/// Makes `dir` unwritable (`chattr +i` as root, whom mode bits do not stop;
/// `chmod 555` otherwise); `false` when that is not possible here.
fn make_read_only(dir: &Path, on: bool) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    if is_root() {
        let flag = if on { "+i" } else { "-i" };
        Command::new("chattr").arg(flag).arg(dir).status().is_ok_and(|s| s.success())
    } else {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(if on { 0o555 } else { 0o755 })).is_ok()
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn a_folder_that_cannot_be_written_is_said_with_the_rule_to_add_by_hand() {
    if !have_script() {
        return;
    }
    let scratch = Scratch::new();
    let conf_dir = scratch.outside("conf");
    std::fs::create_dir(&conf_dir).unwrap();
    let file = conf_dir.join("toolhost.toml");
    std::fs::write(&file, "# read-only\n").unwrap();
    if !make_read_only(&conf_dir, true) {
        eprintln!("skipped: cannot make a folder read-only here");
        return;
    }
    let config = file.display().to_string();
    let (screen, out) = on_terminal(&scratch, &["--config", &config], "a\n");
    make_read_only(&conf_dir, false);
    assert!(out.status.success(), "the allowed call did not run:\n{screen}");
    assert!(scratch.work().join("x").exists());
    assert!(
        screen.contains(&format!("could not save the rule `{RULE}` to {}", file.display()))
            && screen.contains(&format!("allow = [\"{RULE}\"]"))
            && screen.contains(&format!("--allow '{RULE}'")),
        "no clear message naming the rule:\n{screen}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# read-only\n");
}

/// The library API: a rule that cannot be saved is reported to the caller
/// as an event (and by `remember_rule` as an error), never lost silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_reports_a_rule_it_could_not_save() {
    use toolhost::{CallEvent, CallRequest, PermissionAnswer};
    let scratch = Scratch::new();
    // A "folder" that is a file: nothing can be created under it, even by root.
    let blocker = scratch.outside("not-a-folder");
    std::fs::write(&blocker, "").unwrap();
    let target = blocker.join("toolhost.toml");
    let host =
        toolhost::Toolhost::builder().settings(scratch.settings(), Some(target.clone())).build().await.expect("host");
    let input = json!({"command": "touch x"}).to_string();
    let mut stream = host.call(CallRequest::new("Bash", input));
    let mut reported = Vec::new();
    while let Some(event) = stream.next().await {
        match event {
            CallEvent::PermissionRequest(req) => req.allow_and_remember(),
            CallEvent::RememberFailed { rule, message } => reported.push((rule.to_string(), message)),
            CallEvent::Finished(r) => assert_eq!(r.state, toolhost::response::ResultState::Success, "{r:?}"),
            _ => {}
        }
    }
    assert_eq!(reported.len(), 1, "{reported:?}");
    let (rule, message) = &reported[0];
    assert_eq!(rule, RULE);
    assert!(message.contains(&format!("could not save the rule `{RULE}` to {}", target.display())), "{message}");
    assert!(scratch.work().join("x").exists());
    // The rule holds for the rest of this host's life.
    std::fs::remove_file(scratch.work().join("x")).unwrap();
    let r = toolhost_e2e::call(&host, "Bash", json!({"command": "touch x"}), PermissionAnswer::Deny).await;
    assert_eq!(r.state, toolhost::response::ResultState::Success, "{r:?}");
    // And the API itself returns the error.
    let rule = toolhost::permission::Rule::parse("Bash(ls:*)", toolhost::permission::Behavior::Allow).unwrap();
    assert!(host.remember_rule(rule).is_err());
}

/// A plugin suggests a rule whose content would end the header comment of
/// a new settings file and add `[grants.Evil]` (tests/guests/evil-suggest).
/// The engine drops that suggestion: the prompt offers only the rule that
/// reads as written, says its meaning is the plugin's own, and the file
/// created holds nothing but that rule; a second process grants the plugin
/// nothing (its write to the working dir is refused).
#[test]
fn a_suggested_rule_cannot_write_settings_of_its_own() {
    if !have_script() {
        return;
    }
    let scratch = Scratch::new();
    let plugin = toolhost_e2e::guest("evil-suggest").display().to_string();
    let file = scratch.work().join("toolhost.toml");
    let canary = scratch.work().join("canary");
    let input = json!({"dir": scratch.work().display().to_string()});
    let (screen, out) = on_terminal_calling(&scratch, &["--plugin", &plugin], "Evil", &input, "a\n");
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("[a] allow and remember Evil(README.md) in"), "{screen}");
    assert!(!screen.contains("Evil(a") && !screen.contains("fs_write"), "the smuggling rule was offered:\n{screen}");
    assert!(screen.contains("note: this rule's meaning is decided by the plugin itself"), "{screen}");
    assert!(screen.contains("write: refused"), "{screen}");

    let saved = std::fs::read_to_string(&file).expect("the settings file was created");
    let parsed: toml::Table = toml::from_str(&saved).unwrap();
    assert_eq!(parsed.keys().collect::<Vec<_>>(), ["permissions"], "{saved}");
    let permissions = parsed["permissions"].as_table().unwrap();
    assert_eq!(permissions.keys().collect::<Vec<_>>(), ["allow"], "{saved}");
    assert_eq!(permissions["allow"].as_array().unwrap(), &[toml::Value::from("Evil(README.md)")], "{saved}");

    // The remembered rule allows the next call; the plugin has no grant.
    let again = without_terminal_calling(&scratch, &["--plugin", &plugin], "Evil", &input);
    let (stdout, stderr) = text(&again);
    assert!(again.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("write: refused"), "the plugin could write:\n{stdout}");
    assert!(!canary.exists(), "the plugin wrote {}", canary.display());
}

/// The permission prompt shows the call input with the characters
/// serde_json leaves as they are escaped: a C1 CSI (U+009B) and a bidi
/// override (U+202E) from the model's input reach the screen as escapes.
#[test]
fn the_prompt_shows_control_characters_of_the_input_escaped() {
    if !have_script() {
        return;
    }
    let scratch = Scratch::new();
    let input = json!({"command": "touch x \u{9b}2J \u{202e}txt.md"});
    let (screen, out) = on_terminal_calling(&scratch, &[], "Bash", &input, "n\n");
    assert!(!out.status.success(), "{screen}");
    assert!(screen.contains("Bash wants to run with"), "{screen}");
    assert!(screen.contains("\\u{009b}2J \\u{202e}txt.md"), "not escaped:\n{screen}");
    assert!(!screen.contains('\u{9b}') && !screen.contains('\u{202e}'), "a raw control reached the screen:\n{screen}");
    assert!(!scratch.work().join("x").exists());
}
