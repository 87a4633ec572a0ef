//! One line of `toolhost check --batch`: parsed into a request or refused
//! with an error that carries the id; the error answer is one JSON line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_core::check_batch::{CheckRequest, error_json};

fuzz_target!(|line: &str| {
    match CheckRequest::parse(line) {
        Ok(req) => {
            let _ = format!("{req:?}");
        }
        Err(e) => {
            let answer = error_json(&e.id, &e.message).to_string();
            assert!(!answer.contains('\n'), "an error answer is one line");
        }
    }
});
