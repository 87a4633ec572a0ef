//! `ImportAttack`: passes hostile arguments to every host import a tool
//! can reach, one group per call (`attack`), and reports what each case
//! got as one JSON object (`case` → `ok: …` or `err: …`). `dir` is the
//! working directory, `outside` a folder beside it that nothing may touch.
//!
//! - `paths`: every file operation with a path outside (absolute, through
//!   `..`, relative, through `~`, after a NUL byte, 100 000 `..` deep, `/`),
//!   one inside with a NUL byte or 8 MiB long, the empty path, and the
//!   granted root itself to `remove`;
//! - `walk`, `search`: starts outside, invalid and enormous globs, file
//!   types, patterns, context and entry counts, a symlink `link-out`
//!   leading out (made by the test);
//! - `spawn`: empty argv, NUL bytes, `=` in a variable name, a cwd outside,
//!   timeouts and output caps at `u64::MAX`, a 1 MiB argument;
//! - `process`: `wait` twice, `next-output` after the end, 40 sleepers
//!   dropped and 20 left for the host to kill (tagged `tag`);
//! - `handle`: a process handle the host never gave out (traps);
//! - `utf8`: a log message that is not UTF-8, through the raw import (traps);
//! - `state`: huge keys, values that are not JSON or too big, more keys than
//!   allowed, `cache-file` and friends on paths outside or with NUL bytes;
//! - `log`: every level, a message at and past the log budget, escapes;
//! - `output`: metadata that is not JSON, not an object, nested 100 000
//!   deep, 4 MiB; 100 000 empty chunks;
//! - `fifo`, `big-file`: `read-file` of a FIFO and of a file larger than
//!   the tool's memory limit (both made by the test); `cache-file` of both.
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolhost_sdk::bindings::toolhost::tool::log::{Level, log};
use toolhost_sdk::{Chunk, Output, ResultState, Tool, ToolError, ToolSpec, backend, export_tool, state};

struct ImportAttack;

// The `log` import as the canonical ABI lowers it (level, pointer, length):
// the generated binding takes a `&str`, so it cannot pass bytes that are not
// UTF-8.
#[link(wasm_import_module = "toolhost:tool/log@0.1.0")]
unsafe extern "C" {
    #[link_name = "log"]
    fn raw_log(level: i32, message: *const u8, len: usize);
}

#[derive(Deserialize)]
struct Input {
    attack: String,
    dir: String,
    outside: String,
    #[serde(default)]
    tag: String,
}

/// `ok: <detail>` or `err: <the error>` (errors cut to 400 bytes).
fn outcome<T: std::fmt::Debug>(result: Result<T, ToolError>) -> String {
    match result {
        Ok(v) => {
            let text = format!("{v:?}");
            format!("ok: {}", &text[..text.len().min(200)])
        }
        Err(e) => {
            let text = format!("{e:?}");
            let mut end = text.len().min(400);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("err: {}", &text[..end])
        }
    }
}

fn walk_options(root: &str) -> backend::WalkOptions {
    backend::WalkOptions {
        root: root.to_string(),
        globs: vec![],
        file_type: None,
        hidden: true,
        respect_ignore_files: false,
        follow_symlinks: false,
        max_entries: 0,
        match_names: vec![],
    }
}

fn search_request(root: &str, pattern: &str) -> backend::SearchRequest {
    backend::SearchRequest {
        files: walk_options(root),
        pattern: pattern.to_string(),
        case_insensitive: false,
        multiline: false,
        mode: backend::SearchMode::Content,
        before_context: 0,
        after_context: 0,
        max_columns: 0,
    }
}

fn exec(argv: &[&str]) -> backend::ExecRequest {
    backend::ExecRequest {
        argv: argv.iter().map(|a| a.to_string()).collect(),
        cwd: None,
        env: vec![],
        timeout_ms: 10_000,
        max_output_bytes: 0,
    }
}

