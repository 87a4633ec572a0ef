use std::fs;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;
use crate::backend::scope::Root;
use crate::backend::{ExitStatus, OutputPiece, SearchMode, SearchRequest};

const SECRET: &[u8] = b"top secret\n";

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    backend: LocalBackend,
    scope: FsScope,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret.txt"), SECRET).unwrap();
        let backend = LocalBackend::new(root.clone(), base.clone());
        let scope = FsScope::new("T", vec![Root::new(root.clone(), true)], "grant it with --grant T=fs-write:PATH");
        Fixture { _tmp: tmp, root, outside, backend, scope }
    }

    fn p(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    fn secret_unchanged(&self) {
        assert_eq!(fs::read(self.outside.join("secret.txt")).unwrap(), SECRET);
        let names: Vec<_> = fs::read_dir(&self.outside).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "outside dir gained entries: {names:?}");
    }
}

fn denied(r: Result<impl std::fmt::Debug, BackendError>) -> String {
    match r {
        Err(BackendError::Denied(msg)) => msg,
        other => panic!("expected Denied, got {other:?}"),
    }
}

#[tokio::test]
async fn file_round_trip() {
    let f = Fixture::new();
    let b = &f.backend;
    b.write_file(&f.scope, &f.p("a/b/c.txt"), b"hello").await.unwrap();
    assert_eq!(b.read_file(&f.scope, &f.p("a/b/c.txt"), u64::MAX).await.unwrap(), b"hello");
    // relative paths are joined onto the cwd (the root here)
    assert_eq!(b.read_file(&f.scope, "a/b/c.txt", u64::MAX).await.unwrap(), b"hello");
    let st = b.stat(&f.scope, &f.p("a/b/c.txt")).await.unwrap();
    assert_eq!((st.kind, st.size), (EntryKind::File, 5));
    assert!(st.mtime_ns > 1_000_000_000_000_000_000);
    assert_eq!(b.stat(&f.scope, &f.p("a")).await.unwrap().kind, EntryKind::Directory);
    b.create_dir(&f.scope, &f.p("x/y/z")).await.unwrap();
    let mut names: Vec<_> =
        b.list_dir(&f.scope, &f.p("")).await.unwrap().into_iter().map(|e| (e.path, e.kind)).collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(names, vec![("a".to_string(), EntryKind::Directory), ("x".to_string(), EntryKind::Directory)]);
    b.remove(&f.scope, &f.p("a")).await.unwrap();
    assert!(!f.root.join("a").exists());
    b.remove(&f.scope, &f.p("x/y/z")).await.unwrap();
    assert!(f.root.join("x/y").exists());
    let err = b.read_file(&f.scope, &f.p("missing.txt"), u64::MAX).await.unwrap_err();
    assert!(matches!(&err, BackendError::NotFound(m) if m.contains("missing.txt")), "{err:?}");
    let err = b.read_file(&f.scope, &f.p("x"), u64::MAX).await.unwrap_err();
    assert!(matches!(&err, BackendError::Invalid(m) if m.contains("directory")), "{err:?}");
    let err = b.remove(&f.scope, &f.p("")).await.unwrap_err();
    assert!(matches!(&err, BackendError::Invalid(m) if m.contains("root itself")), "{err:?}");
    assert!(f.root.exists());
}

/// A FIFO with no writer would hold the reading thread for ever; a file
/// larger than the caller can take would be read whole into the host's
/// memory. Both are refused unread; a file at the bound is read.
#[tokio::test]
async fn a_fifo_or_a_file_past_the_bound_is_refused_unread() {
    let f = Fixture::new();
    let b = &f.backend;
    let fifo = f.root.join("fifo");
    let path = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let err = b.read_file(&f.scope, &f.p("fifo"), u64::MAX).await.unwrap_err();
    assert!(matches!(&err, BackendError::Invalid(m) if m.contains("not a regular file")), "{err:?}");
    fs::write(f.root.join("ten"), b"0123456789").unwrap();
    let err = b.read_file(&f.scope, &f.p("ten"), 9).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::Invalid(m) if m.contains("10 bytes, more than the 9 bytes") && m.contains("limits.max_memory_bytes")),
        "{err:?}"
    );
    assert_eq!(b.read_file(&f.scope, &f.p("ten"), 10).await.unwrap(), b"0123456789");
}

