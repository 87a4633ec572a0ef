use super::*;
use serde_json::json;

const HOME: &str = "/home/user";
const CWD: &str = "/tmp/project";

fn d(path: &str) -> bool {
    is_dangerous_path(path, CWD, HOME, &DangerLists::default())
}

#[test]
fn default_lists() {
    assert_eq!(DEFAULT_DANGEROUS_FILES.len(), 22);
    assert_eq!(DEFAULT_DANGEROUS_FILES[0], ".gitconfig");
    assert_eq!(DEFAULT_DANGEROUS_FILES[7], ".ssh/config");
    assert_eq!(DEFAULT_DANGEROUS_FILES[21], ".env.production.local");
    assert_eq!(DEFAULT_DANGEROUS_DIRECTORIES, &[".git", ".vscode", ".idea", ".ssh"]);
    let l = DangerLists::default();
    assert_eq!(l.files.len(), 22);
    assert_eq!(l.directories.len(), 4);
}

#[test]
fn config_replaces_lists() {
    let l = DangerLists::from_tool_config(&json!({})).unwrap();
    assert_eq!(l, DangerLists::default());
    let l = DangerLists::from_tool_config(&Value::Null).unwrap();
    assert_eq!(l, DangerLists::default());
    let l = DangerLists::from_tool_config(&json!({"dangerous_files": ["secrets.yaml"]})).unwrap();
    assert_eq!(l.files, vec!["secrets.yaml".to_string()]);
    assert_eq!(l.directories.len(), 4);
    let l = DangerLists::from_tool_config(&json!({"dangerous_directories": [], "other": 1})).unwrap();
    assert!(l.directories.is_empty());
    assert_eq!(l.files.len(), 22);
    // An empty directory list turns that check off.
    assert!(!is_dangerous_path("/x/.git/hooks/pre-commit", CWD, HOME, &l));
    assert!(is_dangerous_path("/x/.bashrc", CWD, HOME, &l));
    // ... but `.ssh/config` is still caught by its suffix (our strengthening).
    assert!(is_dangerous_path("/home/user/.ssh/config", CWD, HOME, &l));
    assert!(!is_dangerous_path("/home/user/.ssh/id_rsa", CWD, HOME, &l));
}

#[test]
fn config_errors_name_the_key() {
    let e = DangerLists::from_tool_config(&json!({"dangerous_files": "x"})).unwrap_err();
    assert!(e.contains("dangerous_files"), "{e}");
    let e = DangerLists::from_tool_config(&json!({"dangerous_directories": [1]})).unwrap_err();
    assert!(e.contains("dangerous_directories"), "{e}");
    assert!(DangerLists::from_tool_config(&json!([1])).is_err());
}

#[test]
fn expand_user_cases() {
    assert_eq!(expand_user("~", HOME), "/home/user");
    assert_eq!(expand_user("~/", HOME), "/home/user/");
    assert_eq!(expand_user("~/.bashrc", HOME), "/home/user/.bashrc");
    assert_eq!(expand_user("~/.bashrc", "/home/user/"), "/home/user/.bashrc");
    assert_eq!(expand_user("~root/x", HOME), "~root/x");
    assert_eq!(expand_user("a/~/b", HOME), "a/~/b");
    assert_eq!(expand_user("", HOME), "");
}

#[test]
fn normalize_cases() {
    let n = |p| normalize(p, CWD, HOME);
    assert_eq!(n("a.txt"), "/tmp/project/a.txt");
    assert_eq!(n("./a/../b/"), "/tmp/project/b");
    assert_eq!(n(".."), "/tmp");
    assert_eq!(n("../../../.."), "/");
    assert_eq!(n("/"), "/");
    assert_eq!(n("//etc//passwd/"), "/etc/passwd");
    assert_eq!(n("~"), "/home/user");
    assert_eq!(n("~/.ssh/../.bashrc"), "/home/user/.bashrc");
    assert_eq!(n(""), "/tmp/project");
    assert_eq!(n("."), "/tmp/project");
    assert_eq!(n("/a/./b/."), "/a/b");
    assert_eq!(normalize("x", "~/w", HOME), "/home/user/w/x");
    assert_eq!(normalize("x", "rel", HOME), "/rel/x");
}

#[test]
fn dangerous_paths_spec_2_5_and_14_3() {
    // §14.3: Write /home/user/.bashrc, Edit .gitconfig, Write .ssh/config
    assert!(d("/home/user/.bashrc"));
    assert!(d("/home/user/.gitconfig"));
    assert!(d("/home/user/.ssh/config"));
    assert!(d("~/.bashrc"));
    assert!(d("~/.ssh/authorized_keys"));
    assert!(d("/tmp/other/.GIT/config"));
    assert!(d("/tmp/project/.env"));
    assert!(d(".env"));
    assert!(d(".git/hooks/"));
    assert!(d("/x/.BASHRC"));
    assert!(d("/x/.vscode/settings.json"));
    assert!(d("/x/.idea"));
    assert!(d("sub/../.envrc"));
    assert!(!d("/home/user/test.py"));
    assert!(!d("/tmp/file.txt"));
    assert!(!d("/x/.gitignore"));
    assert!(!d("/x/.env.example"));
    assert!(!d("/x/git/config"));
    assert!(!d("/x/.github/workflows/ci.yml"));
    // `..` resolved before the test
    assert!(!d("/x/.git/../file"));
}

