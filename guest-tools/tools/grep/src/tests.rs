use super::*;
use render::{Style, lines, paginate};
use toolhost_sdk::PermissionMode;
use toolhost_sdk::backend::{SearchFile, SearchLine};

fn line(n: u64, text: &str, ctx: bool, gap: bool) -> SearchLine {
    SearchLine { line_number: n, text: text.into(), is_context: ctx, gap_before: gap }
}

fn files() -> Vec<SearchFile> {
    vec![
        SearchFile {
            path: "/w/a.txt".into(),
            count: 2,
            lines: vec![
                line(1, "x", true, false),
                line(2, "foo 1", false, false),
                line(3, "y", true, false),
                line(6, "e", true, true),
                line(7, "foo 2", false, false),
            ],
        },
        SearchFile { path: "/w/sub/b.txt".into(), count: 1, lines: vec![line(2, "foo 3", false, false)] },
    ]
}

fn style(mode: SearchMode, with_path: bool, n: bool, sep: bool) -> Style {
    Style { mode, with_path, line_numbers: n, separators: sep }
}

#[test]
fn content_format_like_rg() {
    let got = lines(&files(), &style(SearchMode::Content, true, true, true), str::to_string);
    assert_eq!(
        got,
        [
            "/w/a.txt-1-x",
            "/w/a.txt:2:foo 1",
            "/w/a.txt-3-y",
            "--",
            "/w/a.txt-6-e",
            "/w/a.txt:7:foo 2",
            "--",
            "/w/sub/b.txt:2:foo 3"
        ]
    );
    // Without context there are no separators; without -n no numbers.
    let got = lines(&files()[1..], &style(SearchMode::Content, true, false, false), str::to_string);
    assert_eq!(got, ["/w/sub/b.txt:foo 3"]);
    // A single file: no path prefix.
    let got = lines(&files()[..1], &style(SearchMode::Content, false, true, true), str::to_string);
    assert_eq!(got[..2], ["1-x", "2:foo 1"]);
    // Empty lines are dropped.
    let empty = vec![SearchFile { path: "/f".into(), count: 1, lines: vec![line(1, "", false, false)] }];
    assert!(lines(&empty, &style(SearchMode::Content, false, false, false), str::to_string).is_empty());
}

#[test]
fn count_and_files_formats() {
    assert_eq!(
        lines(&files(), &style(SearchMode::Count, true, true, false), str::to_string),
        ["/w/a.txt:2", "/w/sub/b.txt:1"]
    );
    assert_eq!(lines(&files()[..1], &style(SearchMode::Count, false, true, false), str::to_string), ["2"]);
    assert_eq!(
        lines(&files(), &style(SearchMode::FilesWithMatches, true, true, false), |p| p.replace("/w/", "")),
        ["a.txt", "sub/b.txt"]
    );
}

#[test]
fn pagination_like_the_reference() {
    let l: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
    assert_eq!(paginate(&l, Some(2), 1), "b\nc\n\n[Showing results with pagination = limit: 2, offset: 1]");
    assert_eq!(paginate(&l, Some(2), 0), "a\nb\n\n[Showing results with pagination = limit: 2]");
    assert_eq!(paginate(&l, Some(3), 1), "b\nc\nd");
    assert_eq!(paginate(&l, Some(0), 1), "b\nc\nd");
    assert_eq!(paginate(&l, None, 0), "a\nb\nc\nd");
    assert_eq!(paginate(&l, Some(2), 9), "");
    let many: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let text = paginate(&many, None, 0);
    assert!(text.ends_with("249\n\n[Showing results with pagination = limit: 250]"));
}

#[test]
fn glob_splitting() {
    assert_eq!(split_globs("*.rs"), ["*.rs"]);
    assert_eq!(split_globs("*.rs,*.toml  *.md"), ["*.rs", "*.toml", "*.md"]);
    assert_eq!(split_globs("*.{ts,tsx} !target/**"), ["*.{ts,tsx}", "!target/**"]);
    assert_eq!(split_globs(",,a,"), ["a"]);
    assert!(split_globs("   ").is_empty());
}

#[test]
fn modes_and_context() {
    assert_eq!(mode_of(None), SearchMode::FilesWithMatches);
    assert_eq!(mode_of(Some("content")), SearchMode::Content);
    assert_eq!(mode_of(Some("count")), SearchMode::Count);
    let input = Input { context: Some(3), around: Some(1), before: Some(7), ..Default::default() };
    assert_eq!(context_of(&input, SearchMode::Content), (3, 3));
    assert_eq!(context_of(&input, SearchMode::Count), (0, 0));
    let input = Input { around: Some(1), before: Some(7), ..Default::default() };
    assert_eq!(context_of(&input, SearchMode::Content), (1, 1));
    let input = Input { after: Some(2), before: Some(1), ..Default::default() };
    assert_eq!(context_of(&input, SearchMode::Content), (1, 2));
}

#[test]
fn input_names_follow_the_schema() {
    let input: Input = serde_json::from_value(json!({
        "pattern": "x", "-A": 1, "-B": 2, "-C": 3, "type": "rust", "n": false, "head_limit": 0
    }))
    .unwrap();
    assert_eq!((input.after, input.before, input.around), (Some(1), Some(2), Some(3)));
    assert_eq!(input.file_type.as_deref(), Some("rust"));
    assert_eq!(input.n, Some(false));
}

#[test]
fn error_texts() {
    let e = ToolError::InvalidInput("invalid regular expression \"(\": regex parse error".into());
    assert_eq!(search_error(&e, "/w"), "Invalid regex: \"(\": regex parse error");
    assert_eq!(search_error(&ToolError::NotFound("x".into()), "/nope"), "Error: Path does not exist: /nope");
    assert_eq!(search_error(&ToolError::Denied("denied: y".into()), "/w"), "Error: denied: y");
}

#[test]
fn rules_and_suggestions() {
    let c = Context {
        mode: PermissionMode::Default,
        working_dirs: vec!["/w".into()],
        cwd: "/w".into(),
        home: "/h".into(),
        tool_config: json!({}),
    };
    let cases = [
        Input { pattern: "x".into(), ..Default::default() },
        Input { pattern: "x".into(), path: Some("src".into()), ..Default::default() },
        Input { pattern: "x".into(), path: Some("/w/a.rs".into()), ..Default::default() },
        Input { pattern: "x".into(), path: Some("/".into()), ..Default::default() },
        Input { pattern: "x".into(), path: Some("/w/[odd]*".into()), ..Default::default() },
    ];
    for input in &cases {
        let rules = Grep::suggestions(input, &c);
        assert_eq!(rules.len(), 1);
        let content = rules[0].rule_content.clone().unwrap();
        assert!(Grep::match_rule(PermissionBehavior::Allow, &content, input, &c), "{content} vs {input:?}");
    }
    assert_eq!(Grep::suggestions(&cases[0], &c)[0].rule_content.as_deref(), Some("/w/**"));
    assert_eq!(Grep::suggestions(&cases[1], &c)[0].rule_content.as_deref(), Some("/w/src/**"));
    assert_eq!(Grep::suggestions(&cases[3], &c)[0].rule_content.as_deref(), Some("/**"));
    // The reference's match on the raw path.
    assert!(Grep::match_rule(PermissionBehavior::Deny, "src*", &cases[1], &c));
    let etc = Input { pattern: "x".into(), path: Some("/etc".into()), ..Default::default() };
    assert!(Grep::match_rule(PermissionBehavior::Deny, "/etc/**", &etc, &c));
    assert!(!Grep::match_rule(PermissionBehavior::Deny, "/srv/**", &etc, &c));
}
