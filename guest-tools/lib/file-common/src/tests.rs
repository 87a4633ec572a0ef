use super::*;
use toolhost_sdk::{PermissionBehavior, PermissionMode};

fn ctx(mode: PermissionMode) -> Context {
    Context {
        mode,
        working_dirs: vec!["/tmp/project".into()],
        cwd: "/tmp/project".into(),
        home: "/home/u".into(),
        tool_config: serde_json::json!({}),
    }
}

#[test]
fn absolute_paths() {
    assert!(is_absolute("/a"));
    assert!(is_absolute("C:\\a"));
    assert!(!is_absolute("a/b"));
    assert!(!is_absolute("~/a"));
    assert_eq!(not_absolute("x"), "Error: file_path must be an absolute path, got: x");
}

#[test]
fn newlines() {
    assert_eq!(normalize_newlines("a\r\nb\rc\n"), "a\nb\nc\n");
    assert!(matches!(normalize_newlines("a\n"), Cow::Borrowed(_)));
}

#[test]
fn dirname_like_python() {
    assert_eq!(dirname("/a/b/c.py"), "/a/b");
    assert_eq!(dirname("main.py"), "");
    assert_eq!(dirname("/x.py"), "/");
    assert_eq!(dirname("a//b"), "a");
}

#[test]
fn suggestions_per_reference() {
    assert_eq!(file_rule_suggestion("main.py"), None);
    assert_eq!(file_rule_suggestion("/a/b/c.py").as_deref(), Some("/a/b/**"));
    assert_eq!(file_rule_suggestion("/x.py").as_deref(), Some("**"));
    assert_eq!(file_rule_suggestion(""), None);
    assert_eq!(dir_rule_suggestion("/tmp/project/"), "/tmp/project/**");
}

#[test]
fn every_suggestion_matches_its_call() {
    for p in ["/a/b/c.py", "/x.py", "/a/[x]/b.py", "/a/*/b?.py", "/a b/c d", "/ü/ß.txt"] {
        let s = file_rule_suggestion(p).unwrap();
        assert!(file_rule_matches(PermissionBehavior::Allow, &s, p), "{s} should match {p}");
    }
}

#[test]
fn rule_matching_is_fnmatch() {
    assert!(file_rule_matches(PermissionBehavior::Allow, "/tmp/**", "/tmp/test.txt"));
    assert!(file_rule_matches(PermissionBehavior::Allow, "*.py", "/a/b.py"));
    assert!(!file_rule_matches(PermissionBehavior::Allow, "**/*.py", "main.py"));
    assert!(!file_rule_matches(PermissionBehavior::Allow, "*", ""));
}

#[test]
fn write_permission_messages() {
    let d = write_permission(WRITE, "/tmp/project/.env", RealPath::Unknown, &ctx(PermissionMode::Default));
    assert_eq!(d.behavior, PermissionBehavior::Ask);
    assert!(d.bypass_immune);
    assert_eq!(d.message, "Permission required: Write operation on sensitive file /tmp/project/.env");
    assert_eq!(d.reason.as_deref(), Some("Safety check: dangerous file or directory"));

    let d = write_permission(WRITE, "/tmp/project/a.txt", RealPath::Unknown, &ctx(PermissionMode::AcceptEdits));
    assert_eq!(d.behavior, PermissionBehavior::Allow);
    assert_eq!(d.message, "Permission granted for writing /tmp/project/a.txt (in working directory)");
    assert_eq!(d.reason.as_deref(), Some("File is in working directory and not a dangerous path"));

    let d = write_permission(WRITE, "/tmp/project/a.txt", RealPath::Unknown, &ctx(PermissionMode::DontAsk));
    assert_eq!(d.behavior, PermissionBehavior::Allow);

    for mode in [PermissionMode::Default, PermissionMode::Bypass, PermissionMode::Explore] {
        let d = write_permission(WRITE, "/tmp/project/a.txt", RealPath::Unknown, &ctx(mode));
        assert_eq!(d.behavior, PermissionBehavior::Passthrough);
        assert_eq!(d.message, "");
    }
    let d = write_permission(WRITE, "/etc/a.txt", RealPath::Unknown, &ctx(PermissionMode::AcceptEdits));
    assert_eq!(d.behavior, PermissionBehavior::Passthrough);
    // `..` cannot leave the working directory unnoticed.
    let d = write_permission(WRITE, "/tmp/project/../x", RealPath::Unknown, &ctx(PermissionMode::AcceptEdits));
    assert_eq!(d.behavior, PermissionBehavior::Passthrough);

    let d = write_permission(WRITE, "", RealPath::Unknown, &ctx(PermissionMode::Default));
    assert_eq!(d.message, "No file path provided");

    let d = write_permission(EDIT, "/x/.GIT/config", RealPath::Unknown, &ctx(PermissionMode::Bypass));
    assert_eq!(d.message, "Permission required: Edit operation on sensitive file /x/.GIT/config");
}