#[test]
fn dangerous_custom_lists() {
    let l = DangerLists { files: vec!["Config.JSON".into()], directories: vec!["secret/keys".into()] };
    assert!(is_dangerous_path("a/config.json", CWD, HOME, &l));
    assert!(is_dangerous_path("/a/secret/keys/k1", CWD, HOME, &l));
    assert!(is_dangerous_path("/a/secret/keys", CWD, HOME, &l));
    assert!(!is_dangerous_path("/a/secret/keysx", CWD, HOME, &l));
    assert!(!is_dangerous_path("/a/.bashrc", CWD, HOME, &l));
    let empty = DangerLists { files: vec![String::new()], directories: vec!["/".into()] };
    assert!(!is_dangerous_path("/a/b", CWD, HOME, &empty));
}

#[test]
fn working_dirs_spec_2_4_and_14_6() {
    let wd = vec!["/tmp/project".to_string(), "/private/tmp/project".to_string()];
    let w = |p| in_working_dirs(p, CWD, HOME, &wd);
    assert!(w("/tmp/project/file.txt"));
    assert!(w("/tmp/project"));
    assert!(w("/tmp/project/"));
    assert!(w("/private/tmp/project/file.txt"));
    assert!(w("new.txt"));
    assert!(w("./a/../b"));
    assert!(!w("/tmp/projectx/file"));
    assert!(!w("/tmp/project/../other/x"));
    assert!(!w(".."));
    assert!(!w("/home/user/file.txt"));
    assert!(!w("/Users/someone/other/foo"));
    assert!(!w("~/x"));
    assert!(!in_working_dirs("/tmp/project/a", CWD, HOME, &[]));
    assert!(!in_working_dirs("/tmp/project/a", CWD, HOME, &[String::new()]));
    assert!(in_working_dirs("~/w/a", CWD, HOME, &["~/w/".to_string()]));
    assert!(in_working_dirs("/anything", CWD, HOME, &["/".to_string()]));
}

#[test]
fn fnmatch_python_semantics() {
    // spec 13.17 and 14.6
    assert!(fnmatch("/tmp/**", "/tmp/test.txt"));
    assert!(fnmatch("/tmp/**", "/tmp/a/b/c.txt"));
    assert!(!fnmatch("/tmp/**", "/home/user/test.txt"));
    assert!(!fnmatch("**/*.py", "main.py"));
    assert!(fnmatch("**/*.py", "/tmp/main.py"));
    assert!(fnmatch("*.py", "test.py"));
    assert!(fnmatch("*.py", "/a/b/test.py"));
    assert!(!fnmatch("*.py", "test.txt"));
    assert!(fnmatch("*.env", "/tmp/secret.env"));
    assert!(fnmatch("**/*.lock", "/tmp/project/poetry.lock"));
    assert!(fnmatch("**", ""));
    assert!(fnmatch("*", ""));
    assert!(fnmatch("", ""));
    assert!(!fnmatch("", "a"));
    assert!(fnmatch("?", "a"));
    assert!(!fnmatch("?", ""));
    assert!(!fnmatch("?", "ab"));
    assert!(fnmatch("a?c", "a/c"));
    assert!(fnmatch("[abc]x", "bx"));
    assert!(!fnmatch("[abc]x", "dx"));
    assert!(fnmatch("[!abc]x", "dx"));
    assert!(!fnmatch("[!abc]x", "ax"));
    assert!(fnmatch("[a-z]1", "q1"));
    assert!(!fnmatch("[a-z]1", "Q1"));
    assert!(fnmatch("[]]", "]"));
    assert!(fnmatch("[!]]", "a"));
    assert!(!fnmatch("[!]]", "]"));
    assert!(fnmatch("[a-]", "-"));
    assert!(fnmatch("[^a]", "^"));
    assert!(fnmatch("[", "["));
    assert!(fnmatch("a[b", "a[b"));
    assert!(!fnmatch("[z-a]x", "zx")); // reversed range is empty
    assert!(fnmatch("\\*", "\\abc"));
    assert!(!fnmatch("\\*", "*"));
    assert!(fnmatch("*a*b*c*", "xxaxxbxxcxx"));
    assert!(!fnmatch("*a*b*c*", "xxaxxcxxbxx"));
    assert!(fnmatch("Readme.*", "Readme.md"));
    assert!(!fnmatch("readme.*", "Readme.md"));
    assert!(fnmatch("é*", "été"));
    // no exponential blow-up
    let text = "a".repeat(5000);
    let pattern = format!("{}b", "*a".repeat(50));
    assert!(!fnmatch(&pattern, &text));
    assert!(fnmatch(&"*a".repeat(50), &text));
}
