use super::*;
use pattern::{expand_braces, split_absolute};
use toolhost_sdk::PermissionMode;

fn m(p: &str, rel: &str) -> bool {
    GlobPattern::new(p).matches(rel, false)
}

#[test]
fn segments_and_double_star() {
    assert!(m("**/*.py", "a.py"));
    assert!(m("**/*.py", "x/y/a.py"));
    assert!(m("**/*.py", ".hidden/a.py"));
    assert!(!m("*.py", "x/a.py"));
    assert!(m("*.py", "a.py"));
    assert!(m("*", ".env"));
    assert!(m("src/**", "src/a/b/c"));
    assert!(!m("src/**", "srcx/a"));
    assert!(m("a/**/b.rs", "a/b.rs"));
    assert!(m("a/**/b.rs", "a/x/y/b.rs"));
    assert!(!m("a/**/b.rs", "a/x/y/c.rs"));
    assert!(m("**", "deep/er/file"));
    assert!(m("a?.txt", "ab.txt"));
    assert!(!m("a?.txt", "a/.txt"));
    // Case-sensitive.
    assert!(!m("*.PY", "a.py"));
    // Runs of separators and backslashes split, `.` parts are dropped.
    assert!(m("src//x\\*.rs", "src/x/a.rs"));
    assert!(m("./src/*.rs", "src/a.rs"));
    // `..` never matches an entry.
    assert!(!m("../*.rs", "a.rs"));
    // Unicode names.
    assert!(m("**/ü*.txt", "dir/über.txt"));
    assert!(m("??.txt", "日本.txt"));
}