#[test]
fn write_permission_uses_tool_config() {
    let mut c = ctx(PermissionMode::AcceptEdits);
    c.tool_config = serde_json::json!({"dangerous_files": ["secret.txt"]});
    assert!(write_permission(WRITE, "/tmp/project/secret.txt", RealPath::Unknown, &c).bypass_immune);
    assert_eq!(write_permission(WRITE, "/tmp/project/.env", RealPath::Unknown, &c).behavior, PermissionBehavior::Allow);
    c.tool_config = serde_json::json!({"dangerous_files": "nope"});
    let d = write_permission(WRITE, "/tmp/project/a", RealPath::Unknown, &c);
    assert!(d.bypass_immune && d.message.contains("settings are invalid"));
}

#[test]
fn diffs_like_difflib() {
    let d = write_diff("/tmp/a.txt", None, "a\nb\n");
    assert_eq!(d, "--- /dev/null\n+++ b//tmp/a.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n");
    let d = write_diff("/tmp/a.txt", Some("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), "1\n2\n3\n4\nX\n6\n7\n8\n9\n");
    assert_eq!(d, "--- a//tmp/a.txt\n+++ b//tmp/a.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n");
    assert_eq!(unified_diff("same\n", "same\n", "a", "b"), "");
    let d = unified_diff("x", "y", "a/f", "b/f");
    assert_eq!(
        d,
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n"
    );
}

#[test]
fn display_paths() {
    assert_eq!(display_path("/w", "/w", "/w/a/b.rs"), "/w/a/b.rs");
    assert_eq!(display_path("src", "/w/src", "/w/src/a.rs"), "src/a.rs");
    assert_eq!(display_path("src/", "/w/src", "/w/src/a.rs"), "src/a.rs");
    assert_eq!(display_path("./src", "/w/src", "/w/src/a.rs"), "./src/a.rs");
    assert_eq!(display_path("/w/x/../src", "/w/src", "/w/src/a.rs"), "/w/x/../src/a.rs");
    assert_eq!(display_path("/", "/", "/a.rs"), "/a.rs");
    assert_eq!(display_path("/w", "/w", "/w"), "/w");
    assert_eq!(display_path("/w", "/w", "/ww/a"), "/ww/a");
    assert_eq!(display_path("/w", "/w", "/elsewhere/a"), "/elsewhere/a");
}

#[test]
fn a_symlink_to_a_dangerous_file_is_dangerous() {
    let c = ctx(PermissionMode::AcceptEdits);
    let d = write_permission(WRITE, "/tmp/project/cfg", RealPath::Resolved("/tmp/project/.git/config"), &c);
    assert!(d.bypass_immune, "{d:?}");
    let d = write_permission(WRITE, "/tmp/project/out", RealPath::Resolved("/etc/out"), &c);
    assert_eq!(d.behavior, PermissionBehavior::Passthrough, "a link out of the working dir is not auto-allowed");
    let d = write_permission(WRITE, "/tmp/project/out", RealPath::Outside, &c);
    assert_eq!(d.behavior, PermissionBehavior::Passthrough, "a path the backend will not resolve is not auto-allowed");
}
