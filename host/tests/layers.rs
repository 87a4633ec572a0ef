//! The layers of the library point one way: every `crate::…` path in a
//! source file under `host/src` names a module of the file's own layer or
//! of a layer below it (docs/architecture.md draws them). Comment lines are
//! not read (a doc link may point anywhere); code, `use` lines (grouped
//! ones item by item, `crate::{a::X, b::Y}`) and inline paths such as
//! `crate::backend::local::LocalBackend::new` are.
//!
//! The pure modules live in the crate `toolhost-core` (`core/src`),
//! which the library depends on and re-exports. Its modules keep their
//! layers ([`CORE_LAYERS`]): its own `crate::…` paths are checked the
//! same way, and so is every `toolhost_core::…` path in `host/src` (a
//! foundation module of the library may not reach the settings through the
//! other crate either). Cargo already forbids the other direction.
//!
//! A new top-level module, or a new item re-exported at the crate root and
//! named as `crate::Item`, needs a line in [`LAYERS`], [`ROOT_ITEMS`] or
//! [`CORE_LAYERS`]: the test fails until it has one.

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
    ("coordination", 0),
    ("protected", 0),
    ("capability", 0),
    ("capability_diff", 0),
    ("lockfile", 0),
    ("own_file", 0),
    ("hold", 0),
    ("replica", 0),
    ("backend", 0),
    ("permission", 0),
    ("events", 0),
    ("types", 0),
    ("sync", 0),
    ("background", 0),
    ("utc", 0),
    ("audit", 0),
    ("telemetry", 0),
    // runtime: wasmtime, stores, host imports.
    ("runtime", 1),
    // settings: the settings file, over the types it configures.
    ("settings", 2),
    ("registry", 2),
    // plugins from OCI registries: over the settings, the lock and the store.
    ("oci", 2),
    ("catalog", 3),
    ("execution", 4),
    ("toolhost", 5),
    // services: what front ends share, over the façade.
    ("check_batch", 6),
    ("ask_user", 6),
    ("refusal", 6),
    ("question", 6),
    ("audit_replay", 6),
];

/// Each top-level module of `core/src` (crate `toolhost-core`) and its
/// layer. The library re-exports `escape`, `lockfile`, `own_file`,
/// `permission`, `protected`, `replica`, `settings` and `utc` at its root (in [`LAYERS`] with the
/// same layer); `capability`, `audit`, `limits`, `path` and `input_schema`
/// hold the plain data and pure checks under the library's modules of
/// those names.
const CORE_LAYERS: &[(&str, usize)] = &[
    ("escape", 0),
    ("utc", 0),
    ("path", 0),
    ("protected", 0),
    ("capability", 0),
    ("lockfile", 0),
    ("own_file", 0),
    ("replica", 0),
    ("limits", 0),
    ("audit", 0),
    ("telemetry", 0),
    ("state_store", 0),
    ("input_schema", 0),
    ("permission", 0),
    ("settings", 2),
    ("registry", 2),
    ("check_batch", 6),
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
    ("builtin", 3),
    ("function", 3),
    ("tool", 4),
    ("middleware", 4),
    ("CallableTool", 4),
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

fn layer_of_core_module(name: &str) -> Option<usize> {
    CORE_LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// Which crate a file belongs to: its `crate::` paths are looked up in
/// that crate's table.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Crate {
    /// `host/src`, package `toolhost`.
    Host,
    /// `core/src`, package `toolhost-core`.
    Core,
}

impl Crate {
    fn layer_of(self, module: &str) -> Option<usize> {
        match self {
            Crate::Host => layer_of_module(module),
            Crate::Core => layer_of_core_module(module),
        }
    }

    fn table(self) -> &'static str {
        match self {
            Crate::Host => "LAYERS or ROOT_ITEMS",
            Crate::Core => "CORE_LAYERS",
        }
    }
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

/// Every `PREFIX::NAME` (`crate::NAME`, `toolhost_core::NAME`) in the
/// code (not the comments) of `text`, with its line number; a group
/// (`crate::{a::X, b::{Y, Z}}`, over several lines too) names each of its
/// items' first segments.
fn paths_after(text: &str, prefix: &str) -> Vec<(usize, String)> {
    let code = text.lines().map(code_of).collect::<Vec<_>>().join("\n");
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = code[from..].find(prefix) {
        let at = from + offset;
        let after = at + prefix.len();
        from = after;
        let preceded_by_ident =
            code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        if preceded_by_ident {
            continue;
        }
        if code[after..].starts_with('{') {
            found.extend(group_heads(&code[after..]).into_iter().map(|(i, name)| (line_of(after + i), name)));
        } else {
            let name = ident(&code[after..]);
            if !name.is_empty() {
                found.push((line_of(at), name));
            }
        }
    }
    found
}

/// A line without its comment.
fn code_of(line: &str) -> &str {
    let code = line.trim_start();
    if code.starts_with("//") {
        return "";
    }
    match code.find(" //") {
        Some(at) => &code[..at],
        None => code,
    }
}

/// The identifier `text` starts with (empty if none).
fn ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The first segment of each item of the `{…}` group `text` starts with,
/// and where it is: `{a::X, b::{Y, Z}, self}` gives `a` and `b`.
fn group_heads(text: &str) -> Vec<(usize, String)> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_starts = true;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => item_starts = true,
            c if item_starts && depth == 1 && !c.is_whitespace() => {
                item_starts = false;
                let name = ident(&text[i..]);
                if !name.is_empty() && name != "self" {
                    heads.push((i, name));
                }
            }
            _ => {}
        }
    }
    heads
}

