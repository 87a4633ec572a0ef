//! The `toolhost` binary answers `--help` and `--version` without loading
//! anything.
//!
//! Being an integration test of this package, this file also makes
//! `cargo test --workspace` build the `toolhost` binary in the same build as
//! every test (same features), which the end-to-end tests in `tests/` then
//! run (see `toolhost_e2e::toolhost_bin`): no second host build.

use std::process::Command;

#[test]
fn help_lists_every_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost")).arg("--help").output().expect("running toolhost --help");
    assert!(out.status.success(), "toolhost --help failed: {}", String::from_utf8_lossy(&out.stderr));
    let help = String::from_utf8_lossy(&out.stdout);
    for command in ["list", "describe", "call", "check", "run", "resume", "inspect"] {
        assert!(help.contains(command), "`{command}` missing from toolhost --help:\n{help}");
    }
}

#[test]
fn version_names_the_package_version() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_toolhost")).arg("--version").output().expect("running toolhost --version");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}
