//! The built-in tools, compiled from `guest-tools/` by the build script and
//! embedded in the binary, so a plain `cargo build` yields a working host.

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));
