use serde_json::json;
use toolhost_sdk::{Context, PermissionBehavior, PermissionMode, Tool, ToolError};

use crate::encode::{argv, base64, encode, probe_argv, utf16le, wrapper};
use crate::probe::{Verdict, verdict};
use crate::{Input, PowerShell};

fn ctx(mode: PermissionMode) -> Context {
    Context { mode, working_dirs: vec!["/p".into()], cwd: "/p".into(), home: "/h".into(), tool_config: json!({}) }
}

fn input(command: &str) -> Input {
    serde_json::from_value(json!({"command": command})).unwrap()
}

#[test]
fn base64_matches_rfc4648_vectors() {
    let cases = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ];
    for (plain, coded) in cases {
        assert_eq!(base64(plain.as_bytes()), coded);
    }
    assert_eq!(base64(&[0xff, 0xfe, 0xfd]), "//79");
}

#[test]
fn utf16le_encodes_bmp_and_surrogate_pairs() {
    assert_eq!(utf16le("A€"), [0x41, 0x00, 0xac, 0x20]);
    assert_eq!(utf16le("😀"), [0x3d, 0xd8, 0x00, 0xde]);
}

#[test]
fn encoded_command_matches_powershell_docs() {
    // The example of `pwsh -?`: dir "c:\program files" encoded.
    assert_eq!(
        encode("dir \"c:\\program files\" "),
        "ZABpAHIAIAAiAGMAOgBcAHAAcgBvAGcAcgBhAG0AIABmAGkAbABlAHMAIgAgAA=="
    );
}

#[test]
fn wrapper_embeds_the_command_encoded_and_sets_up_output() {
    let w = wrapper("Write-Output 'a'; exit 3");
    assert!(w.contains("$ProgressPreference = 'SilentlyContinue'"));
    assert!(w.contains("[Console]::OutputEncoding = [System.Text.UTF8Encoding]::new($false)"));
    assert!(w.contains(&format!("FromBase64String('{}')", encode("Write-Output 'a'; exit 3"))));
    assert!(w.contains("[ScriptBlock]::Create("));
    assert!(!w.contains("Write-Output"), "the command never appears in clear");
}

#[test]
fn argv_uses_encoded_command() {
    let a = argv("pwsh", "echo 'x\"y'");
    assert_eq!(a[..4], ["pwsh", "-NoProfile", "-NonInteractive", "-EncodedCommand"]);
    assert_eq!(a[4], encode(&wrapper("echo 'x\"y'")));
    assert_eq!(
        probe_argv("powershell.exe"),
        ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", "exit 0"]
    );
}

#[test]
fn probe_verdicts() {
    for code in [0, 1, -1] {
        assert!(matches!(verdict(Ok(code)), Verdict::Use));
    }
    assert!(matches!(verdict(Ok(127)), Verdict::Next));
    assert!(matches!(verdict(Err(ToolError::NotFound("program 'pwsh' not found".into()))), Verdict::Next));
    assert!(matches!(verdict(Err(ToolError::Io("x".into()))), Verdict::Next));
    assert!(matches!(verdict(Err(ToolError::Denied("exec".into()))), Verdict::Fail(ToolError::Denied(_))));
}

#[test]
fn always_asks_without_immunity_in_every_mode() {
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Explore,
        PermissionMode::Bypass,
        PermissionMode::DontAsk,
    ] {
        let d = PowerShell::check_permissions(&input("Get-ChildItem"), &ctx(mode));
        assert_eq!(d.behavior, PermissionBehavior::Ask);
        assert!(!d.bypass_immune);
        assert_eq!(d.message, "Execute PowerShell command");
        assert_eq!(d.reason.as_deref(), Some("PowerShell command validation is not enabled"));
    }
}

#[test]
fn no_suggestions_no_content_rules() {
    let c = ctx(PermissionMode::Default);
    assert!(PowerShell::suggestions(&input("ls"), &c).is_empty());
    assert_eq!(
        PowerShell::match_rules(PermissionBehavior::Allow, &["ls".into(), "ls:*".into()], &input("ls"), &c),
        None
    );
    assert!(!PowerShell::check_read_only(&input("Get-ChildItem")));
}

#[test]
fn spec_identity() {
    let s = PowerShell::spec();
    assert_eq!(s.name, "PowerShell");
    assert!(!s.read_only && !s.concurrency_safe && s.capabilities.process_exec);
    assert_eq!(s.input_schema["required"], json!(["command"]));
    assert_eq!(s.input_schema["properties"]["timeout"]["maximum"], json!(600000));
}