#[tokio::test]
async fn dot_dot_and_absolute_paths_cannot_escape() {
    let f = Fixture::new();
    let b = &f.backend;
    let via_dotdot = format!("{}/../outside/secret.txt", f.root.display());
    let msg = denied(b.read_file(&f.scope, &via_dotdot, u64::MAX).await);
    assert!(msg.contains("outside/secret.txt") && msg.contains("--grant"), "{msg}");
    denied(b.read_file(&f.scope, "../outside/secret.txt", u64::MAX).await);
    denied(b.write_file(&f.scope, "../outside/secret.txt", b"pwned").await);
    denied(b.write_file(&f.scope, &via_dotdot, b"pwned").await);
    let abs = f.outside.join("secret.txt").display().to_string();
    denied(b.read_file(&f.scope, &abs, u64::MAX).await);
    denied(b.write_file(&f.scope, &abs, b"pwned").await);
    denied(b.remove(&f.scope, &abs).await);
    denied(b.stat(&f.scope, &abs).await);
    denied(b.create_dir(&f.scope, &f.outside.join("new").display().to_string()).await);
    f.secret_unchanged();
}

#[tokio::test]
async fn symlink_to_an_outside_file_is_refused() {
    let f = Fixture::new();
    let b = &f.backend;
    symlink(f.outside.join("secret.txt"), f.root.join("abs-link")).unwrap();
    symlink("../outside/secret.txt", f.root.join("rel-link")).unwrap();
    for link in ["abs-link", "rel-link"] {
        let msg = denied(b.read_file(&f.scope, &f.p(link), u64::MAX).await);
        assert!(msg.contains(link) && msg.contains("symbolic link"), "{msg}");
        denied(b.stat(&f.scope, &f.p(link)).await);
        let msg = denied(b.write_file(&f.scope, &f.p(link), b"pwned").await);
        assert!(msg.contains("secret.txt"), "{msg}");
    }
    f.secret_unchanged();
    // Removing the link removes the link, not the target.
    b.remove(&f.scope, &f.p("abs-link")).await.unwrap();
    assert!(fs::symlink_metadata(f.root.join("abs-link")).is_err());
    f.secret_unchanged();
}

#[tokio::test]
async fn symlinked_directory_pointing_outside_is_refused() {
    let f = Fixture::new();
    let b = &f.backend;
    symlink(&f.outside, f.root.join("out")).unwrap();
    denied(b.read_file(&f.scope, &f.p("out/secret.txt"), u64::MAX).await);
    denied(b.list_dir(&f.scope, &f.p("out")).await);
    denied(b.write_file(&f.scope, &f.p("out/secret.txt"), b"pwned").await);
    denied(b.write_file(&f.scope, &f.p("out/new.txt"), b"pwned").await);
    denied(b.create_dir(&f.scope, &f.p("out/sub")).await);
    denied(b.remove(&f.scope, &f.p("out/secret.txt")).await);
    f.secret_unchanged();
    b.remove(&f.scope, &f.p("out")).await.unwrap();
    f.secret_unchanged();
}

#[tokio::test]
async fn symlinks_inside_the_scope_are_followed() {
    let f = Fixture::new();
    let b = &f.backend;
    fs::create_dir(f.root.join("real")).unwrap();
    fs::write(f.root.join("real/file.txt"), b"v1").unwrap();
    // An absolute link to a file inside the same root (cap-std alone refuses absolute links).
    symlink(f.root.join("real/file.txt"), f.root.join("abs-in")).unwrap();
    symlink("real", f.root.join("dir-in")).unwrap();
    assert_eq!(b.read_file(&f.scope, &f.p("abs-in"), u64::MAX).await.unwrap(), b"v1");
    assert_eq!(b.read_file(&f.scope, &f.p("dir-in/file.txt"), u64::MAX).await.unwrap(), b"v1");
    assert_eq!(b.stat(&f.scope, &f.p("abs-in")).await.unwrap().kind, EntryKind::File);
    // Writing through a link replaces the target and keeps the link.
    b.write_file(&f.scope, &f.p("abs-in"), b"v2").await.unwrap();
    assert!(fs::symlink_metadata(f.root.join("abs-in")).unwrap().is_symlink());
    assert_eq!(fs::read(f.root.join("real/file.txt")).unwrap(), b"v2");
    b.write_file(&f.scope, &f.p("dir-in/file.txt"), b"v3").await.unwrap();
    assert_eq!(fs::read(f.root.join("real/file.txt")).unwrap(), b"v3");
}

#[tokio::test]
async fn hard_link_to_an_outside_file_cannot_be_written() {
    let f = Fixture::new();
    let b = &f.backend;
    fs::hard_link(f.outside.join("secret.txt"), f.root.join("alias.txt")).unwrap();
    let msg = denied(b.write_file(&f.scope, &f.p("alias.txt"), b"pwned").await);
    assert!(msg.contains("alias.txt") && msg.contains("hard link"), "{msg}");
    f.secret_unchanged();
    assert_eq!(fs::read(f.root.join("alias.txt")).unwrap(), SECRET);
}