#[test]
fn classes_and_braces() {
    assert!(m("[ab].txt", "a.txt"));
    assert!(!m("[ab].txt", "c.txt"));
    assert!(m("[!ab].txt", "c.txt"));
    assert!(m("[^ab].txt", "c.txt"));
    assert!(m("f[0-9].rs", "f7.rs"));
    assert!(m("[.txt", "[.txt"));
    assert!(m("**/*.{ts,tsx}", "a/b.tsx"));
    assert!(m("{src,tests}/**/*.rs", "tests/x/a.rs"));
    assert!(!m("{src,tests}/**/*.rs", "benches/a.rs"));
    assert_eq!(expand_braces("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
    assert_eq!(expand_braces("{x}"), ["{x}"]);
    assert_eq!(expand_braces("a{b,c"), ["a{b,c"]);
    assert!(m("{x}", "{x}"));
}

#[test]
fn symlinks_only_for_trailing_double_star() {
    assert!(!GlobPattern::new("*.txt").matches("l.txt", true));
    assert!(GlobPattern::new("**").matches("l.txt", true));
    assert!(GlobPattern::new("{*.txt,**}").matches("l.txt", true));
}

#[test]
fn literal_prefix_narrows_the_walk() {
    assert_eq!(GlobPattern::new("src/lib/**/*.rs").literal_prefix(), ["src", "lib"]);
    assert_eq!(GlobPattern::new("src/*.rs").literal_prefix(), ["src"]);
    assert!(GlobPattern::new("*.rs").literal_prefix().is_empty());
    assert!(GlobPattern::new("a.rs").literal_prefix().is_empty());
    assert_eq!(GlobPattern::new("{src/a,src/b}/*.rs").literal_prefix(), ["src"]);
    assert!(GlobPattern::new("../x/*.rs").literal_prefix().is_empty());
}

#[test]
fn absolute_patterns() {
    assert_eq!(split_absolute("/w/src/*.rs", "/w"), (None, "src/*.rs".to_string()));
    assert_eq!(split_absolute("/other/x/**/*.rs", "/w"), (Some("/other/x".to_string()), "**/*.rs".to_string()));
    assert_eq!(split_absolute("/a/b.txt", "/w"), (Some("/a".to_string()), "b.txt".to_string()));
    assert_eq!(split_absolute("/etc/*.conf", "/"), (None, "etc/*.conf".to_string()));
    assert_eq!(split_absolute("/*.rs", "/w"), (Some("/".to_string()), "*.rs".to_string()));
    // `/ww` is not under `/w`.
    assert_eq!(split_absolute("/ww/*.rs", "/w").0.as_deref(), Some("/ww"));
}

fn entry(path: &str, kind: EntryKind, mtime: u64) -> DirEntry {
    DirEntry { path: path.into(), kind, size: 1, mtime_ns: mtime }
}

#[test]
fn rendering_sorts_newest_first_and_truncates() {
    let input = Input { pattern: "**/*.py".into(), path: None };
    let p = plan(&input, "/w", "/h");
    let pat = GlobPattern::new(&p.pattern);
    let entries = vec![
        entry("/w/a.py", EntryKind::File, 1),
        entry("/w/b.py", EntryKind::File, 3),
        entry("/w/c.py", EntryKind::File, 1),
        entry("/w/.d/e.py", EntryKind::File, 2),
        entry("/w/x.rs", EntryKind::File, 9),
        entry("/w/l.py", EntryKind::Symlink, 9),
    ];
    assert_eq!(render(&entries, &p, &pat, "**/*.py"), "/w/b.py\n/w/.d/e.py\n/w/a.py\n/w/c.py");
    assert_eq!(render(&[], &p, &pat, "**/*.py"), "No files found matching pattern: **/*.py");

    let many: Vec<DirEntry> = (0..150).map(|i| entry(&format!("/w/f{i:03}.py"), EntryKind::File, i)).collect();
    let text = render(&many, &p, &pat, "**/*.py");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "/w/f149.py");
    assert_eq!(lines[99], "/w/f050.py");
    assert_eq!(
        lines.last().copied(),
        Some("(Results are truncated: showing the first 100 of 150 matches. Use a more specific path or pattern.)")
    );
}

#[test]
fn relative_path_is_shown_as_given() {
    let input = Input { pattern: "*.py".into(), path: Some("sub/".into()) };
    let p = plan(&input, "/w", "/h");
    assert_eq!(p.base, "/w/sub");
    let pat = GlobPattern::new(&p.pattern);
    assert_eq!(render(&[entry("/w/sub/a.py", EntryKind::File, 1)], &p, &pat, "*.py"), "sub/a.py");
}

fn ctx() -> Context {
    Context {
        mode: PermissionMode::Default,
        working_dirs: vec!["/w".into()],
        cwd: "/w".into(),
        home: "/h".into(),
        tool_config: json!({}),
    }
}

#[test]
fn rules_and_suggestions() {
    let c = ctx();
    let cases = [
        Input { pattern: "**/*.py".into(), path: None },
        Input { pattern: "*.rs".into(), path: Some("/w/src".into()) },
        Input { pattern: "*.rs".into(), path: Some("src/".into()) },
        Input { pattern: "/other/x/**/*.rs".into(), path: None },
        Input { pattern: ".".into(), path: Some("/w/[x]".into()) },
        Input { pattern: "".into(), path: None },
    ];
    for input in &cases {
        let rules = Glob::suggestions(input, &c);
        assert_eq!(rules.len(), 1);
        let content = rules[0].rule_content.clone().unwrap();
        assert!(Glob::match_rule(PermissionBehavior::Allow, &content, input, &c), "{content} vs {input:?}");
    }
    assert_eq!(Glob::suggestions(&cases[0], &c)[0].rule_content.as_deref(), Some("/w/**"));
    assert_eq!(Glob::suggestions(&cases[2], &c)[0].rule_content.as_deref(), Some("/w/src/**"));
    assert_eq!(Glob::suggestions(&cases[3], &c)[0].rule_content.as_deref(), Some("/other/x/**"));
    // Reference matching on the raw path or pattern.
    assert!(Glob::match_rule(PermissionBehavior::Deny, "*.py", &cases[0], &c));
    // What the call reaches: a deny rule on /etc catches a walk from /.
    let sneaky = Input { pattern: "etc/*".into(), path: Some("/".into()) };
    assert!(Glob::match_rule(PermissionBehavior::Deny, "/etc/**", &sneaky, &c));
    let dots = Input { pattern: "../../etc/*".into(), path: Some("/w/a".into()) };
    assert!(Glob::match_rule(PermissionBehavior::Deny, "/etc/*", &dots, &c));
    assert!(!Glob::match_rule(PermissionBehavior::Deny, "/srv/**", &cases[0], &c));
}

#[test]
fn name_globs_are_a_superset_filter() {
    assert_eq!(GlobPattern::new("**/*.rs").name_globs(), vec!["*.rs".to_string()]);
    assert_eq!(GlobPattern::new("src/{a,b}/x?.toml").name_globs(), vec!["x?.toml".to_string()]);
    assert_eq!(GlobPattern::new("{*.rs,*.md}").name_globs(), vec!["*.rs".to_string(), "*.md".to_string()]);
    assert!(GlobPattern::new("src/**").name_globs().is_empty(), "a trailing ** lists every name");
    assert!(GlobPattern::new("a/[bc].rs").name_globs().is_empty(), "classes stay in the guest");
}
