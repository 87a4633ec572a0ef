//! Builds the built-in tools in `guest-tools/` for `wasm32-wasip2` and
//! generates `builtins.rs`, which embeds each `tool_*.wasm` in the binary
//! together with its tool name (looked up in `TOOL_NAMES`, host/src/builtin.rs).
//!
//! The guests live in their own workspace (they need another target and a
//! release profile even for a debug host) and build into
//! `<target>/guest-tools`, shared by every profile of the host.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("host/ has a parent").to_path_buf();
    let guests = root.join("guest-tools");
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("guest-tools");

    for path in ["Cargo.toml", "Cargo.lock", "sdk", "lib", "tools"] {
        println!("cargo:rerun-if-changed={}", guests.join(path).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    println!("cargo:rerun-if-env-changed=TOOLHOST_SKIP_GUEST_BUILD");

    let wasm_dir = target_dir.join("wasm32-wasip2").join("release");
    if std::env::var_os("TOOLHOST_SKIP_GUEST_BUILD").is_none() {
        build_guests(&guests, &target_dir);
    }
    write_builtins(&wasm_dir, &guests.join("tools"));
    build_docker_helper(&manifest_dir);
}

/// Builds the Docker backend's resident helper (`docker-helper/main.rs`,
/// standard library only) as a static executable for the host's own
/// architecture, embedded by `backend/docker/helper.rs`. Containers share
/// the host's kernel and architecture; the image need not have a libc.
fn build_docker_helper(manifest_dir: &Path) {
    let source = manifest_dir.join("docker-helper/main.rs");
    println!("cargo:rerun-if-changed={}", source.display());
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("toolhost-docker-helper");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut cmd = Command::new(&rustc);
    cmd.args(["--edition", "2024", "--crate-name", "toolhost_docker_helper", "--target", &target])
        .args(["-C", "opt-level=s", "-C", "strip=symbols", "-C", "panic=abort"])
        .args(["-C", "target-feature=+crt-static", "-o"])
        .arg(&out)
        .arg(&source);
    for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS"] {
        cmd.env_remove(var);
    }
    let output = cmd.output().unwrap_or_else(|e| panic!("could not run `{rustc}` for the Docker helper: {e}"));
    if !output.status.success() {
        panic!(
            "building the Docker helper {} failed: {}; a static build needs the C library's static archive \
             (Debian: libc6-dev)",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    println!("cargo:rustc-env=TOOLHOST_DOCKER_HELPER={}", out.display());
}

fn build_guests(guests: &Path, target_dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(guests)
        .args(["build", "--release", "--target", "wasm32-wasip2", "--workspace", "--target-dir"])
        .arg(target_dir);
    // The host's flags and target are not the guests'.
    for var in
        ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_TARGET_DIR", "RUSTC_WORKSPACE_WRAPPER"]
    {
        cmd.env_remove(var);
    }
    let output = cmd.output().unwrap_or_else(|e| panic!("could not run `{cargo} build` for guest-tools/: {e}"));
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        panic!(
            "building the built-in tools failed: {cmd:?} in {} (see the compiler output above). \
             Is the wasm target installed? Run `rustup target add wasm32-wasip2`.",
            guests.display()
        );
    }
}

fn write_builtins(wasm_dir: &Path, tools_dir: &Path) {
    let mut tools: Vec<(String, PathBuf)> = std::fs::read_dir(wasm_dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter_map(|p| {
                    let stem = p.file_stem()?.to_str()?.to_string();
                    let name = stem.strip_prefix("tool_")?.replace('_', "-");
                    (p.extension()? == "wasm").then_some((name, p))
                })
                .collect()
        })
        .unwrap_or_default();
    tools.sort();
    // `Builtin` and `tool_name` are in host/src/builtin.rs, which includes
    // this file. `tool_name` is evaluated at compile time: a guest crate with
    // no tool name in its `TOOL_NAMES` stops the build.
    let mut out = String::from(
        "/// The embedded built-in tools, sorted by crate name, each with the tool\n\
         /// name it is registered under.\n\
         pub static BUILTINS: &[Builtin] = &[\n",
    );
    for (name, path) in &tools {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let digest: String =
            sha2::Digest::finalize(sha2::Digest::chain_update(<sha2::Sha256 as sha2::Digest>::new(), &bytes))
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
        // The metadata the catalog shows without compiling the component
        // (host/src/builtin.rs compares it with the component's own).
        let metadata = tools_dir.join(name).join("metadata.json");
        // Missing (a new built-in): embed nothing, so that the host builds and
        // the test that writes the file can run; the tool's listing says so.
        let metadata_text = std::fs::read_to_string(&metadata).unwrap_or_else(|_| {
            println!("cargo:warning={} is missing; create it with `TOOLHOST_BLESS_METADATA=1 cargo test -p toolhost --lib builtin_metadata_files`", metadata.display());
            String::new()
        });
        out.push_str(&format!(
            "    Builtin {{ name: tool_name({name:?}), crate_name: {name:?}, bytes: include_bytes!({:?}), sha256: {digest:?}, metadata: {metadata_text:?} }},\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtins.rs");
    std::fs::write(dest, out).expect("writing builtins.rs");
}
