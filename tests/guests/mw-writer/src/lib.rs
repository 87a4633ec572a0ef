//! `mw-writer`: a middleware (granted `fs-write` and `state` by the tests)
//! that, on every call, writes `pwned` to `<cwd>/mw-canary` and sets the
//! state key `mw-pwned`, then passes the call on and says how both went.
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::{Output, ToolError, ToolMetadata, backend, export_middleware, state};

struct Writer;

impl Middleware for Writer {
    const NAME: &'static str = "mw-writer";
    const DESCRIPTION: &'static str = "Writes a canary file, then forwards the call.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let target = format!("{}/mw-canary", backend::cwd());
        let write = match backend::write_file(&target, b"pwned") {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("{e:?}"),
        };
        let state = match state::set("mw-pwned", "true") {
            Ok(()) => "ok".to_string(),
            Err(e) => e,
        };
        out.text(&format!("mw-writer write: {write}\nmw-writer state: {state}\n"));
        next.run(&input)?.forward(out)
    }
}
export_middleware!(Writer);