#[tokio::test]
async fn atomic_write_replaces_and_leaves_no_temp_files() {
    let f = Fixture::new();
    let b = &f.backend;
    let target = f.root.join("d/file.sh");
    b.write_file(&f.scope, &f.p("d/file.sh"), b"one").await.unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o750)).unwrap();
    for i in 0..5 {
        b.write_file(&f.scope, &f.p("d/file.sh"), format!("{i}").as_bytes()).await.unwrap();
    }
    assert_eq!(fs::read(&target).unwrap(), b"4");
    assert_eq!(fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o750);
    let names: Vec<_> = fs::read_dir(f.root.join("d")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("file.sh")]);
    // A failing write (a directory in the way) leaves nothing behind.
    fs::create_dir(f.root.join("d/sub")).unwrap();
    let err = b.write_file(&f.scope, &f.p("d/sub"), b"x").await.unwrap_err();
    assert!(matches!(&err, BackendError::Invalid(m) if m.contains("directory")), "{err:?}");
    assert_eq!(fs::read_dir(f.root.join("d")).unwrap().count(), 2);
}

#[tokio::test]
async fn failed_write_leaves_the_target_untouched() {
    let f = Fixture::new();
    let b = &f.backend;
    fs::create_dir(f.root.join("ro")).unwrap();
    fs::write(f.root.join("ro/keep.txt"), b"original").unwrap();
    fs::set_permissions(f.root.join("ro"), fs::Permissions::from_mode(0o555)).unwrap();
    let result = b.write_file(&f.scope, &f.p("ro/keep.txt"), b"new").await;
    fs::set_permissions(f.root.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
    // root ignores directory modes; only check when the OS refused.
    if result.is_err() {
        assert_eq!(fs::read(f.root.join("ro/keep.txt")).unwrap(), b"original");
        assert_eq!(fs::read_dir(f.root.join("ro")).unwrap().count(), 1);
    }
}

#[tokio::test]
async fn read_only_root_refuses_writes() {
    let f = Fixture::new();
    fs::write(f.root.join("a.txt"), b"a").unwrap();
    let ro = FsScope::new("T", vec![Root::new(f.root.clone(), false)], "grant write with --grant");
    let b = &f.backend;
    assert_eq!(b.read_file(&ro, &f.p("a.txt"), u64::MAX).await.unwrap(), b"a");
    let msg = denied(b.write_file(&ro, &f.p("a.txt"), b"b").await);
    assert!(msg.contains("write access") && msg.contains("a.txt"), "{msg}");
    denied(b.create_dir(&ro, &f.p("d")).await);
    denied(b.remove(&ro, &f.p("a.txt")).await);
    assert_eq!(fs::read(f.root.join("a.txt")).unwrap(), b"a");
    let none = FsScope::none("T", "no grant");
    denied(b.read_file(&none, &f.p("a.txt"), u64::MAX).await);
}

// ---------------------------------------------------------------- walk

fn tree(f: &Fixture) {
    let r = &f.root;
    fs::create_dir_all(r.join(".git/objects")).unwrap();
    fs::write(r.join(".git/config"), "[core]\nneedle\n").unwrap();
    fs::write(r.join(".gitignore"), "ignored.txt\nbuild/\n").unwrap();
    fs::write(r.join("ignored.txt"), "needle\n").unwrap();
    fs::create_dir_all(r.join("build")).unwrap();
    fs::write(r.join("build/out.rs"), "needle\n").unwrap();
    fs::create_dir_all(r.join("src/ünï")).unwrap();
    fs::write(r.join("src/main.rs"), "fn main() {\n    let needle = 1;\n}\n").unwrap();
    fs::write(r.join("src/ünï/日本.rs"), "// needle\n").unwrap();
    fs::write(r.join("notes.md"), "no match here\n").unwrap();
    fs::write(r.join(".hidden.rs"), "needle\n").unwrap();
}

fn rel_paths(f: &Fixture, entries: impl IntoIterator<Item = String>) -> Vec<String> {
    entries.into_iter().map(|p| Path::new(&p).strip_prefix(&f.root).unwrap().display().to_string()).collect()
}

fn walk_opts(f: &Fixture) -> WalkOptions {
    WalkOptions { root: f.root.display().to_string(), respect_ignore_files: true, ..Default::default() }
}

#[tokio::test]
async fn walk_honours_gitignore_skips_vcs_and_handles_unicode() {
    let f = Fixture::new();
    tree(&f);
    let b = &f.backend;
    let got = b.walk(&f.scope, &walk_opts(&f)).await.unwrap();
    assert!(got.iter().all(|e| e.kind == EntryKind::File && e.mtime_ns > 0));
    assert_eq!(rel_paths(&f, got.into_iter().map(|e| e.path)), vec!["notes.md", "src/main.rs", "src/ünï/日本.rs"]);

    let hidden = WalkOptions { hidden: true, ..walk_opts(&f) };
    let got = rel_paths(&f, b.walk(&f.scope, &hidden).await.unwrap().into_iter().map(|e| e.path));
    assert_eq!(got, vec![".gitignore", ".hidden.rs", "notes.md", "src/main.rs", "src/ünï/日本.rs"]);

    let all = WalkOptions { hidden: true, respect_ignore_files: false, ..walk_opts(&f) };
    let got = rel_paths(&f, b.walk(&f.scope, &all).await.unwrap().into_iter().map(|e| e.path));
    assert!(got.contains(&"ignored.txt".to_string()) && got.contains(&"build/out.rs".to_string()));
    assert!(!got.iter().any(|p| p.starts_with(".git/")), "{got:?}");

    // As rg's --glob, a matching glob overrides hidden/ignore rules for
    // files (not for the ignored build/ directory, which is never entered).
    let globbed = WalkOptions { globs: vec!["*.rs".into()], ..walk_opts(&f) };
    let got = rel_paths(&f, b.walk(&f.scope, &globbed).await.unwrap().into_iter().map(|e| e.path));
    assert_eq!(got, vec![".hidden.rs", "src/main.rs", "src/ünï/日本.rs"]);
    let negated = WalkOptions { globs: vec!["!src/**".into()], ..walk_opts(&f) };
    let got = rel_paths(&f, b.walk(&f.scope, &negated).await.unwrap().into_iter().map(|e| e.path));
    assert_eq!(got, vec!["notes.md"]);

    let typed = WalkOptions { file_type: Some("markdown".into()), ..walk_opts(&f) };
    let got = rel_paths(&f, b.walk(&f.scope, &typed).await.unwrap().into_iter().map(|e| e.path));
    assert_eq!(got, vec!["notes.md"]);

    let capped = WalkOptions { max_entries: 2, ..walk_opts(&f) };
    assert_eq!(b.walk(&f.scope, &capped).await.unwrap().len(), 2);

    let sub = WalkOptions { root: "src".into(), ..walk_opts(&f) };
    assert_eq!(b.walk(&f.scope, &sub).await.unwrap().len(), 2);
}

#[tokio::test]
async fn walk_rejects_bad_globs_types_and_outside_roots() {
    let f = Fixture::new();
    tree(&f);
    let b = &f.backend;
    let bad_glob = WalkOptions { globs: vec!["src/{a,b".into()], ..walk_opts(&f) };
    let err = b.walk(&f.scope, &bad_glob).await.unwrap_err();
    assert!(matches!(&err, BackendError::Invalid(m) if m.contains("src/{a,b")), "{err:?}");
    let bad_type = WalkOptions { file_type: Some("rustt".into()), ..walk_opts(&f) };
    let err = b.walk(&f.scope, &bad_type).await.unwrap_err();
    assert!(matches!(&err, BackendError::Invalid(m) if m.contains("rustt") && m.contains("rust,")), "{err:?}");
    let outside = WalkOptions { root: f.outside.display().to_string(), ..walk_opts(&f) };
    denied(b.walk(&f.scope, &outside).await);
    symlink(&f.outside, f.root.join("out")).unwrap();
    let via_link = WalkOptions { root: f.p("out"), ..walk_opts(&f) };
    denied(b.walk(&f.scope, &via_link).await);
}

#[tokio::test]
async fn walk_never_follows_symlinks_out_of_the_scope() {
    let f = Fixture::new();
    let b = &f.backend;
    fs::create_dir(f.root.join("real")).unwrap();
    fs::write(f.root.join("real/in.txt"), "needle\n").unwrap();
    symlink(&f.outside, f.root.join("out-dir")).unwrap();
    symlink(f.outside.join("secret.txt"), f.root.join("out-file")).unwrap();
    symlink(f.root.join("real"), f.root.join("in-dir")).unwrap();
    symlink(f.root.join("real/in.txt"), f.root.join("in-file")).unwrap();
    let plain = b.walk(&f.scope, &walk_opts(&f)).await.unwrap();
    let got: Vec<_> = plain.iter().map(|e| (e.path.clone(), e.kind)).collect();
    assert_eq!(got, vec![(f.p("in-file"), EntryKind::Symlink), (f.p("real/in.txt"), EntryKind::File)]);
    let follow = WalkOptions { follow_symlinks: true, ..walk_opts(&f) };
    let got = rel_paths(&f, b.walk(&f.scope, &follow).await.unwrap().into_iter().map(|e| e.path));
    assert_eq!(got, vec!["in-dir/in.txt", "in-file", "real/in.txt"]);
    let req = SearchRequest {
        files: WalkOptions { follow_symlinks: true, ..walk_opts(&f) },
        pattern: "secret|needle".into(),
        mode: SearchMode::FilesWithMatches,
        ..Default::default()
    };
    let got = rel_paths(&f, b.search(&f.scope, &req).await.unwrap().into_iter().map(|m| m.path));
    assert_eq!(got, vec!["in-dir/in.txt", "in-file", "real/in.txt"]);
    let req = SearchRequest { files: walk_opts(&f), ..req };
    let got = rel_paths(&f, b.search(&f.scope, &req).await.unwrap().into_iter().map(|m| m.path));
    assert_eq!(got, vec!["real/in.txt"]);
}

/// A tree past the in-thread budget ([`search::SEQUENTIAL_ENTRIES`]) is
/// walked again in parallel: every file is found exactly once, and the cap
/// on entries counts from zero again.
#[tokio::test]
async fn a_large_tree_is_walked_and_searched_once_per_file() {
    let f = Fixture::new();
    let files = search::SEQUENTIAL_ENTRIES + 500;
    for i in 0..files {
        let dir = f.root.join(format!("d{}", i % 37));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("f{i}.txt")), format!("needle {i}\n")).unwrap();
    }
    let b = &f.backend;
    let got = b.walk(&f.scope, &walk_opts(&f)).await.unwrap();
    let paths: std::collections::BTreeSet<String> = got.iter().map(|e| e.path.clone()).collect();
    assert_eq!((got.len(), paths.len()), (files, files), "each file once");
    let capped = WalkOptions { max_entries: 10, ..walk_opts(&f) };
    assert_eq!(b.walk(&f.scope, &capped).await.unwrap().len(), 10);

    let found = b.search(&f.scope, &search_req(&f, "needle", SearchMode::FilesWithMatches)).await.unwrap();
    let paths: std::collections::BTreeSet<String> = found.iter().map(|m| m.path.clone()).collect();
    assert_eq!((found.len(), paths.len()), (files, files), "each matching file once");
    let mut capped = search_req(&f, "needle", SearchMode::Count);
    capped.files.max_entries = 25;
    let found = b.search(&f.scope, &capped).await.unwrap();
    assert_eq!((found.len(), found.iter().map(|m| m.count).sum::<u64>()), (25, 25));
}

