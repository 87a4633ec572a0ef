//! The file tools (Read, Write, Edit, Glob, Grep) through the real built-in
//! components: the conformance cases of spec §14.14, read-before-write and
//! staleness, escape attempts (`..`, absolute paths, symlinks) that must
//! neither read nor touch anything outside the working directory, and Grep
//! and Glob compared with `rg` and `find` on a generated tree.
//!
//! The comparisons need `rg`: without it they are skipped with a message,
//! except under `CI=true`, where a missing `rg` fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolhost::permission::Mode;
use toolhost::response::{ContentBlock, ResultState, ToolResponse};
use toolhost::state::AgentState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};
use toolhost_e2e::Scratch;

struct Env {
    scratch: Scratch,
    host: Toolhost,
    state: Arc<AgentState>,
    work: PathBuf,
}

impl Env {
    async fn new() -> Self {
        let scratch = Scratch::new();
        let host = scratch.host(scratch.settings()).await;
        let work = scratch.work();
        Self { scratch, host, state: Arc::new(AgentState::new()), work }
    }

    /// `work/<rel>` as a string.
    fn p(&self, rel: &str) -> String {
        self.work.join(rel).display().to_string()
    }

    /// Calls in accept-edits mode (writes inside the working dir are allowed
    /// by the tools themselves); an ask is answered with `answer`.
    async fn call_with(&self, tool: &str, input: Value, answer: PermissionAnswer) -> ToolResponse {
        self.host
            .call(CallRequest::new(tool, input.to_string()).session(self.state.clone()).mode(Mode::AcceptEdits))
            .finish(answer)
            .await
            .into_response()
    }

    /// Calls; any ask is denied.
    async fn call(&self, tool: &str, input: Value) -> ToolResponse {
        self.call_with(tool, input, PermissionAnswer::Deny).await
    }
}

fn ok(r: &ToolResponse) -> String {
    assert!(matches!(r.state, ResultState::Success), "expected success: {r:?}");
    r.text()
}

fn err(r: &ToolResponse) -> String {
    assert_eq!(r.state, ResultState::Error, "expected an error: {r:?}");
    r.text()
}

fn write(path: impl AsRef<Path>, content: impl AsRef<[u8]>) {
    let path = path.as_ref();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

fn set_mtime(path: impl AsRef<Path>, secs_ago: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago)).unwrap();
}

