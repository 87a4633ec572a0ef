//! The layers of the library point one way: every `crate::…` path in a
//! source file under `host/src` names a module of the file's own layer or
//! of a layer below it (docs/architecture.md draws them). Comment lines are
//! not read (a doc link may point anywhere); code, `use` lines and inline
//! paths such as `crate::backend::local::LocalBackend::new` are.
//!
//! A new top-level module, or a new item re-exported at the crate root and
//! named as `crate::Item`, needs a line in [`LAYERS`] or [`ROOT_ITEMS`]:
//! the test fails until it has one.

use std::path::{Path, PathBuf};

/// The layers, lowest first.
const LAYER_NAMES: &[&str] = &["foundation", "runtime", "settings", "catalog", "execution", "façade", "services"];

/// Each top-level module of `host/src` and its layer (an index into
/// [`LAYER_NAMES`]).
const LAYERS: &[(&str, usize)] = &[
    // foundation: pure engines and the authority over the outside world.
    ("escape", 0),
    ("response", 0),
    ("state", 0),
    ("protected", 0),
    ("capability", 0),
    ("capability_diff", 0),
    ("lockfile", 0),
    ("backend", 0),
    ("permission", 0),
    ("events", 0),
    ("types", 0),
    ("sync", 0),
    ("utc", 0),
    ("audit", 0),
    // runtime: wasmtime, stores, host imports.
    ("runtime", 1),
    // settings: the settings file, over the types it configures.
    ("settings", 2),
    ("catalog", 3),
    ("execution", 4),
    ("toolhost", 5),
    // services: what front ends share, over the façade.
    ("check_batch", 6),
    ("ask_user", 6),
    ("audit_replay", 6),
];

/// Items named as `crate::Item` (re-exported at the crate root) and the
/// layer of the module that defines them.
const ROOT_ITEMS: &[(&str, usize)] = &[
    ("async_trait", 0),
    ("CallEvent", 0),
    ("CallStream", 0),
    ("ExternalCall", 0),
    ("Outcome", 0),
    ("PermissionAnswer", 0),
    ("PermissionRequest", 0),
    ("ToolError", 0),
    ("LookupError", 3),
    ("FunctionTool", 3),
    ("builtin", 3),
    ("function", 3),
    ("tool", 4),
    ("middleware", 4),
    ("CallableTool", 4),
    ("NativeMiddleware", 4),
    ("batch", 5),
    ("reload", 5),
    ("loading", 5),
    ("CallRequest", 5),
    ("ExternalResult", 5),
    ("Replacement", 5),
    ("Toolhost", 5),
    ("ToolhostBuilder", 5),
    ("tool_error_text", 5),
];

fn layer_of_module(name: &str) -> Option<usize> {
    LAYERS.iter().chain(ROOT_ITEMS).find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// One import that points up: file, line number, the path, the layers.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    path: String,
    from: usize,
    to: usize,
}

/// The top-level module a source file (relative to `src/`) belongs to;
/// `None` for the crate root.
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?.to_string();
    if first == "lib.rs" {
        return None;
    }
    Some(first.strip_suffix(".rs").unwrap_or(&first).to_string())
}

/// Every `crate::NAME` in the code (not the comments) of `text`, with its
/// line number.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let code = match code.find(" //") {
            Some(at) => &code[..at],
            None => code,
        };
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let preceded_by_ident =
                rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            let after = &rest[at + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !preceded_by_ident && !name.is_empty() {
                found.push((number + 1, name));
            }
            rest = after;
        }
    }
    found
}

/// The upward imports of one file of module `module`, or an error naming
/// a path the tables do not know.
fn check_file(file: &str, module: &str, text: &str) -> Result<Vec<Violation>, String> {
    let from = layer_of_module(module)
        .ok_or_else(|| format!("{file}: module `{module}` has no layer; add it to LAYERS in host/tests/layers.rs"))?;
    let mut violations = Vec::new();
    for (line, path) in crate_paths(text) {
        let to = layer_of_module(&path).ok_or_else(|| {
            format!("{file}:{line}: `crate::{path}` is not in LAYERS or ROOT_ITEMS of host/tests/layers.rs; add it")
        })?;
        if to > from {
            violations.push(Violation { file: file.to_string(), line, path, from, to });
        }
    }
    Ok(violations)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut checked = 0;
    for path in &files {
        let relative = path.strip_prefix(&src).unwrap();
        let Some(module) = module_of(relative) else { continue };
        let text = std::fs::read_to_string(path).unwrap();
        match check_file(&relative.display().to_string(), &module, &text) {
            Ok(violations) => {
                checked += 1;
                for v in violations {
                    problems.push(format!(
                        "{}:{}: `crate::{}` is in layer {}, above the file's layer {}",
                        v.file, v.line, v.path, LAYER_NAMES[v.to], LAYER_NAMES[v.from]
                    ));
                }
            }
            Err(e) => problems.push(e),
        }
    }
    assert!(checked > 40, "only {checked} source files found under {}", src.display());
    assert!(problems.is_empty(), "imports that point up a layer:\n{}", problems.join("\n"));
}

/// The checker finds what it must find (so the test above can fail).
#[test]
fn the_checker_sees_upward_paths_and_skips_comments() {
    let text = "use crate::catalog::tool::ToolInfo;\n\
                /// see [`crate::Toolhost`]\n\
                let b = crate::backend::local::LocalBackend::new(a, b);\n\
                fn f(h: &crate::Toolhost) {} // crate::execution in a comment\n\
                use super::Registry as crate_registry;\n";
    let found = check_file("catalog/x.rs", "catalog", text).unwrap();
    assert_eq!(
        found,
        vec![Violation { file: "catalog/x.rs".into(), line: 4, path: "Toolhost".into(), from: 3, to: 5 }]
    );
    assert!(check_file("x.rs", "newmodule", "").unwrap_err().contains("add it to LAYERS"));
    assert!(check_file("catalog/x.rs", "catalog", "use crate::nowhere::X;").unwrap_err().contains("not in LAYERS"));
    assert!(check_file("execution/x.rs", "execution", "use crate::catalog::tool::ToolInfo;").unwrap().is_empty());
}