// ---------------------------------------------------------------- search

fn search_req(f: &Fixture, pattern: &str, mode: SearchMode) -> SearchRequest {
    SearchRequest { files: walk_opts(f), pattern: pattern.into(), mode, ..Default::default() }
}

#[tokio::test]
async fn search_modes_context_and_gaps() {
    let f = Fixture::new();
    tree(&f);
    let text: String = (1..=12)
        .map(|i| if i == 3 || i == 9 || i == 10 { format!("hit {i}\n") } else { format!("line {i}\n") })
        .collect();
    fs::write(f.root.join("ctx.txt"), text).unwrap();
    let b = &f.backend;

    let got = b.search(&f.scope, &search_req(&f, "needle", SearchMode::FilesWithMatches)).await.unwrap();
    assert_eq!(rel_paths(&f, got.into_iter().map(|m| m.path)), vec!["src/main.rs", "src/ünï/日本.rs"]);

    let got = b.search(&f.scope, &search_req(&f, "hit|needle", SearchMode::Count)).await.unwrap();
    let counts: Vec<_> = got.iter().map(|m| (m.path.clone(), m.count)).collect();
    assert_eq!(counts, vec![(f.p("ctx.txt"), 3), (f.p("src/main.rs"), 1), (f.p("src/ünï/日本.rs"), 1)]);
    assert!(got.iter().all(|m| m.lines.is_empty()));

    let mut req = search_req(&f, "hit", SearchMode::Content);
    req.before_context = 1;
    req.after_context = 1;
    let got = b.search(&f.scope, &req).await.unwrap();
    assert_eq!(got.len(), 1);
    let lines: Vec<_> =
        got[0].lines.iter().map(|l| (l.line_number, l.text.as_str(), l.is_context, l.gap_before)).collect();
    assert_eq!(
        lines,
        vec![
            (2, "line 2", true, false),
            (3, "hit 3", false, false),
            (4, "line 4", true, false),
            (8, "line 8", true, true),
            (9, "hit 9", false, false),
            (10, "hit 10", false, false),
            (11, "line 11", true, false),
        ]
    );
    assert_eq!(got[0].count, 3);

    // Case-insensitive, single-file root, no context.
    let mut req = search_req(&f, "HIT 1\\d", SearchMode::Content);
    req.case_insensitive = true;
    req.files.root = f.p("ctx.txt");
    let got = b.search(&f.scope, &req).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].lines.iter().map(|l| l.line_number).collect::<Vec<_>>(), vec![10]);
    assert!(!got[0].lines[0].gap_before);

    // Globs and types narrow the files; as rg's --glob, a glob overrides
    // ignore files (ignored.txt is back).
    let mut req = search_req(&f, "needle|hit", SearchMode::FilesWithMatches);
    req.files.globs = vec!["*.txt".into()];
    let got = rel_paths(&f, b.search(&f.scope, &req).await.unwrap().into_iter().map(|m| m.path));
    assert_eq!(got, vec!["ctx.txt", "ignored.txt"]);
    req.files.globs.clear();
    req.files.file_type = Some("rust".into());
    // As rg -t, a type match also overrides the hidden rule.
    let got = rel_paths(&f, b.search(&f.scope, &req).await.unwrap().into_iter().map(|m| m.path));
    assert_eq!(got, vec![".hidden.rs", "src/main.rs", "src/ünï/日本.rs"]);
}

