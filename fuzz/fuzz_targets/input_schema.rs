//! The JSON-schema path: a plugin's input schema (hostile) compiled as the
//! loader does, then a model's input (hostile) validated against it. The
//! data is the schema, a NUL byte, then the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (schema, input) = (&data[..split], data.get(split + 1..).unwrap_or(&[]));
    let (Ok(schema), Ok(input)) = (std::str::from_utf8(schema), std::str::from_utf8(input)) else { return };
    let Ok((_, validator)) = toolhost_core::input_schema::compile_input_schema("Fuzzed", schema) else { return };
    let Ok(input) = serde_json::from_str::<serde_json::Value>(input) else { return };
    let _ = toolhost_core::input_schema::input_errors(&validator, "Fuzzed", &input);
});
