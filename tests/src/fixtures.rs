//! The prebuilt Python and JavaScript components in `tests/fixtures/guests/`.
//!
//! Building them takes about a minute each and 1 GB of RAM (componentize-py
//! bundles CPython, componentize-js SpiderMonkey), so they are committed
//! with a manifest (`manifest.json`) holding, for each, the SHA-256 of the
//! `.wasm` and the SHA-256 of everything it is built from: the example's
//! files, the SDK of its language, the WIT package and the pinned
//! toolchain version.
//!
//! [`fixture`] first makes sure of both: when the sources still match, no
//! toolchain is needed and the `.wasm` must have the recorded hash (a stale
//! or corrupted file fails loudly); when they differ, the fixtures are
//! rebuilt with `toolhost build` and the pinned toolchains (installed into
//! `target/guest-toolchains/`), and the manifest is rewritten: commit the
//! result. A toolchain that cannot be installed fails with the reason.
//! `tests/fixtures/guests/regenerate.sh` forces a rebuild.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};
use toolhost::lockfile::sha256_hex;

use crate::{root, toolhost_bin};

/// componentize-py release the fixtures are built with.
pub const COMPONENTIZE_PY: &str = "0.25.1";
/// componentize-js release the fixtures are built with.
pub const COMPONENTIZE_JS: &str = "0.23.0";

/// One committed component.
#[derive(Debug, Clone, Copy)]
pub struct Fixture {
    /// The `.wasm` file name in `tests/fixtures/guests/`.
    pub file: &'static str,
    /// The example project it is built from (with its `toolhost-plugin.toml`).
    pub project: &'static str,
    /// `python` or `js`.
    pub lang: &'static str,
}

/// Every committed fixture.
pub const FIXTURES: &[Fixture] = &[
    Fixture { file: "word_count_py.wasm", project: "examples/python/word-count", lang: "python" },
    Fixture { file: "redact_py.wasm", project: "examples/python/redact", lang: "python" },
    Fixture { file: "word_count_js.wasm", project: "examples/js/word-count", lang: "js" },
    Fixture { file: "redact_js.wasm", project: "examples/js/redact", lang: "js" },
];

/// The fixtures folder.
pub fn dir() -> PathBuf {
    root().join("tests/fixtures/guests")
}