/// Runs a process to its end; its exit code and stdout.
fn run(request: &backend::ExecRequest) -> Result<String, ToolError> {
    let process = backend::spawn(request)?;
    let mut stdout = Vec::new();
    while let Some(piece) = process.next_output() {
        if let backend::OutputPiece::Stdout(bytes) = piece {
            stdout.extend(bytes);
        }
    }
    let status = process.wait();
    Ok(format!("code {} stdout {:?}", status.code, String::from_utf8_lossy(&stdout)))
}

fn paths(input: &Input, r: &mut Map<String, Value>) {
    let (dir, outside) = (&input.dir, &input.outside);
    let name = outside.rsplit('/').next().unwrap_or_default();
    let from_root = outside.trim_start_matches('/');
    // Outside the grants, every way round (`out-*`), and malformed but
    // inside (`in-*`). The outside ones all aim at the sentinel folder:
    // nothing else of the machine is put at risk if a defence failed.
    let hostile = [
        ("out-absolute", format!("{outside}/secret.txt")),
        ("out-dotdot", format!("{dir}/../{name}/secret.txt")),
        ("out-relative", format!("../{name}/secret.txt")),
        ("out-tilde", format!("~/{}{from_root}/secret.txt", "../".repeat(64))),
        ("out-nul", format!("{dir}/a\0/../../{name}/secret.txt")),
        ("out-nul-end", format!("{outside}/secret.txt\0")),
        ("out-deep", format!("{dir}/{}{from_root}/secret.txt", "../".repeat(100_000))),
        ("out-dir", outside.clone()),
        ("in-nul", format!("{dir}/in\0side.txt")),
        ("in-huge", format!("{dir}/{}", "a".repeat(8 << 20))),
    ];
    for (case, path) in &hostile {
        r.insert(format!("read-file {case}"), outcome(backend::read_file(path)).into());
        r.insert(format!("write-file {case}"), outcome(backend::write_file(path, b"pwned")).into());
        r.insert(format!("stat {case}"), outcome(backend::stat(path)).into());
        r.insert(format!("list-dir {case}"), outcome(backend::list_dir(path).map(|l| l.len())).into());
        r.insert(format!("create-dir {case}"), outcome(backend::create_dir(&format!("{path}/made"))).into());
        r.insert(format!("remove {case}"), outcome(backend::remove(path)).into());
        r.insert(format!("real-path {case}"), outcome(backend::real_path(path)).into());
    }
    for op in ["read-file", "stat", "list-dir", "real-path"] {
        let result = match op {
            "read-file" => outcome(backend::read_file("/").map(|b| b.len())),
            "stat" => outcome(backend::stat("/")),
            "list-dir" => outcome(backend::list_dir("/").map(|l| l.len())),
            _ => outcome(backend::real_path("/")),
        };
        r.insert(format!("{op} out-root"), result.into());
    }
    r.insert("remove granted-root".into(), outcome(backend::remove(dir)).into());
    r.insert("remove empty".into(), outcome(backend::remove("")).into());
    r.insert("write-file empty".into(), outcome(backend::write_file("", b"x")).into());
    // A write inside succeeds: the test can fail.
    r.insert("write-file inside".into(), outcome(backend::write_file(&format!("{dir}/inside.txt"), b"in")).into());
    let expanded = backend::expand_user(&format!("~{}", "x".repeat(8 << 20)));
    r.insert("expand-user huge".into(), format!("ok: {} bytes", expanded.len()).into());
}

