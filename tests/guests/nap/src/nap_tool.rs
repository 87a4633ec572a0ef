// Shared by the `nap` and `nap-safe` guests (included, not a module: each
// crate exports its own tool). `nap_tool!(Name, concurrency_safe)` defines a
// tool that busy-waits `millis` and reports its start and end in Unix
// milliseconds as `start end`.
macro_rules! nap_tool {
    ($name:ident, $safe:expr) => {
        struct $name;

        #[derive(serde::Deserialize)]
        struct Input {
            millis: u64,
        }

        fn now_ms() -> u128 {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
        }

        impl toolhost_sdk::Tool for $name {
            type Input = Input;
            fn spec() -> toolhost_sdk::ToolSpec {
                toolhost_sdk::ToolSpec::new(stringify!($name), "Waits, then reports when it ran.")
                    .schema(serde_json::json!({"type": "object", "properties": {"millis": {"type": "integer", "minimum": 0}}, "required": ["millis"]}))
                    .read_only(true)
                    .concurrency_safe($safe)
            }
            fn call(input: Input, out: &mut toolhost_sdk::Output) -> Result<(), toolhost_sdk::ToolError> {
                let start = now_ms();
                while now_ms() < start + u128::from(input.millis) {
                    std::hint::spin_loop();
                }
                out.text(&format!("{start} {}", now_ms()));
                Ok(())
            }
        }

        toolhost_sdk::export_tool!($name);
    };
}