/// A minimal PDF with one page per entry, each showing its text.
fn make_pdf(pages: &[&str]) -> Vec<u8> {
    let n = pages.len();
    let mut objects: Vec<String> = vec!["<< /Type /Catalog /Pages 2 0 R >>".into()];
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")));
    objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into());
    for (i, text) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        let stream = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
        objects.push(format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6,
    0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 10, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d,
    0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_are_loaded_with_the_reference_flags() {
    let env = Env::new().await;
    for (name, read_only, state) in [
        ("Read", true, true),
        ("Write", false, true),
        ("Edit", false, true),
        ("Glob", true, false),
        ("Grep", true, false),
    ] {
        let info = env.host.describe(name).await.unwrap_or_else(|e| panic!("{name} is a built-in: {e}"));
        assert_eq!(
            (info.read_only, info.concurrency_safe, info.state_injected),
            (read_only, read_only, state),
            "{name}: {info:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_text_conformance() {
    let env = Env::new().await;
    let long = "x".repeat(2005);
    write(env.work.join("t.txt"), format!("line1\r\nline2\n{long}\nfoo foo\n"));
    let r = env.call("Read", json!({"file_path": env.p("t.txt")})).await;
    assert_eq!(
        ok(&r),
        format!("     1\tline1\n     2\tline2\n     3\t{}[truncated]\n     4\tfoo foo", "x".repeat(2000))
    );
    let r = env.call("Read", json!({"file_path": env.p("t.txt"), "offset": 2, "limit": 2})).await;
    assert_eq!(ok(&r), format!("     2\tline2\n     3\t{}[truncated]", "x".repeat(2000)));
    let r = env.call("Read", json!({"file_path": env.p("t.txt"), "offset": 50})).await;
    assert_eq!(ok(&r), "");

    assert_eq!(
        err(&env.call("Read", json!({"file_path": "t.txt"})).await),
        "Error: file_path must be an absolute path, got: t.txt"
    );
    let missing = env.p("missing.txt");
    assert_eq!(
        err(&env.call("Read", json!({"file_path": missing})).await),
        format!("Error: File does not exist: {missing}")
    );
    let dir = env.work.display().to_string();
    assert_eq!(
        err(&env.call("Read", json!({"file_path": dir})).await),
        format!("Error: Path is a directory, not a file: {dir}")
    );

    // Unknown extension: text. A binary file: refused (our addition).
    write(env.work.join("a.xyz"), "hello\n");
    assert_eq!(ok(&env.call("Read", json!({"file_path": env.p("a.xyz")})).await), "     1\thello");
    write(env.work.join("blob.bin"), b"ab\0cd");
    let bin = env.p("blob.bin");
    assert_eq!(
        err(&env.call("Read", json!({"file_path": bin})).await),
        format!("Error: {bin} appears to be a binary file; Read shows text, images and PDFs only.")
    );
    // Schema bounds are enforced by the host.
    let r = env.call("Read", json!({"file_path": env.p("a.xyz"), "limit": 2001})).await;
    assert_ne!(r.state, ResultState::Success);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_images_and_pdfs() {
    let env = Env::new().await;
    write(env.work.join("pic.png"), PNG);
    let r = env.call("Read", json!({"file_path": env.p("pic.png")})).await;
    assert!(matches!(r.state, ResultState::Success), "{r:?}");
    match &r.content[..] {
        [ContentBlock::Data { media_type, data, name, .. }] => {
            assert_eq!(media_type, "image/png");
            assert_eq!(data, PNG);
            assert_eq!(name.as_deref(), Some("pic.png"));
        }
        other => panic!("expected one data block, got {other:?}"),
    }
    write(env.work.join("pic.bmp"), b"BM....");
    assert_eq!(
        err(&env.call("Read", json!({"file_path": env.p("pic.bmp")})).await),
        "Error: Unsupported image type image/bmp, only image/png, image/jpeg, image/gif, image/webp are supported."
    );

    write(env.work.join("doc.pdf"), make_pdf(&["Alpha page", "Beta page", "Gamma page"]));
    let text = ok(&env.call("Read", json!({"file_path": env.p("doc.pdf"), "pages": "2-3"})).await);
    assert!(text.starts_with("--- Page 2/3 ---\n") && text.contains("Beta page"), "{text}");
    assert!(
        text.contains("\n\n--- Page 3/3 ---\n") && text.contains("Gamma page") && !text.contains("Alpha"),
        "{text}"
    );
    let all = ok(&env.call("Read", json!({"file_path": env.p("doc.pdf")})).await);
    assert!(all.contains("--- Page 1/3 ---") && all.contains("Alpha page"), "{all}");
    let eleven: Vec<String> = (1..=11).map(|i| format!("Page {i}")).collect();
    write(env.work.join("long.pdf"), make_pdf(&eleven.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(
        err(&env.call("Read", json!({"file_path": env.p("long.pdf")})).await),
        "Error: PDF has 11 pages, more than 10. You must provide the pages parameter (e.g. \"1-5\") to read specific pages, max 20 pages per request."
    );
    assert_eq!(
        err(&env.call("Read", json!({"file_path": env.p("long.pdf"), "pages": "12"})).await),
        "Error: Invalid pages '12'. PDF has 11 page(s)."
    );
    write(env.work.join("bad.pdf"), "not a pdf");
    assert!(err(&env.call("Read", json!({"file_path": env.p("bad.pdf")})).await).starts_with("Error reading PDF: "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_conformance_and_read_before_write() {
    let env = Env::new().await;
    write(env.work.join("existing.txt"), "old\n");
    let existing = env.p("existing.txt");
    assert_eq!(
        err(&env.call("Write", json!({"file_path": existing, "content": "new\n"})).await),
        format!(
            "Error: File {existing} exists but has not been read yet. You must read the file first before writing to it."
        )
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "old\n");

    // A new nested file.
    let nested = env.p("a/b/c.txt");
    let r = env.call("Write", json!({"file_path": nested, "content": "a\nb\n"})).await;
    assert_eq!(ok(&r), format!("The file {nested} has been written successfully (3 lines)."));
    assert_eq!(std::fs::read_to_string(&nested).unwrap(), "a\nb\n");
    let diff = r.metadata["diff"].as_str().unwrap();
    assert!(diff.starts_with(&format!("--- /dev/null\n+++ b/{nested}\n@@ -0,0 +1,2 @@\n+a\n+b\n")), "{diff}");
    assert_eq!(r.metadata["file_path"], json!(nested));
    assert_eq!(r.metadata["occurrences"], json!(1));

    // Read, then overwrite: allowed once; the next write needs a new Read.
    ok(&env.call("Read", json!({"file_path": existing})).await);
    let r = env.call("Write", json!({"file_path": existing, "content": "new\n"})).await;
    assert_eq!(ok(&r), format!("The file {existing} has been written successfully (2 lines)."));
    assert_eq!(r.metadata["diff"], json!(format!("--- a/{existing}\n+++ b/{existing}\n@@ -1 +1 @@\n-old\n+new\n")));
    assert!(
        err(&env.call("Write", json!({"file_path": existing, "content": "again\n"})).await)
            .contains("has not been read yet")
    );
    assert!(
        err(&env.call("Edit", json!({"file_path": existing, "old_string": "new", "new_string": "x"})).await)
            .contains("must first read")
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "new\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_conformance() {
    let env = Env::new().await;
    write(env.work.join("e.txt"), "foo\r\nbar foo\r\n");
    let p = env.p("e.txt");
    assert_eq!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "foo", "new_string": "baz"})).await),
        "Error: To edit a file, you must first read it using the Read tool."
    );
    ok(&env.call("Read", json!({"file_path": p})).await);
    assert_eq!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "foo", "new_string": "foo"})).await),
        "Error: old_string and new_string are identical. No changes to make."
    );
    assert_eq!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "foo", "new_string": "baz"})).await),
        format!(
            "Error: old_string appears 2 times in {p}. Set replace_all=true to replace all occurrences, or make old_string more specific."
        )
    );
    assert_eq!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "nope", "new_string": "baz"})).await),
        format!("Error: old_string not found in {p}")
    );
    let r =
        env.call("Edit", json!({"file_path": p, "old_string": "foo", "new_string": "baz", "replace_all": true})).await;
    assert_eq!(ok(&r), format!("Successfully replaced all 2 occurrences in {p}"));
    assert_eq!(r.metadata["occurrences"], json!(2));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "baz\nbar baz\n", "CRLF saved as LF");
    assert!(r.metadata["diff"].as_str().unwrap().starts_with(&format!("--- a/{p}\n+++ b/{p}\n")));
    // Right after an edit the file must be read again.
    assert_eq!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "bar", "new_string": "qux"})).await),
        "Error: To edit a file, you must first read it using the Read tool."
    );
    ok(&env.call("Read", json!({"file_path": p})).await);
    let r = env.call("Edit", json!({"file_path": p, "old_string": "bar", "new_string": "qux"})).await;
    assert_eq!(ok(&r), format!("Successfully replaced 1 occurrence in {p}"));
    let missing = env.p("gone.txt");
    assert_eq!(
        err(&env.call("Edit", json!({"file_path": missing, "old_string": "a", "new_string": "b"})).await),
        format!("Error: File not found: {missing}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_behind_the_tools_back_must_be_read_again() {
    let env = Env::new().await;
    let p = env.p("s.txt");
    write(&p, "one\n");
    ok(&env.call("Read", json!({"file_path": p})).await);
    // Someone else changes the file (a different mtime).
    write(&p, "one two\n");
    set_mtime(&p, 30);
    assert!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "one", "new_string": "1"})).await)
            .contains("must first read")
    );
    assert!(err(&env.call("Write", json!({"file_path": p, "content": "x"})).await).contains("has not been read yet"));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "one two\n");
    // Deleted after the read: not found.
    ok(&env.call("Read", json!({"file_path": p})).await);
    std::fs::remove_file(&p).unwrap();
    assert!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "one", "new_string": "1"})).await)
            .contains("File not found")
    );
    // Deleted and recreated: the old read does not count.
    write(&p, "one\n");
    set_mtime(&p, 60);
    assert!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "one", "new_string": "1"})).await)
            .contains("must first read")
    );
    // Rewritten with its size kept and its mtime put back: the read cache
    // keeps the file's digest, not its mtime alone, so the read no longer
    // counts and the other writer's bytes are not overwritten.
    ok(&env.call("Read", json!({"file_path": p})).await);
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    write(&p, "six\n");
    std::fs::File::options().write(true).open(&p).unwrap().set_modified(mtime).unwrap();
    assert!(
        err(&env.call("Edit", json!({"file_path": p, "old_string": "six", "new_string": "6"})).await)
            .contains("must first read")
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "six\n");
}