fn walks(input: &Input, r: &mut Map<String, Value>) {
    let (dir, outside) = (&input.dir, &input.outside);
    let name = outside.rsplit('/').next().unwrap_or_default();
    let listed = |o: &backend::WalkOptions| {
        outcome(backend::walk(o).map(|entries| {
            let out = entries.iter().filter(|e| e.path.contains(name) || e.path.contains("link-out")).count();
            format!("{} entries, {out} outside", entries.len())
        }))
    };
    let searched = |q: &backend::SearchRequest| {
        outcome(backend::search(q).map(|files| {
            let out = files.iter().filter(|f| f.path.contains(name) || f.path.contains("link-out")).count();
            format!("{} files, {out} outside", files.len())
        }))
    };
    let mut cases: Vec<(&str, backend::WalkOptions)> = Vec::new();
    cases.push(("root-outside", walk_options(outside)));
    cases.push(("root-dotdot", walk_options(&format!("{dir}/../{name}"))));
    cases.push(("root-nul", walk_options(&format!("{dir}\0"))));
    let mut o = walk_options(dir);
    o.globs = vec!["[".into()];
    cases.push(("glob-invalid", o));
    let mut o = walk_options(dir);
    o.globs = (0..10_000).map(|i| format!("!x{i}/**")).collect();
    cases.push(("globs-10000", o));
    let mut o = walk_options(dir);
    o.globs = vec!["*".repeat(1 << 20)];
    cases.push(("glob-huge", o));
    let mut o = walk_options(dir);
    o.globs = vec![format!("../{name}/**"), format!("{outside}/**")];
    cases.push(("glob-outside", o));
    let mut o = walk_options(dir);
    o.file_type = Some("x".repeat(1 << 20));
    cases.push(("file-type-huge", o));
    let mut o = walk_options(dir);
    o.match_names = vec!["{".into()];
    cases.push(("match-names-invalid", o));
    let mut o = walk_options(dir);
    o.match_names = (0..10_000).map(|i| format!("*.x{i}-{}", input.tag)).collect();
    cases.push(("match-names-10000", o));
    let mut o = walk_options(dir);
    o.max_entries = u32::MAX;
    o.follow_symlinks = true;
    cases.push(("follow-link-out", o));
    for (case, o) in &cases {
        r.insert(format!("walk {case}"), listed(o).into());
        let mut q = search_request(&o.root, "secret");
        q.files = o.clone();
        r.insert(format!("search {case}"), searched(&q).into());
    }
    for (case, pattern) in [
        ("pattern-invalid", "(".to_string()),
        ("pattern-too-big", "(a{1000}){1000}".to_string()),
        ("pattern-huge", "a".repeat(8 << 20)),
        ("pattern-nul", "secret\0".to_string()),
    ] {
        r.insert(format!("search {case}"), searched(&search_request(dir, &pattern)).into());
    }
    let mut q = search_request(dir, "in");
    q.before_context = u32::MAX;
    q.after_context = u32::MAX;
    q.max_columns = u32::MAX;
    r.insert("search context-max".into(), searched(&q).into());
}

fn spawns(input: &Input, r: &mut Map<String, Value>) {
    let outside = &input.outside;
    let mut cases: Vec<(&str, backend::ExecRequest)> = vec![("empty-argv", exec(&[]))];
    cases.push(("nul-argv", exec(&["/bin/echo", "a\0b"])));
    cases.push(("nul-program", exec(&["/bin/ec\0ho"])));
    let mut e = exec(&["/usr/bin/env"]);
    e.env = vec![("A".into(), "b\0c".into())];
    cases.push(("nul-env", e));
    let mut e = exec(&["/usr/bin/env"]);
    e.env = vec![("PATH=/evil:".into(), "x".into()), ("".into(), "empty".into())];
    cases.push(("equals-in-name", e));
    let mut e = exec(&["/bin/pwd"]);
    e.cwd = Some(outside.clone());
    cases.push(("cwd-outside", e));
    let mut e = exec(&["/bin/pwd"]);
    e.cwd = Some("/".into());
    cases.push(("cwd-root", e));
    let mut e = exec(&["/bin/pwd"]);
    e.cwd = Some(format!("{}/..", input.dir));
    cases.push(("cwd-dotdot", e));
    let mut e = exec(&["/bin/pwd"]);
    e.cwd = Some(format!("{}\0", input.dir));
    cases.push(("cwd-nul", e));
    let mut e = exec(&["/bin/true"]);
    e.timeout_ms = u64::MAX;
    cases.push(("timeout-max", e));
    let mut e = exec(&["/bin/echo", "capped"]);
    e.max_output_bytes = u64::MAX;
    cases.push(("output-max", e));
    let big = "a".repeat(1 << 20);
    cases.push(("arg-1mib", exec(&["/bin/echo", &big])));
    cases.push(("missing-program", exec(&["/definitely/not/a/program"])));
    for (case, request) in &cases {
        r.insert(format!("spawn {case}"), outcome(run(request)).into());
    }
}

