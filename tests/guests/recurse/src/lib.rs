//! `Recurse`: Recurses without end; with `{"big_frames": true}` each frame
//! holds a 64 KiB array, so the shadow stack in linear memory runs out after
//! a few frames (rather than the engine's call stack).
use toolhost_sdk::{Output, Tool, ToolError, ToolSpec, export_tool};

struct Hostile;

impl Tool for Hostile {
    type Input = serde_json::Value;
    fn spec() -> ToolSpec {
        ToolSpec::new("Recurse", "Recurses without end.").read_only(true)
    }
    #[allow(unreachable_code, unconditional_recursion)]
    fn call(input: serde_json::Value, out: &mut Output) -> Result<(), ToolError> {
        fn deeper(n: u64) -> u64 {
            std::hint::black_box(deeper(std::hint::black_box(n + 1))) + 1
        }
        fn wider(n: u64) -> u64 {
            let frame = std::hint::black_box([n as u8; 1 << 16]);
            std::hint::black_box(wider(std::hint::black_box(n + 1))) + u64::from(frame[n as usize % frame.len()])
        }
        let depth = if input["big_frames"] == serde_json::Value::Bool(true) { wider(0) } else { deeper(0) };
        out.text(&depth.to_string());
        Ok(())
    }
}
export_tool!(Hostile);