/// The upward imports of one file of module `module` in crate `krate`, or
/// an error naming a path the tables do not know.
fn check_file(krate: Crate, file: &str, module: &str, text: &str) -> Result<Vec<Violation>, String> {
    let from = krate.layer_of(module).ok_or_else(|| {
        format!("{file}: module `{module}` has no layer; add it to {} in host/tests/layers.rs", krate.table())
    })?;
    let mut named: Vec<(usize, String, Crate)> =
        paths_after(text, "crate::").into_iter().map(|(line, path)| (line, path, krate)).collect();
    if krate == Crate::Host {
        let core = paths_after(text, "toolhost_core::");
        named.extend(core.into_iter().map(|(line, path)| (line, path, Crate::Core)));
    }
    let mut violations = Vec::new();
    for (line, path, target) in named {
        let prefix = if target == krate { "crate" } else { "toolhost_core" };
        let to = target.layer_of(&path).ok_or_else(|| {
            format!("{file}:{line}: `{prefix}::{path}` is not in {} of host/tests/layers.rs; add it", target.table())
        })?;
        if to > from {
            let path = if target == krate { path } else { format!("toolhost_core::{path}") };
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

/// The problems of every source file under `src` of crate `krate`, and
/// how many files were checked.
fn check_crate(krate: Crate, src: &Path) -> (Vec<String>, usize) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut checked = 0;
    for path in &files {
        let relative = path.strip_prefix(src).unwrap();
        let Some(module) = module_of(relative) else { continue };
        let text = std::fs::read_to_string(path).unwrap();
        match check_file(krate, &relative.display().to_string(), &module, &text) {
            Ok(violations) => {
                checked += 1;
                for v in violations {
                    problems.push(format!(
                        "{}:{}: `{}` is in layer {}, above the file's layer {}",
                        v.file,
                        v.line,
                        if v.path.starts_with("toolhost_core::") { v.path } else { format!("crate::{}", v.path) },
                        LAYER_NAMES[v.to],
                        LAYER_NAMES[v.from]
                    ));
                }
            }
            Err(e) => problems.push(e),
        }
    }
    (problems, checked)
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let (mut problems, checked) = check_crate(Crate::Host, &src);
    assert!(checked > 40, "only {checked} source files found under {}", src.display());
    let core_src = root.join("../core/src");
    let (core_problems, core_checked) = check_crate(Crate::Core, &core_src);
    assert!(core_checked > 10, "only {core_checked} source files found under {}", core_src.display());
    problems.extend(core_problems.into_iter().map(|p| format!("core/src/{p}")));
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
    let found = check_file(Crate::Host, "catalog/x.rs", "catalog", text).unwrap();
    assert_eq!(
        found,
        vec![Violation { file: "catalog/x.rs".into(), line: 4, path: "Toolhost".into(), from: 3, to: 5 }]
    );
    assert!(check_file(Crate::Host, "x.rs", "newmodule", "").unwrap_err().contains("add it to LAYERS"));
    let unknown = check_file(Crate::Host, "catalog/x.rs", "catalog", "use crate::nowhere::X;").unwrap_err();
    assert!(unknown.contains("not in LAYERS"), "{unknown}");
    let down = "use crate::catalog::tool::ToolInfo;";
    assert!(check_file(Crate::Host, "execution/x.rs", "execution", down).unwrap().is_empty());
    let grouped = "use crate::{\n    backend::Backend,\n    execution::{callable::X, host::Y},\n    self,\n};\n\
                   use crate::{sync::MutexExt, toolhost::Toolhost};\n";
    let found = check_file(Crate::Host, "backend/x.rs", "backend", grouped).unwrap();
    let upward: Vec<(usize, &str)> = found.iter().map(|v| (v.line, v.path.as_str())).collect();
    assert_eq!(upward, vec![(3, "execution"), (6, "toolhost")], "{found:?}");
}

/// The other crate's paths are checked by their own table, in both crates.
#[test]
fn the_checker_sees_upward_paths_into_and_inside_the_core_crate() {
    let text = "use toolhost_core::permission::Rule;\nlet s = toolhost_core::settings::Settings::default();\n";
    let found = check_file(Crate::Host, "backend/x.rs", "backend", text).unwrap();
    assert_eq!(
        found,
        vec![Violation {
            file: "backend/x.rs".into(),
            line: 2,
            path: "toolhost_core::settings".into(),
            from: 0,
            to: 2
        }]
    );
    assert!(check_file(Crate::Host, "toolhost.rs", "toolhost", text).unwrap().is_empty());
    let inside = check_file(Crate::Core, "protected.rs", "protected", "use crate::settings::Settings;").unwrap();
    assert_eq!(inside.len(), 1, "{inside:?}");
    assert!(check_file(Crate::Core, "settings.rs", "settings", "use crate::protected::X;").unwrap().is_empty());
    let unknown = check_file(Crate::Core, "x.rs", "nowhere", "").unwrap_err();
    assert!(unknown.contains("CORE_LAYERS"), "{unknown}");
}

/// Every source file of the library and of the core crate has its place on
/// the map in docs/architecture.md: its name in a row (a folder's row may
/// list its files, `{a,b}.rs` lists counting). Crate roots, `mod.rs` and
/// test files need none.
#[test]
fn every_module_is_on_the_architecture_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let map = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let named = names_on_the_map(&map);
    let mut missing = Vec::new();
    for src in ["host/src", "core/src"] {
        let mut files = Vec::new();
        rust_files(&root.join(src), &mut files);
        for path in files {
            let name = path.file_name().unwrap().to_str().unwrap();
            let exempt = matches!(name, "lib.rs" | "mod.rs" | "tests.rs") || name.ends_with("_tests.rs");
            if !exempt && !named.contains(name) {
                missing.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name these modules; give each a row, or name it in its folder's row: \
         {missing:#?}"
    );
}

#[test]
fn the_map_reader_expands_file_lists() {
    let named = names_on_the_map("│ runtime/bindings/{mod,v0_1_0}.rs, `local/sandbox.rs` (`cache.rs`)");
    for name in ["mod.rs", "v0_1_0.rs", "sandbox.rs", "cache.rs"] {
        assert!(named.contains(name), "{name} not read from the map: {named:?}");
    }
}

/// Every `name.rs` the map mentions, `{a,b}.rs` lists expanded.
fn names_on_the_map(map: &str) -> std::collections::HashSet<String> {
    let mut names = std::collections::HashSet::new();
    for (end, _) in map.match_indices(".rs") {
        let before = &map[..end];
        if let Some(list) = before.strip_suffix('}') {
            if let Some(open) = list.rfind('{') {
                names.extend(list[open + 1..].split(',').map(|name| format!("{}.rs", name.trim())));
            }
            continue;
        }
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        names.insert(format!("{}.rs", &before[start..]));
    }
    names
}

/// The parts of the execution layer (its files and folders: `host`,
/// `callable`, `middleware`, …) import each other one way: what execution
/// asks of the façade (`host.rs`) knows nothing of the middleware chain,
/// which is handed its layers.
#[test]
fn the_parts_of_the_execution_layer_import_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let cycles = two_way_imports(&src, "execution");
    assert!(cycles.is_empty(), "parts of execution/ that import each other: {cycles:?}");
}

#[test]
fn the_cycle_finder_sees_relative_and_absolute_paths() {
    let files = [
        ("execution/host.rs", "use super::middleware::registry::Registry;\n"),
        ("execution/middleware/chain.rs", "use crate::execution::host::ExecutionHost;\n"),
        ("execution/callable.rs", "// super::host in a comment\n"),
        ("execution/loaded.rs", "use super::super::execution::callable::X;\n"),
    ];
    let edges = files.iter().flat_map(|(file, text)| part_imports(Path::new(file), text, "execution")).collect();
    assert_eq!(cycles_of(edges), vec![("host".to_string(), "middleware".to_string())]);
}

/// Pairs of parts of `folder` (under `src`) that import each other.
fn two_way_imports(src: &Path, folder: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&src.join(folder), &mut files);
    let mut edges = Vec::new();
    for path in files {
        let relative = path.strip_prefix(src).unwrap();
        edges.extend(part_imports(relative, &std::fs::read_to_string(&path).unwrap(), folder));
    }
    cycles_of(edges)
}

/// The parts of `folder` the file at `relative` (a path under `src`)
/// names, as (its part, the part named) pairs: `crate::FOLDER::PART`, and
/// `super::…` paths resolved from the file's own module.
fn part_imports(relative: &Path, text: &str, folder: &str) -> Vec<(String, String)> {
    let mut module: Vec<String> =
        relative.with_extension("").components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if module.last().is_some_and(|m| m == "mod") {
        module.pop();
    }
    let Some(own) = module.get(1).cloned() else { return Vec::new() };
    let mut named = Vec::new();
    for line in text.lines().map(code_of) {
        for (at, _) in line.match_indices("crate::").chain(line.match_indices("super::")) {
            let preceded = line[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            if preceded {
                continue;
            }
            let mut path: Vec<String> = Vec::new();
            let mut rest = &line[at..];
            if let Some(after) = rest.strip_prefix("crate::") {
                rest = after;
            } else {
                path = module.clone();
                while let Some(after) = rest.strip_prefix("super::") {
                    path.pop();
                    rest = after;
                }
            }
            path.extend(rest.split("::").map(ident).take_while(|s| !s.is_empty()));
            if path.first().is_some_and(|f| f == folder)
                && let Some(part) = path.get(1).filter(|p| **p != own)
            {
                named.push((own.clone(), part.clone()));
            }
        }
    }
    named
}

/// The pairs (a, b), a before b, with an edge each way.
fn cycles_of(edges: Vec<(String, String)>) -> Vec<(String, String)> {
    let edges: std::collections::BTreeSet<(String, String)> = edges.into_iter().collect();
    edges.iter().filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone()))).cloned().collect()
}