#[tokio::test]
async fn search_multiline_max_columns_and_crlf() {
    let f = Fixture::new();
    fs::write(f.root.join("m.txt"), "start\nfoo foo\nbar\nend\r\nshort\n12345\n").unwrap();
    let b = &f.backend;
    let mut req = search_req(&f, "foo.*\\nbar", SearchMode::Content);
    req.multiline = true;
    let got = b.search(&f.scope, &req).await.unwrap();
    let lines: Vec<_> = got[0].lines.iter().map(|l| (l.line_number, l.text.as_str())).collect();
    assert_eq!(lines, vec![(2, "foo foo"), (3, "bar")]);
    req.mode = SearchMode::Count;
    assert_eq!(b.search(&f.scope, &req).await.unwrap()[0].count, 1);
    // Without multiline a pattern cannot cross a line; rg refuses `\n` too.
    req.multiline = false;
    let err = b.search(&f.scope, &req).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::Invalid(m) if m.contains("multiline") || m.contains("not allowed")),
        "{err:?}"
    );

    let mut req = search_req(&f, "end|short|12345", SearchMode::Content);
    req.max_columns = 5;
    req.before_context = 1;
    let got = b.search(&f.scope, &req).await.unwrap();
    let lines: Vec<_> = got[0].lines.iter().map(|l| (l.line_number, l.text.as_str())).collect();
    // rg counts the line terminator: "end\r\n" is 5 bytes, "12345\n" is 6.
    assert_eq!(
        lines,
        vec![(3, "bar"), (4, "end"), (5, "[Omitted long matching line]"), (6, "[Omitted long matching line]")]
    );
    req.pattern = "short".into();
    req.after_context = 1;
    let got = b.search(&f.scope, &req).await.unwrap();
    let texts: Vec<_> = got[0].lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, vec!["end", "[Omitted long matching line]", "[Omitted long context line]"]);
}

