//! The file tools' suggested rules satisfy the invariants of Bash's
//! (`docs/permissions.md`, "Suggested rules"), over generated paths:
//! (1) the suggestion, as an allow rule, matches the call it was made for;
//! (2) it matches no path outside the directory asked about, however the
//! path is spelled (`..` segments, wildcard characters in names).
//!
//! Read/Write/Edit match with [`file_rule_matches`]; Glob and Grep match
//! their `dir/**` suggestion against the searched directory and what it
//! reaches (`base/` and `base/pattern`) with [`fnmatch`].

use file_common::{dir_rule_suggestion, dirname, file_rule_matches, file_rule_suggestion, fnmatch, normalize};
use proptest::prelude::*;
use toolhost_sdk::PermissionBehavior::{Allow, Deny};

/// Path segments, wildcard characters and near-miss names included.
fn segment() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "src", "src2", "[x]", "*", "a?b", "my dir", "ü", ".git", "..", "."])
        .prop_map(str::to_string)
}

fn absolute() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..6).prop_map(|s| format!("/{}", s.join("/")))
}

/// Whether `path`, resolved, lies in `dir` (resolved) or below it.
fn inside(path: &str, dir: &str) -> bool {
    let (path, dir) = (normalize(path, "/", "/"), normalize(dir, "/", "/"));
    dir == "/" || path == dir || path.starts_with(&format!("{dir}/"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn a_file_suggestion_allows_its_call_and_nothing_outside(asked in absolute(), other in absolute()) {
        let Some(rule) = file_rule_suggestion(&asked) else {
            // Only a path with a `..` segment gets none (no `dir/**` matches both spellings).
            prop_assert!(asked.split('/').any(|s| s == ".."), "no suggestion for {asked}");
            return Ok(());
        };
        prop_assert!(file_rule_matches(Allow, &rule, &asked), "{rule} must allow {asked}");
        let dir = dirname(&asked);
        if file_rule_matches(Allow, &rule, &other) {
            prop_assert!(inside(&other, dir), "{rule} (for {asked}) allows {other}");
        }
    }

    #[test]
    fn a_directory_suggestion_allows_its_search_and_nothing_outside(base in absolute(), other in absolute()) {
        let base = normalize(&base, "/", "/");
        let rule = dir_rule_suggestion(&base);
        let reached = format!("{}/", base.trim_end_matches('/'));
        prop_assert!(fnmatch(&rule, &reached), "{rule} must match a search of {base}");
        let other = normalize(&other, "/", "/");
        if fnmatch(&rule, &other) || fnmatch(&rule, &format!("{}/", other.trim_end_matches('/'))) {
            prop_assert!(inside(&other, &base), "{rule} (for {base}) matches a search of {other}");
        }
    }
}

#[test]
fn relative_paths_get_no_suggestion() {
    for p in ["main.py", "rel/dir/f", ""] {
        assert_eq!(file_rule_suggestion(p), None, "{p}");
    }
}

#[test]
fn dot_dot_cannot_leave_the_allowed_directory() {
    assert!(file_rule_matches(Allow, "/w/src/**", "/w/src/a.txt"));
    assert!(!file_rule_matches(Allow, "/w/src/**", "/w/src/../../etc/x"));
    assert!(file_rule_matches(Deny, "/etc/**", "/tmp/../etc/x"));
    assert!(file_rule_matches(Allow, "/w/**", "/w/src/../a.txt"));
}
