//! `Nap`: not concurrency-safe; busy-waits `millis` and reports when it ran.
include!("nap_tool.rs");
nap_tool!(Nap, false);