#[tokio::test]
async fn search_skips_binary_files_and_rejects_bad_input() {
    let f = Fixture::new();
    fs::write(f.root.join("text.txt"), "needle\n").unwrap();
    let mut bin = vec![0u8; 100];
    bin.extend_from_slice(b"needle\n");
    fs::write(f.root.join("blob.bin"), bin).unwrap();
    let b = &f.backend;
    let got = b.search(&f.scope, &search_req(&f, "needle", SearchMode::Count)).await.unwrap();
    assert_eq!(rel_paths(&f, got.into_iter().map(|m| m.path)), vec!["text.txt"]);

    let err = b.search(&f.scope, &search_req(&f, "needle(", SearchMode::Content)).await.unwrap_err();
    assert!(matches!(&err, BackendError::Invalid(m) if m.contains("needle(") && m.contains("unclosed")), "{err:?}");
    let mut req = search_req(&f, "needle", SearchMode::Content);
    req.files.globs = vec!["[z-a]".into()];
    assert!(matches!(b.search(&f.scope, &req).await, Err(BackendError::Invalid(m)) if m.contains("[z-a]")));
    let mut req = search_req(&f, "needle", SearchMode::Content);
    req.files.file_type = Some("nope".into());
    assert!(matches!(b.search(&f.scope, &req).await, Err(BackendError::Invalid(m)) if m.contains("nope")));
    let mut req = search_req(&f, "needle", SearchMode::Content);
    req.files.root = f.outside.display().to_string();
    denied(b.search(&f.scope, &req).await);
}

// ---------------------------------------------------------------- processes

fn exec(argv: &[&str], timeout_ms: u64) -> ExecRequest {
    ExecRequest {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: None,
        env: vec![],
        timeout: Duration::from_millis(timeout_ms),
        max_output_bytes: 0,
        write_roots: vec![],
        read_only: false,
    }
}

async fn run_all(p: &mut Box<dyn Process>) -> (Vec<OutputPiece>, ExitStatus) {
    let mut pieces = Vec::new();
    while let Some(piece) = p.next_output().await {
        pieces.push(piece);
    }
    (pieces, p.wait().await)
}