fn processes(input: &Input, r: &mut Map<String, Value>) {
    let twice = backend::spawn(&exec(&["/bin/echo", "hi"])).map(|p| {
        let first = p.wait();
        let second = p.wait();
        let after = p.next_output();
        format!("{} {} {:?}", first.code, second.code, after.is_none())
    });
    r.insert("wait twice".into(), outcome(twice).into());
    let sleeper = exec(&["/bin/sh", "-c", "sleep 600", &input.tag]);
    let dropped: Result<usize, ToolError> = (0..40).map(|_| backend::spawn(&sleeper).map(|_| 1)).sum();
    r.insert("spawn-and-drop 40".into(), outcome(dropped).into());
    let kept: Vec<_> = (0..20).filter_map(|_| backend::spawn(&sleeper).ok()).collect();
    r.insert("left-running".into(), format!("ok: {}", kept.len()).into());
    // Left for the host: the instance ends with these handles alive.
    std::mem::forget(kept);
}

fn states(input: &Input, r: &mut Map<String, Value>) {
    // The end of an error says the cause and the limit.
    let text = |res: Result<Option<String>, String>| match res {
        Ok(v) => format!("ok: {:?}", v.map(|v| v.len())),
        Err(e) => {
            let mut start = e.len().saturating_sub(300);
            while !e.is_char_boundary(start) {
                start += 1;
            }
            format!("err: {}", &e[start..])
        }
    };
    let unit = |res: Result<(), String>| text(res.map(|()| None));
    let huge_key = "k".repeat(8 << 20);
    r.insert("get huge-key".into(), text(state::get(&huge_key)).into());
    r.insert("set huge-key".into(), unit(state::set(&huge_key, "1")).into());
    r.insert("set not-json".into(), unit(state::set("k", "{not json")).into());
    r.insert("set nested".into(), unit(state::set("k", &"[".repeat(100_000))).into());
    let big = format!("\"{}\"", "v".repeat(4 << 20));
    r.insert("set too-big".into(), unit(state::set("k", &big)).into());
    let mut refused = None;
    for i in 0..200 {
        if let Err(e) = state::set(&format!("key-{i}"), "1") {
            refused = Some(format!("err at {i}: {e}"));
            break;
        }
    }
    r.insert("set many-keys".into(), refused.unwrap_or_else(|| "ok: all 200".into()).into());
    let cas = state::compare_and_set("k", Some("{not json"), "1");
    r.insert("cas expected-not-json".into(), text(cas.map(|b| Some(b.to_string()))).into());
    let cas = state::compare_and_set("k", None, "not json");
    r.insert("cas value-not-json".into(), text(cas.map(|b| Some(b.to_string()))).into());
    let secret = format!("{}/secret.txt", input.outside);
    state::cache_file(&secret, "secret\n");
    r.insert("cached-file outside".into(), format!("ok: {:?}", state::cached_file(&secret)).into());
    state::cache_file(&format!("{}/a\0b", input.dir), "x");
    state::cache_file(&format!("{}/inside.txt", input.dir), &"x".repeat(8 << 20));
    state::forget_file(&secret);
    state::forget_file("\0");
    r.insert("cache-file weird".into(), "ok: returned".into());
}

