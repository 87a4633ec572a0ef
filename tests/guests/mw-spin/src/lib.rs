//! `mw-spin`: loops forever.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Hostile;

impl Middleware for Hostile {
    const NAME: &'static str = "mw-spin";
    const DESCRIPTION: &'static str = "Loops forever.";
    #[allow(unreachable_code)]
    fn on_tool_call(_tool: &ToolMetadata, _input: String, _next: &Next, _out: &mut Output) -> Result<(), ToolError> {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
        Ok(())
    }
}
export_middleware!(Hostile);
