//! Builds the components the tests load from files: the examples
//! (`examples/components/`) and the hostile guests (`tests/guests/`), each
//! workspace for `wasm32-wasip2`, into `<target>/test-components/<set>`.
//! The test helpers find them through the env vars set below.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("tests/ has a parent").to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    for (set, dir, var) in [
        ("examples", root.join("examples/components"), "EXAMPLE_COMPONENTS"),
        ("guests", manifest_dir.join("guests"), "TEST_GUESTS"),
    ] {
        let out = target.join("test-components").join(set);
        build(&dir, &out);
        println!("cargo:rustc-env={var}={}", out.join("wasm32-wasip2").join("release").display());
    }
    println!("cargo:rustc-env=TOOLHOST_ROOT={}", root.display());
}

fn build(workspace: &Path, target_dir: &Path) {
    // The whole folder: a new member crate changes it too. (Its own target/
    // is unused: builds go to `target_dir`.)
    println!("cargo:rerun-if-changed={}", workspace.display());
    println!(
        "cargo:rerun-if-changed={}",
        workspace.parent().and_then(Path::parent).map(|r| r.join("guest-tools/sdk")).unwrap_or_default().display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        workspace.parent().and_then(Path::parent).map(|r| r.join("wit")).unwrap_or_default().display()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace)
        .args(["build", "--release", "--target", "wasm32-wasip2", "--workspace", "--target-dir"])
        .arg(target_dir);
    for var in
        ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_TARGET_DIR", "RUSTC_WORKSPACE_WRAPPER"]
    {
        cmd.env_remove(var);
    }
    let output = cmd.output().unwrap_or_else(|e| panic!("could not run cargo for {}: {e}", workspace.display()));
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        panic!(
            "building the test components in {} failed: {cmd:?} (compiler output above; is `rustup target add wasm32-wasip2` done?)",
            workspace.display()
        );
    }
}