fn logs(r: &mut Map<String, Value>) {
    for level in [Level::Trace, Level::Debug, Level::Info, Level::Warn, Level::Error] {
        log(level, "hostile \x1b[2J\r\nforged line\0 end");
    }
    log(Level::Error, &"l".repeat(64 << 10));
    log(Level::Error, &"l".repeat(8 << 20));
    for i in 0..10_000 {
        log(Level::Info, &format!("line {i}"));
    }
    r.insert("log".into(), "ok: returned".into());
}

fn outputs(r: &mut Map<String, Value>) {
    let meta = |metadata: String| Chunk { content: vec![], state: ResultState::Running, metadata };
    for (case, metadata) in [
        ("not-json", "{not json".to_string()),
        ("array", "[1,2]".to_string()),
        ("nested", format!("{{\"a\":{}", "[".repeat(100_000))),
        ("nested-valid", format!("{{\"a\":{}{}}}", "[".repeat(1000), "]".repeat(1000))),
        ("kept", json!({"kept": true}).to_string()),
        ("huge", json!({"m": "m".repeat(4 << 20)}).to_string()),
    ] {
        r.insert(
            format!("emit {case}"),
            format!("ok: {}", toolhost_sdk::bindings::toolhost::tool::output::emit(&meta(metadata))).into(),
        );
    }
    let mut accepted = 0;
    for _ in 0..100_000 {
        if !toolhost_sdk::bindings::toolhost::tool::output::emit(&meta(String::new())) {
            break;
        }
        accepted += 1;
    }
    r.insert("emit 100000 empty".into(), format!("ok: {accepted} accepted").into());
}

fn special_files(input: &Input, r: &mut Map<String, Value>) {
    for name in ["fifo", "big"] {
        let path = format!("{}/{name}", input.dir);
        r.insert(format!("read-file {name}"), outcome(backend::read_file(&path).map(|b| b.len())).into());
        state::cache_file(&path, "");
        r.insert(format!("cache-file {name}"), "ok: returned".into());
    }
}

impl Tool for ImportAttack {
    type Input = Input;
    fn spec() -> ToolSpec {
        ToolSpec::new("ImportAttack", "Passes hostile arguments to every host import.")
            .schema(json!({
                "type": "object",
                "properties": {
                    "attack": {"enum": ["paths", "walk", "spawn", "process", "handle", "utf8", "state", "log",
                                        "output", "special"]},
                    "dir": {"type": "string"},
                    "outside": {"type": "string"},
                    "tag": {"type": "string"}
                },
                "required": ["attack", "dir", "outside"]
            }))
            .writes("$WORKDIRS")
            .runs_processes()
            .state_injected(true)
    }
    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        let mut r = Map::new();
        match input.attack.as_str() {
            "paths" => paths(&input, &mut r),
            "walk" => walks(&input, &mut r),
            "spawn" => spawns(&input, &mut r),
            "process" => processes(&input, &mut r),
            "handle" => {
                // SAFETY: deliberately a handle the host never gave out.
                let forged = unsafe { backend::Process::from_handle(0x00de_adbe) };
                r.insert("forged".into(), format!("{:?}", forged.next_output().is_some()).into());
            }
            "utf8" => {
                let bytes = b"not \xff\xfe UTF-8";
                // SAFETY: `log` takes a level and a pointer and length into
                // this module's memory, which `bytes` is.
                unsafe { raw_log(2, bytes.as_ptr(), bytes.len()) };
                r.insert("utf8".into(), "ok: the host took it".into());
            }
            "state" => states(&input, &mut r),
            "log" => logs(&mut r),
            "output" => outputs(&mut r),
            _ => special_files(&input, &mut r),
        }
        out.text(&Value::Object(r).to_string());
        Ok(())
    }
}
export_tool!(ImportAttack);
