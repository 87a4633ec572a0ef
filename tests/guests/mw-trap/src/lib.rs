//! `mw-trap`: panics on every call. Where is set by its settings
//! (`[middleware.mw-trap] when = ...`, read from `TOOLHOST_TOOL_CONFIG`):
//! on entry (the default), or `after-next`: once the inner layers have
//! started and sent their first chunk, so that they are still running
//! when it traps.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware};

struct Hostile;

impl Middleware for Hostile {
    const NAME: &'static str = "mw-trap";
    const DESCRIPTION: &'static str = "Panics on every call.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let config = std::env::var("TOOLHOST_TOOL_CONFIG").unwrap_or_default();
        let when =
            serde_json::from_str::<serde_json::Value>(&config).ok().and_then(|c| c["when"].as_str().map(String::from));
        if when.as_deref() == Some("after-next") {
            let inner = next.run(&input)?;
            if let Some(chunk) = inner.next_chunk() {
                out.emit(chunk);
            }
            panic!("mw-trap panics after next.run");
        }
        panic!("mw-trap always panics");
    }
}
export_middleware!(Hostile);