/// A file read, then replaced by a symbolic link to a file outside the
/// working directory with the same size and mtime: the read cache checks
/// the file again through the tool's own scope, so the read does not count,
/// the link is not followed out, and the outside file is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_file_swapped_for_a_link_outside_does_not_count_as_read() {
    let env = Env::new().await;
    let p = env.p("swap.txt");
    write(&p, "same\n");
    ok(&env.call("Read", json!({"file_path": p})).await);
    let outside = env.scratch.outside("secret.txt");
    write(&outside, "same\n");
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    std::fs::File::options().write(true).open(&outside).unwrap().set_modified(mtime).unwrap();
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink(&outside, &p).unwrap();
    let r = env.call("Edit", json!({"file_path": p, "old_string": "same", "new_string": "changed"})).await;
    assert_ne!(r.state, toolhost::response::ResultState::Success, "{}", r.text());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "same\n", "nothing outside was written");
}

/// Every file under `dir` with its content.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_neither_read_nor_touch_anything_outside() {
    let env = Env::new().await;
    let secret = env.scratch.outside("secret.txt");
    write(&secret, "TOP-SECRET-CONTENT\n");
    let outdir = env.scratch.outside("outdir");
    write(outdir.join("inner.txt"), "TOP-SECRET-INNER\n");
    std::os::unix::fs::symlink(&secret, env.work.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outdir, env.work.join("linkdir")).unwrap();
    write(env.work.join("ok.txt"), "fine\n");
    let before = snapshot(env.scratch.dir.path());

    let dotdot = format!("{}/../secret.txt", env.work.display());
    let absolute = secret.display().to_string();
    let via_link = env.p("link.txt");
    let via_dir = env.p("linkdir/inner.txt");
    for path in [&dotdot, &absolute, &via_link, &via_dir] {
        let r = env.call_with("Read", json!({"file_path": path}), PermissionAnswer::AllowOnce).await;
        let text = err(&r);
        assert!(!text.contains("TOP-SECRET"), "{path}: {text}");
        // Asked (the user allows) but the sandbox still refuses.
        for (tool, input) in [
            ("Write", json!({"file_path": path, "content": "pwned"})),
            ("Edit", json!({"file_path": path, "old_string": "TOP", "new_string": "pwned"})),
        ] {
            let r = env.call_with(tool, input, PermissionAnswer::AllowOnce).await;
            assert!(!r.text().contains("TOP-SECRET"), "{tool} {path}: {r:?}");
            assert_ne!(r.state, ResultState::Success, "{tool} {path}: {r:?}");
        }
    }
    // New files outside through `..` or a symlinked directory.
    for path in [format!("{}/../new.txt", env.work.display()), env.p("linkdir/new.txt")] {
        let r =
            env.call_with("Write", json!({"file_path": path, "content": "pwned"}), PermissionAnswer::AllowOnce).await;
        assert_ne!(r.state, ResultState::Success, "{path}: {r:?}");
    }

    // Glob and Grep: outside bases are refused; links out are not followed.
    let outside_base = env.scratch.dir.path().canonicalize().unwrap().display().to_string();
    for input in [json!({"pattern": "*", "path": outside_base}), json!({"pattern": format!("{outside_base}/*.txt")})] {
        let r = env.call("Glob", input.clone()).await;
        assert!(!r.text().contains("secret.txt"), "{input}: {r:?}");
    }
    let r = env.call("Glob", json!({"pattern": "../*"})).await;
    assert!(!r.text().contains("secret"), "{r:?}");
    let listed = ok(&env.call("Glob", json!({"pattern": "**"})).await);
    assert!(listed.contains("ok.txt") && !listed.contains("inner.txt"), "{listed}");
    let r = env.call("Grep", json!({"pattern": "TOP-SECRET", "path": outside_base})).await;
    assert!(!r.text().contains("secret.txt") && !r.text().contains("TOP-SECRET"), "{r:?}");
    let r = env.call("Grep", json!({"pattern": "TOP-SECRET", "output_mode": "content"})).await;
    assert_eq!(ok(&r), "No matches found for pattern: TOP-SECRET");

    assert_eq!(snapshot(env.scratch.dir.path()), before, "nothing may change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob_conformance() {
    let env = Env::new().await;
    for (rel, age) in [("old.py", 300), ("src/new.py", 10), (".hidden/mid.py", 100), ("src/x.rs", 5)] {
        write(env.work.join(rel), "x\n");
        set_mtime(env.work.join(rel), age);
    }
    let r = env.call("Glob", json!({"pattern": "**/*.py"})).await;
    assert_eq!(ok(&r), [env.p("src/new.py"), env.p(".hidden/mid.py"), env.p("old.py")].join("\n"));
    let r = env.call("Glob", json!({"pattern": "*.py", "path": env.p("src")})).await;
    assert_eq!(ok(&r), env.p("src/new.py"));
    let r = env.call("Glob", json!({"pattern": "**/*.{rs,py}", "path": env.p("src")})).await;
    assert_eq!(ok(&r), [env.p("src/x.rs"), env.p("src/new.py")].join("\n"));
    let nope = env.p("nope");
    assert_eq!(
        err(&env.call("Glob", json!({"pattern": "*", "path": nope})).await),
        format!("Directory not found: {nope}")
    );
    assert_eq!(ok(&env.call("Glob", json!({"pattern": "*.java"})).await), "No files found matching pattern: *.java");
    // An absolute pattern under the base searches there (the reference finds nothing).
    let abs = format!("{}/src/*.py", env.work.display());
    assert_eq!(ok(&env.call("Glob", json!({"pattern": abs})).await), env.p("src/new.py"));

    for i in 0..120 {
        write(env.work.join(format!("many/f{i:03}.txt")), "");
    }
    let text = ok(&env.call("Glob", json!({"pattern": "many/*.txt"})).await);
    assert_eq!(text.lines().filter(|l| l.starts_with('/')).count(), 100);
    assert!(
        text.ends_with(
            "\n\n(Results are truncated: showing the first 100 of 120 matches. Use a more specific path or pattern.)"
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_conformance() {
    let env = Env::new().await;
    write(env.work.join("a.txt"), "hello world\nsecond line\n");
    write(env.work.join("b.txt"), "nothing\n");
    let a = env.p("a.txt");
    assert_eq!(ok(&env.call("Grep", json!({"pattern": "world"})).await), a);
    assert_eq!(
        ok(&env.call("Grep", json!({"pattern": "world", "output_mode": "content"})).await),
        format!("{a}:1:hello world")
    );
    assert_eq!(ok(&env.call("Grep", json!({"pattern": "world", "output_mode": "count"})).await), format!("{a}:1"));
    assert_eq!(
        ok(&env.call("Grep", json!({"pattern": "second", "output_mode": "content", "-B": 1})).await),
        format!("{a}-1-hello world\n{a}:2:second line")
    );
    // A single file: no path prefix.
    assert_eq!(
        ok(&env.call("Grep", json!({"pattern": "second", "path": a, "output_mode": "content"})).await),
        "2:second line"
    );
    assert_eq!(
        ok(&env.call("Grep", json!({"pattern": "second", "path": a, "output_mode": "content", "n": false})).await),
        "second line"
    );
    write(env.work.join("lines.txt"), "m1\nm2\nm3\nm4\n");
    let r = env
        .call(
            "Grep",
            json!({"pattern": "m", "path": env.p("lines.txt"), "output_mode": "content", "head_limit": 2, "offset": 1}),
        )
        .await;
    assert_eq!(ok(&r), "2:m2\n3:m3\n\n[Showing results with pagination = limit: 2, offset: 1]");
    let r = env.call("Grep", json!({"pattern": "NOPE"})).await;
    assert_eq!(r.state, ResultState::Success);
    assert_eq!(r.text(), "No matches found for pattern: NOPE");
    assert!(err(&env.call("Grep", json!({"pattern": "("})).await).starts_with("Invalid regex: "));
    assert!(err(&env.call("Grep", json!({"pattern": "x", "type": "nosuchtype"})).await).contains("nosuchtype"));
    let r = env.call("Grep", json!({"pattern": "HELLO", "i": true, "glob": "*.txt,*.md"})).await;
    assert_eq!(ok(&r), a);
}

// --- Comparisons with rg and find -------------------------------------------

/// `rg`, or `None` (skip) outside CI. Under `CI=true` a missing `rg` fails.
fn rg() -> Option<&'static str> {
    let found = Command::new("rg").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if found {
        return Some("rg");
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "ripgrep (`rg`) is required for the Grep/Glob comparisons under CI=true; install it (apt-get install -y ripgrep)"
        );
    }
    eprintln!("SKIPPED: `rg` is not installed; the Grep/Glob comparisons with ripgrep did not run");
    None
}

fn run_rg(args: &[&str], cwd: &Path) -> String {
    let out = Command::new("rg").args(args).current_dir(cwd).output().expect("running rg");
    assert!(out.status.code().is_some_and(|c| c <= 1), "rg {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The argv the reference builds, minus the search path, in a stable order.
fn rg_base() -> Vec<&'static str> {
    toolhost_e2e::RG_REFERENCE_FLAGS.iter().copied().chain(["--sort", "path"]).collect()
}

/// A tree with a git repo, ignored files, hidden files, a binary file,
/// unicode and space names and a long line.
fn generate_tree(root: &Path) {
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(root.join(".git/HEAD"), "needle in git\n");
    write(root.join(".gitignore"), "ignored/\n*.log\n");
    write(root.join("ignored/x.py"), "needle ignored\n");
    write(root.join("build.log"), "needle log\n");
    write(root.join(".hidden/h.py"), "def needle():\n    pass\n");
    write(root.join("bin.dat"), b"needle\0binary\n");
    write(root.join("ünï/çødé.py"), "première ligne\nNeedle unicode\nneedle again\n");
    write(root.join("sp ace/f.txt"), "a needle with spaces\n");
    let mut long = String::from("needle ");
    long.push_str(&"y".repeat(600));
    write(root.join("long.txt"), format!("{long}\nshort needle\n"));
    let mut body = String::new();
    for i in 1..=40 {
        body.push_str(&if i % 9 == 0 { format!("line {i} needle\n") } else { format!("line {i}\n") });
    }
    write(root.join("src/main.rs"), &body);
    write(root.join("src/lib.rs"), "pub fn needle_fn() {}\n// NEEDLE upper\n");
    write(root.join("deep/er/est/z.py"), "x = 'needle'\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_matches_ripgrep_output() {
    let Some(_) = rg() else { return };
    let env = Env::new().await;
    generate_tree(&env.work);
    let work = env.work.display().to_string();
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"pattern": "needle", "head_limit": 0}), vec!["-l", "needle"]),
        (json!({"pattern": "needle", "output_mode": "content", "head_limit": 0}), vec!["-n", "needle"]),
        (json!({"pattern": "needle", "output_mode": "content", "n": false, "head_limit": 0}), vec!["needle"]),
        (json!({"pattern": "needle", "output_mode": "count", "head_limit": 0}), vec!["-c", "needle"]),
        (
            json!({"pattern": "needle", "output_mode": "content", "-C": 2, "head_limit": 0}),
            vec!["-n", "-C", "2", "needle"],
        ),
        (
            json!({"pattern": "needle", "output_mode": "content", "-A": 1, "-B": 3, "head_limit": 0}),
            vec!["-n", "-B", "3", "-A", "1", "needle"],
        ),
        (
            json!({"pattern": "needle", "i": true, "output_mode": "content", "head_limit": 0}),
            vec!["-i", "-n", "needle"],
        ),
        (
            json!({"pattern": "n[e]+dle\\s+\\w+", "output_mode": "content", "head_limit": 0}),
            vec!["-n", "n[e]+dle\\s+\\w+"],
        ),
        (json!({"pattern": "needle", "glob": "*.py", "head_limit": 0}), vec!["-l", "--glob", "*.py", "needle"]),
        (
            json!({"pattern": "needle", "type": "rust", "output_mode": "content", "head_limit": 0}),
            vec!["-n", "--type", "rust", "needle"],
        ),
        (
            json!({"pattern": "ligne\\nNeedle", "multiline": true, "output_mode": "content", "head_limit": 0}),
            vec!["-U", "--multiline-dotall", "-n", "ligne\\nNeedle"],
        ),
    ];
    for (input, args) in cases {
        let mut argv: Vec<&str> = rg_base();
        argv.extend(args);
        argv.push(&work);
        let expected = run_rg(&argv, &env.work);
        let got = ok(&env.call("Grep", input.clone()).await);
        assert_eq!(got, expected, "Grep {input} vs rg {argv:?}");
    }
    // A single file.
    let file = env.p("src/main.rs");
    let mut argv: Vec<&str> = rg_base();
    argv.extend(["-n", "-C", "1", "needle", &file]);
    let got =
        ok(&env.call("Grep", json!({"pattern": "needle", "path": file, "output_mode": "content", "context": 1})).await);
    assert_eq!(got, run_rg(&argv, &env.work));
    // A relative path is shown as given.
    let got = ok(&env.call("Grep", json!({"pattern": "needle", "path": "src"})).await);
    let mut argv: Vec<&str> = rg_base();
    argv.extend(["-l", "needle", "src"]);
    assert_eq!(got, run_rg(&argv, &env.work));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob_matches_rg_files_and_find() {
    let Some(_) = rg() else { return };
    let env = Env::new().await;
    generate_tree(&env.work);
    let work = env.work.display().to_string();
    // (`rg --glob '*'` would whitelist ignored files too: overrides beat ignore rules.)
    for (pattern, rg_glob, find_name) in
        [("**/*.py", Some("*.py"), "*.py"), ("**/*.txt", Some("*.txt"), "*.txt"), ("**", None, "*")]
    {
        let got: BTreeSet<String> =
            ok(&env.call("Glob", json!({"pattern": pattern})).await).lines().map(String::from).collect();
        let mut argv: Vec<&str> = rg_base();
        argv.push("--files");
        if let Some(g) = rg_glob {
            argv.extend(["--glob", g]);
        }
        argv.push(&work);
        let from_rg: BTreeSet<String> = run_rg(&argv, &env.work).lines().map(String::from).collect();
        assert_eq!(got, from_rg, "Glob {pattern} vs rg --files");
        let find = Command::new("find")
            .args([
                &work,
                "-type",
                "f",
                "-name",
                find_name,
                "-not",
                "-path",
                "*/.git/*",
                "-not",
                "-path",
                "*/ignored/*",
                "-not",
                "-name",
                "*.log",
            ])
            .output()
            .expect("find");
        let from_find: BTreeSet<String> = String::from_utf8(find.stdout).unwrap().lines().map(String::from).collect();
        assert_eq!(got, from_find, "Glob {pattern} vs find");
    }
}