fn joined(pieces: &[OutputPiece], want_stdout: bool) -> String {
    let mut s = Vec::new();
    for p in pieces {
        match (p, want_stdout) {
            (OutputPiece::Stdout(b), true) | (OutputPiece::Stderr(b), false) => s.extend_from_slice(b),
            _ => {}
        }
    }
    String::from_utf8(s).unwrap()
}

/// Live (non-zombie) processes whose command line contains `marker`.
fn live_processes_with(marker: &str) -> usize {
    let mut n = 0;
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let dir = entry.path();
        let Ok(cmd) = fs::read(dir.join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmd).contains(marker) {
            continue;
        }
        let state = fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = state.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if !zombie {
            n += 1;
        }
    }
    n
}

#[tokio::test]
async fn spawn_streams_output_in_order_with_exit_codes_and_env() {
    let f = Fixture::new();
    let b = &f.backend;
    let mut req = exec(
        &["/bin/sh", "-c", "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; pwd; echo $XV; exit 3"],
        10_000,
    );
    req.env = vec![("XV".into(), "extra".into())];
    let mut p = b.spawn(&req).await.unwrap();
    let first = p.next_output().await.unwrap();
    assert_eq!(first, OutputPiece::Stdout(b"one\n".to_vec()));
    let second = p.next_output().await.unwrap();
    assert_eq!(second, OutputPiece::Stderr(b"two\n".to_vec()));
    let (rest, status) = run_all(&mut p).await;
    assert_eq!(joined(&rest, true), format!("three\n{}\nextra\n", f.root.display()));
    assert_eq!(status, ExitStatus { code: 3, timed_out: false, truncated: false });

    let mut p = b.spawn(&exec(&["true"], 10_000)).await.unwrap();
    assert_eq!(run_all(&mut p).await.1.code, 0);

    let mut req = exec(&["pwd"], 10_000);
    req.cwd = Some(f.outside.display().to_string());
    let mut p = b.spawn(&req).await.unwrap();
    let (out, _) = run_all(&mut p).await;
    assert_eq!(joined(&out, true).trim(), f.outside.display().to_string());

    let err = b.spawn(&exec(&["definitely-not-a-program-xyz"], 1000)).await.err().unwrap();
    assert!(matches!(&err, BackendError::NotFound(m) if m.contains("definitely-not-a-program-xyz")), "{err:?}");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let f = Fixture::new();
    let marker = "31.4159";
    let started = Instant::now();
    let mut p = f
        .backend
        .spawn(&exec(&["/bin/sh", "-c", &format!("sleep {marker} & sleep {marker}; echo never")], 300))
        .await
        .unwrap();
    let (out, status) = run_all(&mut p).await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(status, ExitStatus { code: -1, timed_out: true, truncated: false });
    assert!(out.is_empty());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(live_processes_with(marker), 0);

    let mut p = f.backend.spawn(&exec(&["/bin/sh", "-c", "echo hi"], 0)).await.unwrap();
    assert!(p.wait().await.timed_out);
}

#[tokio::test]
async fn a_background_child_holding_the_pipes_does_not_hang() {
    let f = Fixture::new();
    // Same group: killed when the shell exits.
    let started = Instant::now();
    let mut p = f.backend.spawn(&exec(&["/bin/sh", "-c", "sleep 27.1828 & echo done"], 20_000)).await.unwrap();
    let (out, status) = run_all(&mut p).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!((joined(&out, true).as_str(), status.code, status.timed_out), ("done\n", 0, false));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(live_processes_with("27.1828"), 0);
    // A new session escapes the group: reading stops after a short grace.
    let started = Instant::now();
    let mut p = f.backend.spawn(&exec(&["/bin/sh", "-c", "setsid sleep 4.669 & echo done"], 20_000)).await.unwrap();
    let (out, status) = run_all(&mut p).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!((joined(&out, true).as_str(), status.code), ("done\n", 0));
}