/// The verified path of fixture `file` (see the module docs).
pub fn fixture(file: &str) -> PathBuf {
    ensure_fresh();
    let path = dir().join(file);
    let manifest = read_manifest();
    let want =
        manifest["fixtures"][file]["sha256"].as_str().unwrap_or_else(|| panic!("{file} is not in manifest.json"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading fixture {}: {e}", path.display()));
    assert_eq!(
        sha256_hex(&bytes),
        want,
        "{} does not have the SHA-256 recorded in manifest.json: stale or corrupted; run tests/fixtures/guests/regenerate.sh",
        path.display()
    );
    path
}

fn read_manifest() -> Value {
    let path = dir().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The SHA-256 of what `fixture` is built from: the project's files (not
/// `.toolhost/`, `node_modules/`, `__pycache__/`, `.wasm`), its language's
/// SDK, the released WIT packages (`wit/v*`, not the drafts) and the
/// toolchain version, by relative path.
pub fn sources_sha256(fixture: &Fixture) -> String {
    let root = root();
    let mut files = Vec::new();
    collect(&root.join(fixture.project), &mut files);
    match fixture.lang {
        "python" => collect(&root.join("sdk/python/toolhost_sdk"), &mut files),
        _ => {
            for f in ["sdk/js/toolhost-sdk.js", "sdk/js/jsdoc.js", "cli/assets/build.mjs"] {
                files.push(root.join(f));
            }
        }
    }
    // The released WIT versions a guest can be built against; not the
    // test-only drafts under `wit/draft/`.
    for version in std::fs::read_dir(root.join("wit")).expect("reading wit/") {
        let path = version.expect("wit/ entry").path();
        if path.is_dir() && path.file_name().is_some_and(|n| n != "draft") {
            collect(&path, &mut files);
        }
    }
    files.sort();
    let mut all = Vec::new();
    let version = if fixture.lang == "python" { COMPONENTIZE_PY } else { COMPONENTIZE_JS };
    all.extend_from_slice(format!("{}@{version}\0", fixture.lang).as_bytes());
    for f in files {
        let rel = f.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        all.extend_from_slice(rel.as_bytes());
        all.push(0);
        all.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        all.extend_from_slice(&bytes);
    }
    sha256_hex(&all)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if matches!(name, ".toolhost" | "node_modules" | "__pycache__") || name.ends_with(".wasm") {
            continue;
        }
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Rebuilds the fixtures whose sources changed (all of them when
/// `TOOLHOST_REGENERATE_FIXTURES=1`), once per test process.
pub fn ensure_fresh() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let force = std::env::var("TOOLHOST_REGENERATE_FIXTURES").is_ok_and(|v| v == "1");
        let manifest = std::fs::read_to_string(dir().join("manifest.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .unwrap_or_else(|| json!({"fixtures": {}}));
        let stale: Vec<&Fixture> = FIXTURES
            .iter()
            .filter(|f| {
                force
                    || manifest["fixtures"][f.file]["sources_sha256"].as_str() != Some(sources_sha256(f).as_str())
                    || !dir().join(f.file).exists()
            })
            .collect();
        if stale.is_empty() {
            return;
        }
        eprintln!(
            "fixtures whose sources changed: {}; rebuilding them with componentize-py {COMPONENTIZE_PY} / componentize-js {COMPONENTIZE_JS}",
            stale.iter().map(|f| f.file).collect::<Vec<_>>().join(", ")
        );
        let mut manifest = manifest;
        for f in stale {
            let built = build_example(f);
            let bytes = std::fs::read(&built).expect("reading the built fixture");
            std::fs::copy(&built, dir().join(f.file)).expect("copying the fixture");
            manifest["fixtures"][f.file] = json!({
                "project": f.project,
                "toolchain": if f.lang == "python" { format!("componentize-py {COMPONENTIZE_PY}") } else { format!("componentize-js {COMPONENTIZE_JS}") },
                "bytes": bytes.len(),
                "sha256": sha256_hex(&bytes),
                "sources_sha256": sources_sha256(f),
            });
        }
        let text = serde_json::to_string_pretty(&manifest).expect("manifest as JSON") + "\n";
        std::fs::write(dir().join("manifest.json"), text).expect("writing manifest.json");
        eprintln!("rebuilt; commit tests/fixtures/guests/ (the .wasm files and manifest.json)");
    });
}

/// Runs `toolhost build` in the fixture's example project with the pinned
/// toolchains; returns the built `.wasm`.
fn build_example(f: &Fixture) -> PathBuf {
    let project = root().join(f.project);
    let out = Command::new(toolhost_bin())
        .arg("build")
        .arg("--dir")
        .arg(&project)
        .envs(toolchain_env())
        .output()
        .expect("running toolhost build");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "toolhost build in {} failed:\n{stdout}\n{}",
        project.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(stdout.lines().next().expect("toolhost build prints the .wasm path"))
}

/// The environment that points `toolhost build` at the pinned toolchains,
/// installed on first use into `target/guest-toolchains/`. Fails (with the
/// reason) when one cannot be installed.
pub fn toolchain_env() -> Vec<(String, String)> {
    static ENV: OnceLock<Vec<(String, String)>> = OnceLock::new();
    ENV.get_or_init(|| {
        let base = root().join("target/guest-toolchains");
        std::fs::create_dir_all(&base).expect("creating target/guest-toolchains");
        let py = base.join(format!("componentize-py-{COMPONENTIZE_PY}"));
        let py_bin = py.join("bin/componentize-py");
        if !py_bin.exists() {
            run(Command::new("python3").arg("-m").arg("venv").arg(&py), "python3 -m venv (install python3-venv)");
            run(
                Command::new(py.join("bin/pip")).args([
                    "install",
                    "-q",
                    &format!("componentize-py=={COMPONENTIZE_PY}"),
                ]),
                "pip install componentize-py (needs PyPI)",
            );
        }
        let js = base.join(format!("componentize-js-{COMPONENTIZE_JS}"));
        let js_pkg = js.join("node_modules/@bytecodealliance/componentize-js");
        if !js_pkg.join("src/componentize.js").exists() {
            std::fs::create_dir_all(&js).expect("creating the componentize-js folder");
            run(
                Command::new("npm").arg("install").arg("--prefix").arg(&js).args([
                    "--no-audit",
                    "--no-fund",
                    "--silent",
                    &format!("@bytecodealliance/componentize-js@{COMPONENTIZE_JS}"),
                ]),
                "npm install @bytecodealliance/componentize-js (needs Node.js 20+, npm and the npm registry)",
            );
        }
        vec![
            ("TOOLHOST_COMPONENTIZE_PY".into(), py_bin.display().to_string()),
            ("TOOLHOST_COMPONENTIZE_JS".into(), js_pkg.display().to_string()),
        ]
    })
    .clone()
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("could not start {what}: {e}"));
    assert!(
        out.status.success(),
        "installing a pinned guest toolchain failed: {what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
