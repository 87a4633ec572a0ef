//! `NapSafe`: concurrency-safe; busy-waits `millis` and reports when it ran.
include!("../../nap/src/nap_tool.rs");
nap_tool!(NapSafe, true);
