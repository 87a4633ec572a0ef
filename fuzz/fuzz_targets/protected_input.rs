//! toolhost's own files named in a call's input (hostile model input). The
//! engine first asks a cheap question of the input's text
//! (`may_be_named_in`) and parses and scans it (`named_in_input`) only when
//! the answer is yes: the cheap test must never say no where the scan finds
//! a protected path, or that call skips the denial every mode keeps. The
//! first line of the data is `cwd`, the second `home`, the rest the input.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolhost_core::protected::{ProtectedKind, ProtectedPaths};

/// The protected paths of a host whose settings live in `/w` (paths that
/// do not exist here, so building them reads nothing but `/`).
fn protected() -> &'static ProtectedPaths {
    static PATHS: OnceLock<ProtectedPaths> = OnceLock::new();
    PATHS.get_or_init(|| {
        let mut p = ProtectedPaths::new();
        p.add(ProtectedKind::SettingsFile, Path::new("/w/toolhost.toml"));
        p.add(ProtectedKind::LockFile, Path::new("/w/toolhost.lock"));
        p.add(ProtectedKind::ComponentFile, Path::new("/w/mw/retry.wasm"));
        p.add(ProtectedKind::PluginDir, Path::new("/w/plugins"));
        p.add(ProtectedKind::StateDir, Path::new("/home/u/.local/state/toolhost/sessions"));
        p.add(ProtectedKind::CacheDir, Path::new("/home/u/.cache/toolhost"));
        p
    })
}

fuzz_target!(|text: &str| {
    let mut parts = text.splitn(3, '\n');
    let (cwd, home, input) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let paths = protected();
    let may = paths.may_be_named_in(input, cwd, home);
    let Ok(value) = serde_json::from_str::<serde_json::Value>(input) else { return };
    if let Some(why) = paths.named_in_input(&value, cwd, home) {
        assert!(may, "the cheap test misses what the scan finds: {why}");
    }
});