#[test]
fn read_before_edit_holds_across_cli_processes() {
    let scratch = Scratch::new();
    let file = scratch.work().join("n.txt");
    write(&file, "alpha\n");
    let p = file.display().to_string();
    let out = scratch.cli(&["call", "--session", "s", "Read", &json!({"file_path": p}).to_string()]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(out.status.success() && stdout.contains("     1\talpha"), "{stdout}\n{stderr}");
    let edit = json!({"file_path": p, "old_string": "alpha", "new_string": "beta"}).to_string();
    let out = scratch.cli(&["call", "--session", "s", "--mode", "accept-edits", "Edit", &edit]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(out.status.success() && stdout.contains("Successfully replaced 1 occurrence"), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "beta\n");
    let again = json!({"file_path": p, "old_string": "beta", "new_string": "gamma"}).to_string();
    let out = scratch.cli(&["call", "--session", "s", "--mode", "accept-edits", "Edit", &again]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(!out.status.success() && stdout.contains("you must first read it"), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "beta\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_file_can_be_paged() {
    let env = Env::new().await;
    let lines = 200_000;
    let body: String = (1..=lines).map(|i| format!("line {i:07} {}\n", "z".repeat(40))).collect();
    assert!(body.len() >= 10_000_000);
    write(env.work.join("big.txt"), &body);
    let p = env.p("big.txt");
    let first = ok(&env.call("Read", json!({"file_path": p})).await);
    assert_eq!(first.lines().count(), 2000);
    assert!(first.ends_with(&format!("  2000\tline 0002000 {}", "z".repeat(40))));
    // Later pages come from the read cache.
    let page = ok(&env.call("Read", json!({"file_path": p, "offset": 199_999, "limit": 2000})).await);
    assert_eq!(page, format!("199999\tline 0199999 {z}\n200000\tline 0200000 {z}", z = "z".repeat(40)));
    // And the cached content is what Edit works on.
    let r =
        env.call("Edit", json!({"file_path": p, "old_string": "line 0123456 ", "new_string": "LINE 0123456 "})).await;
    assert_eq!(ok(&r), format!("Successfully replaced 1 occurrence in {p}"));
    assert!(std::fs::read_to_string(&p).unwrap().contains("\nLINE 0123456 z"));
}

/// `diff` (a unified diff of `old` → the file's new content, `a/`/`b/`
/// headers) applied to `old` by GNU `patch`.
fn patched(dir: &Path, old: &str, diff: &str) -> String {
    let (orig, fix, out) = (dir.join("orig.txt"), dir.join("change.diff"), dir.join("patched.txt"));
    std::fs::write(&orig, old).unwrap();
    std::fs::write(&fix, diff).unwrap();
    let run = Command::new("patch").arg("-s").arg("-o").arg(&out).arg(&orig).arg(&fix).output().expect("running patch");
    assert!(run.status.success(), "patch refused the diff: {}", String::from_utf8_lossy(&run.stdout));
    std::fs::read_to_string(out).unwrap()
}

/// Write and Edit of a 60 000-line file through the components: rewrites
/// that made the diff quadratic (every line new, every other line changed,
/// the two halves swapped, a replace_all on every other line) finish, and
/// the `diff` metadata is one GNU `patch` applies to get the new file.
/// (How long they take is measured in `tests/benches/large_diff.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_rewrites_have_diffs_that_patch_applies() {
    let env = Env::new().await;
    let line = |i: usize| format!("let value_{i:05} = compute({i});\n");
    let old: String = (0..60_000).map(line).collect();
    let p = env.p("big.rs");
    let scratch = env.scratch.outside("patching");
    std::fs::create_dir_all(&scratch).unwrap();
    let rewrites: [String; 3] = [
        (0..60_000).map(|i| format!("fn f{i}() {{}}\n")).collect(),
        (0..60_000).map(|i| if i % 2 == 0 { line(i) } else { line(i).replace("compute", "COMPUTE") }).collect(),
        (30_000..60_000).chain(0..30_000).map(line).collect(),
    ];
    for new in rewrites {
        write(&p, &old);
        ok(&env.call("Read", json!({"file_path": p})).await);
        let r = env.call("Write", json!({"file_path": p, "content": new})).await;
        assert_eq!(ok(&r), format!("The file {p} has been written successfully (60001 lines)."));
        assert_eq!(patched(&scratch, &old, r.metadata["diff"].as_str().unwrap()), new);
    }
    let odd: String =
        (0..60_000).map(|i| if i % 2 == 1 { line(i).replace("compute", "old_api") } else { line(i) }).collect();
    write(&p, &odd);
    ok(&env.call("Read", json!({"file_path": p})).await);
    let r = env
        .call("Edit", json!({"file_path": p, "old_string": "old_api(", "new_string": "new_api(", "replace_all": true}))
        .await;
    assert_eq!(ok(&r), format!("Successfully replaced all 30000 occurrences in {p}"));
    let new = odd.replace("old_api(", "new_api(");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), new);
    assert_eq!(patched(&scratch, &odd, r.metadata["diff"].as_str().unwrap()), new);
}

/// A symlink inside the working directory that points at a dangerous file
/// is judged by its target (as AgentScope 2.0.11 does), so accept-edits does
/// not auto-allow writing `.git/config` through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_to_a_dangerous_file_is_a_safety_ask() {
    let scratch = Scratch::new();
    let work = scratch.work();
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::fs::write(work.join(".git/config"), "[core]\n").unwrap();
    std::os::unix::fs::symlink(work.join(".git/config"), work.join("cfg")).unwrap();
    std::fs::write(work.join("plain.txt"), "x").unwrap();
    let host = Toolhost::builder().settings(scratch.settings(), None).build().await.unwrap();
    let ctx = host.permission_context("Write", Mode::AcceptEdits);
    let rules = host.rules();
    let via_link = json!({"file_path": work.join("cfg").display().to_string(), "content": "pwned"});
    let d = host.check("Write", &via_link, &ctx, &rules).await.unwrap();
    assert!(d.bypass_immune && d.message.contains("sensitive file"), "{d:?}");
    let plain = json!({"file_path": work.join("plain.txt").display().to_string(), "content": "y"});
    let d = host.check("Write", &plain, &ctx, &rules).await.unwrap();
    assert_eq!(d.behavior, toolhost::permission::Behavior::Allow, "{d:?}");
    assert_eq!(std::fs::read_to_string(work.join(".git/config")).unwrap(), "[core]\n");
}