#[tokio::test]
async fn output_cap_truncates_and_drop_kills_the_group() {
    let f = Fixture::new();
    let mut req = exec(&["/bin/sh", "-c", "head -c 100000 /dev/zero; echo err >&2"], 10_000);
    req.max_output_bytes = 1000;
    let mut p = f.backend.spawn(&req).await.unwrap();
    let (out, status) = run_all(&mut p).await;
    let stdout: usize = out.iter().map(|p| if let OutputPiece::Stdout(b) = p { b.len() } else { 0 }).sum();
    assert_eq!(stdout, 1000);
    assert_eq!(joined(&out, false), "err\n");
    assert!(status.truncated && status.code == 0, "{status:?}");

    let p = f.backend.spawn(&exec(&["/bin/sh", "-c", "sleep 16.180 & sleep 16.180"], 60_000)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(live_processes_with("16.180") >= 2);
    drop(p);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(live_processes_with("16.180"), 0);
}

#[tokio::test]
async fn a_symlinked_start_reports_paths_under_the_given_path() {
    let f = Fixture::new();
    fs::create_dir_all(f.root.join("real/sub")).unwrap();
    fs::write(f.root.join("real/sub/a.rs"), "needle\n").unwrap();
    fs::write(f.root.join("real/b.md"), "needle\n").unwrap();
    std::os::unix::fs::symlink(f.root.join("real"), f.root.join("link")).unwrap();
    let link = f.root.join("link").display().to_string();
    let opts = WalkOptions { root: link.clone(), hidden: true, ..Default::default() };
    let got: Vec<String> = f.backend.walk(&f.scope, &opts).await.unwrap().into_iter().map(|e| e.path).collect();
    assert_eq!(got, vec![format!("{link}/b.md"), format!("{link}/sub/a.rs")]);

    let named = WalkOptions { match_names: vec!["*.rs".into()], ..opts.clone() };
    let got: Vec<String> = f.backend.walk(&f.scope, &named).await.unwrap().into_iter().map(|e| e.path).collect();
    assert_eq!(got, vec![format!("{link}/sub/a.rs")], "the name filter keeps only matching names");

    let req = SearchRequest {
        files: opts,
        pattern: "needle".into(),
        mode: SearchMode::FilesWithMatches,
        ..Default::default()
    };
    let files: Vec<String> = f.backend.search(&f.scope, &req).await.unwrap().into_iter().map(|f| f.path).collect();
    assert!(files.iter().all(|p| p.starts_with(&link)), "{files:?}");
}

/// toolhost's own files inside a granted root: every operation is refused
/// (as given, through a symlink, through a hard link), listings, walks and
/// searches leave them out, and the files stay as they were.
#[tokio::test]
async fn protected_paths_are_refused_whatever_the_scope() {
    use crate::protected::{ProtectedKind, ProtectedPaths};
    let f = Fixture::new();
    let settings = f.root.join("toolhost.toml");
    let state = f.root.join("state");
    fs::write(&settings, b"mode = \"default\"\n").unwrap();
    fs::create_dir(&state).unwrap();
    fs::write(state.join("s.json"), b"{}").unwrap();
    symlink(&settings, f.root.join("link")).unwrap();
    fs::hard_link(&settings, f.root.join("hard")).unwrap();
    let mut protected = ProtectedPaths::new();
    protected.add(ProtectedKind::SettingsFile, &settings);
    protected.add(ProtectedKind::StateDir, &state);
    let b = LocalBackend::new(f.root.clone(), f.root.clone()).with_protected(Arc::new(protected));
    let s = &f.scope;
    for path in ["toolhost.toml", "link", "hard", "state", "state/s.json", "state/new.json", "x/../toolhost.toml"] {
        let p = f.p(path);
        assert!(denied(b.read_file(s, &p, u64::MAX).await).contains("no tool may touch it"), "{path}");
        assert!(denied(b.write_file(s, &p, b"mode = \"bypass\"").await).contains("no tool may touch it"), "{path}");
        assert!(denied(b.stat(s, &p).await).contains("no tool may touch it"), "{path}");
        assert!(denied(b.real_path(s, &p).await).contains("no tool may touch it"), "{path}");
    }
    denied(b.remove(s, &f.p("toolhost.toml")).await);
    denied(b.remove(s, &f.p("state")).await);
    denied(b.list_dir(s, &f.p("state")).await);
    let names: Vec<String> = b.list_dir(s, &f.p("")).await.unwrap().into_iter().map(|e| e.path).collect();
    assert!(!names.iter().any(|n| n == "toolhost.toml" || n == "state"), "{names:?}");
    let walk = WalkOptions { root: f.p(""), hidden: true, follow_symlinks: true, ..Default::default() };
    let walked: Vec<String> = b.walk(s, &walk).await.unwrap().into_iter().map(|e| e.path).collect();
    assert!(!walked.iter().any(|p| p.ends_with("toolhost.toml") || p.contains("/state")), "{walked:?}");
    let request = SearchRequest { files: walk, pattern: "mode|\\{\\}".into(), ..Default::default() };
    let found: Vec<String> = b.search(s, &request).await.unwrap().into_iter().map(|f| f.path).collect();
    let leaked = |p: &String| ["toolhost.toml", "link", "hard"].iter().any(|n| p.ends_with(n)) || p.contains("/state");
    assert!(!found.iter().any(leaked), "{found:?}");
    assert_eq!(fs::read(&settings).unwrap(), b"mode = \"default\"\n");
    assert_eq!(fs::read(state.join("s.json")).unwrap(), b"{}");
    assert!(!state.join("new.json").exists());
}
