//! Runs the native unit tests of the guest-side libraries (the Bash
//! analysis, path policy, task model, ...), which live in the separate
//! `guest-tools/` workspace, so that `cargo test` at the root runs every test.

use std::process::Command;

#[test]
fn guest_library_unit_tests_pass() {
    let root = toolhost_e2e::root();
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let libs: Vec<String> = std::fs::read_dir(root.join("guest-tools/lib"))
        .expect("guest-tools/lib")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| {
            let manifest = std::fs::read_to_string(e.path().join("Cargo.toml")).expect("manifest");
            manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = ").map(|n| n.trim_matches('"').to_string()))
                .expect("package name")
        })
        .collect();
    assert!(libs.iter().any(|l| l == "bash-analysis"), "found {libs:?}");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root.join("guest-tools")).args(["test", "--target-dir"]).arg(root.join("target/guest-native"));
    for lib in &libs {
        cmd.args(["-p", lib]);
    }
    cmd.env_remove("CARGO_TARGET_DIR").env_remove("RUSTFLAGS");
    let out = cmd.output().expect("running cargo test in guest-tools/");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Show the per-library summaries in this test's output.
    for line in stdout.lines().filter(|l| l.starts_with("test result:")) {
        println!("guest-tools: {line}");
    }
    assert!(out.status.success(), "guest library tests failed ({cmd:?}):\n{stdout}\n{stderr}");
}
