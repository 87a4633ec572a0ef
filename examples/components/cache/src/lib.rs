//! `cache`: answers a repeated call of a read-only tool from the agent
//! state, without running the tool (a short-circuit: `next` is not called).
//!
//! Nothing in a middleware's memory survives between calls (each call gets
//! a fresh instance), so the cache lives in the agent state, keyed by tool
//! name and input. That needs the `state` grant:
//! `--grant cache=state` or `[grants.cache] state = true`. Without it every
//! call is a miss. Only read-only tools are cached (skipping a tool with
//! side effects would change what happens), and only successful text-only
//! results. The response metadata says `"cache": "hit"`, `"miss"` or
//! `"bypass"` (a tool that is not read-only).

use serde_json::json;
use toolhost_sdk::middleware::{Middleware, Next, is_error, metadata_chunk, text_of};
use toolhost_sdk::{
    ContentBlock, Output, ResultState, ToolError, ToolMetadata, export_middleware, log, state, text_chunk,
};

struct Cache;

impl Middleware for Cache {
    const NAME: &'static str = "cache";
    const DESCRIPTION: &'static str = "Answers repeated calls of read-only tools from the agent state without running them (needs --grant cache=state).";

    fn on_tool_call(tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        if !tool.read_only {
            let outcome = next.run(&input)?.forward(out);
            out.emit(metadata_chunk(&json!({"cache": "bypass"})));
            return outcome;
        }
        let key = format!("cache:{}:{}", tool.name, input);
        if let Some(text) = state::get(&key).ok().flatten().and_then(|v| serde_json::from_str::<String>(&v).ok()) {
            out.emit(text_chunk(&text, ResultState::Running, Some(&json!({"cache": "hit"}))));
            return Ok(());
        }
        let inner = next.run(&input)?;
        let mut text = String::new();
        let mut cacheable = true;
        for chunk in &inner {
            cacheable &= !is_error(&chunk) && chunk.content.iter().all(|b| matches!(b, ContentBlock::Text(_)));
            text.push_str(&text_of(&chunk));
            out.emit(chunk);
        }
        let outcome = inner.outcome();
        if cacheable && outcome.is_ok() {
            if let Err(e) = state::set(&key, &serde_json::Value::String(text).to_string()) {
                log::debug(&format!("not caching {}: {e}", tool.name));
            }
        }
        out.emit(metadata_chunk(&json!({"cache": "miss"})));
        outcome
    }
}

export_middleware!(Cache);
