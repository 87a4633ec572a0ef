//! `toolhost build`: builds the project in a folder into a component with
//! its language's toolchain and prints the `.wasm` path and its SHA-256.
//! It installs nothing: a missing toolchain is named with how to get it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use toolhost::lockfile::sha256_hex;

use super::assets::{self, WIT_VERSION};
use super::project::{Lang, Project};
use crate::args::BuildArgs;
use crate::exit;
use crate::out::outln;

/// The componentize-py release the Python SDK is built and tested with.
pub const COMPONENTIZE_PY: &str = "0.25.1";
/// The componentize-js release the JavaScript SDK is built and tested with.
pub const COMPONENTIZE_JS: &str = "0.23.0";

pub fn build(args: BuildArgs) -> Result<u8> {
    let project = Project::load(&args.dir)?;
    let dot = assets::write(&project.dir, project.lang)?;
    let out = project.output();
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    match project.lang {
        Lang::Rust => rust(&project, &out)?,
        Lang::Python => python(&project, &dot, &out)?,
        Lang::Js => js(&project, &dot, &out)?,
    }
    let bytes = std::fs::read(&out).with_context(|| format!("reading the built component {}", out.display()))?;
    outln!("{}", out.display());
    outln!("sha256: {}", sha256_hex(&bytes));
    Ok(exit::OK)
}

/// Runs `cmd`, failing with its output and `what` when it fails.
fn run(mut cmd: Command, what: &str) -> Result<()> {
    eprintln!("toolhost build: {what}");
    // stdout is for the path and the hash only: the toolchain's chatter goes to stderr.
    cmd.stdout(std::process::Stdio::from(std::io::stderr()));
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{what} failed ({status}); its output is above");
    }
    Ok(())
}

/// The program `env` names, or `default` when it is on `PATH`.
fn program(env: &str, default: &str, missing: &str) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(default))
        .find(|p| p.is_file());
    found.ok_or_else(|| anyhow::anyhow!("{default} is not on PATH (nor set in {env}): {missing}"))
}

fn rust(project: &Project, out: &Path) -> Result<()> {
    let cargo = program(
        "CARGO",
        "cargo",
        "install Rust with rustup (https://rustup.rs), then `rustup target add wasm32-wasip2`",
    )?;
    let target = project.dir.join("target");
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(&project.dir)
        .args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    run(
        cmd,
        "cargo build --release --target wasm32-wasip2 (if the target is missing: `rustup target add wasm32-wasip2`)",
    )?;
    let manifest = std::fs::read_to_string(project.dir.join("Cargo.toml")).context("reading Cargo.toml")?;
    let name = manifest
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("package")?.get("name")?.as_str().map(str::to_string))
        .context("Cargo.toml has no [package] name")?;
    let built = target.join("wasm32-wasip2/release").join(format!("{}.wasm", name.replace('-', "_")));
    std::fs::copy(&built, out).with_context(|| format!("copying {} to {}", built.display(), out.display()))?;
    Ok(())
}

fn python(project: &Project, dot: &Path, out: &Path) -> Result<()> {
    let tool = program(
        "TOOLHOST_COMPONENTIZE_PY",
        "componentize-py",
        &format!(
            "install it with `pip install componentize-py=={COMPONENTIZE_PY}` (in a venv), or set TOOLHOST_COMPONENTIZE_PY to its path"
        ),
    )?;
    warn_version(Command::new(&tool).arg("--version"), "componentize-py", COMPONENTIZE_PY);
    let source = project.source.as_deref().unwrap_or("app.py");
    let module = source.strip_suffix(".py").unwrap_or(source);
    let mut cmd = Command::new(&tool);
    cmd.current_dir(&project.dir)
        .arg("-d")
        .arg(dot.join("wit").join(WIT_VERSION))
        .args(["-w", project.kind.world(), "componentize", module, "-p"])
        .arg(&project.dir)
        .arg("-p")
        .arg(dot.join("python"))
        .arg("-o")
        .arg(out);
    run(cmd, &format!("componentize-py {module} (bundles CPython: about a minute, 18 MB)"))
}

fn js(project: &Project, dot: &Path, out: &Path) -> Result<()> {
    let node = program(
        "TOOLHOST_NODE",
        "node",
        "install Node.js 20 or newer (https://nodejs.org, or `apt-get install nodejs npm`)",
    )?;
    let module = componentize_js(&project.dir)?;
    // componentize-js sees only the folder it runs in: stage the sources, the SDK and the WIT together.
    let stage = dot.join("js");
    for entry in std::fs::read_dir(&project.dir).with_context(|| format!("reading {}", project.dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let is_js = name.ends_with(".js") || name.ends_with(".mjs");
        if is_js && path.is_file() && !name.contains(".test.") && name != "toolhost-sdk.js" {
            std::fs::copy(&path, stage.join(&name)).with_context(|| format!("staging {}", path.display()))?;
        }
    }
    let wit = stage.join("wit");
    let _ = std::fs::remove_dir_all(&wit);
    for (name, text) in toolhost::engine::WIT_PACKAGE {
        assets::put(&wit.join(name), text)?;
    }
    let source = project.source.as_deref().unwrap_or("app.js");
    let mut cmd = Command::new(&node);
    cmd.current_dir(&stage).arg("build.mjs").arg(&module).arg(source).arg(project.kind.world()).arg(out);
    run(cmd, &format!("componentize-js {source} (bundles SpiderMonkey: about a minute, 12 MB)"))
}

/// The componentize-js package folder: `$TOOLHOST_COMPONENTIZE_JS`, or
/// `node_modules/@bytecodealliance/componentize-js` in the project or a parent.
fn componentize_js(dir: &Path) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("TOOLHOST_COMPONENTIZE_JS").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.join("src/componentize.js").is_file() {
            return Ok(p);
        }
        bail!(
            "TOOLHOST_COMPONENTIZE_JS={} is not the componentize-js package folder (no src/componentize.js)",
            p.display()
        );
    }
    for d in dir.ancestors() {
        let p = d.join("node_modules/@bytecodealliance/componentize-js");
        if p.join("src/componentize.js").is_file() {
            let version = std::fs::read_to_string(p.join("package.json")).unwrap_or_default();
            if !version.contains(&format!("\"version\": \"{COMPONENTIZE_JS}\"")) {
                eprintln!(
                    "warning: {} is not componentize-js {COMPONENTIZE_JS}, the version toolhost is tested with",
                    p.display()
                );
            }
            return Ok(p);
        }
    }
    bail!(
        "componentize-js is not installed for {}: run `npm install` there (package.json pins @bytecodealliance/componentize-js {COMPONENTIZE_JS}), \
         or `npm install @bytecodealliance/componentize-js@{COMPONENTIZE_JS}` elsewhere and set TOOLHOST_COMPONENTIZE_JS to its node_modules/@bytecodealliance/componentize-js",
        dir.display()
    )
}

fn warn_version(cmd: &mut Command, name: &str, pinned: &str) {
    if let Ok(out) = cmd.output() {
        let text = String::from_utf8_lossy(&out.stdout);
        if !text.contains(pinned) {
            eprintln!("warning: {name} says `{}`; toolhost is tested with {pinned}", text.trim());
        }
    }
}
