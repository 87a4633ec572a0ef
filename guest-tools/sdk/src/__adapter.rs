//! Glue between the WIT exports and [`crate::Tool`], used by `export_tool!`.

use crate::bindings::toolhost::tool::types::{PermissionContext, PermissionDecision};
use crate::{Context, Output, PermissionBehavior, PermissionRule, Tool, ToolError, ToolMetadata};

fn parse<T: Tool>(input: &str) -> Result<T::Input, ToolError> {
    serde_json::from_str(input)
        .map_err(|e| ToolError::InvalidInput(format!("input does not fit the tool's schema: {e}")))
}

thread_local! {
    /// The last tool configuration text and its parsed form: every check of
    /// one instance usually carries the same settings.
    static TOOL_CONFIG: std::cell::RefCell<Option<(String, serde_json::Value)>> = const { std::cell::RefCell::new(None) };
}

/// The tool configuration JSON parsed (an empty object when it is not JSON),
/// remembered for the last text (a pure function of it).
fn tool_config(text: String) -> serde_json::Value {
    if let Some(v) = TOOL_CONFIG.with_borrow(|c| c.as_ref().filter(|(k, _)| *k == text).map(|(_, v)| v.clone())) {
        return v;
    }
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Object(Default::default()));
    TOOL_CONFIG.set(Some((text, v.clone())));
    v
}

fn context(ctx: PermissionContext) -> Context {
    Context {
        mode: ctx.mode,
        working_dirs: ctx.working_directories,
        cwd: ctx.cwd,
        home: ctx.home,
        tool_config: tool_config(ctx.tool_config),
    }
}

pub fn metadata<T: Tool>() -> ToolMetadata {
    T::spec().into_metadata()
}

pub fn check_read_only<T: Tool>(input: &str) -> bool {
    // Input that does not parse is never read-only: fail closed.
    parse::<T>(input).map(|i| T::check_read_only(&i)).unwrap_or(false)
}

pub fn check_permissions<T: Tool>(input: &str, ctx: PermissionContext) -> PermissionDecision {
    let decision = match parse::<T>(input) {
        Ok(i) => T::check_permissions(&i, &context(ctx)),
        Err(ToolError::InvalidInput(e)) => crate::Decision::deny(e),
        Err(e) => crate::Decision::deny(format!("{e:?}")),
    };
    PermissionDecision {
        behavior: decision.behavior,
        message: decision.message,
        reason: decision.reason,
        bypass_immune: decision.bypass_immune,
        suggested_rules: Vec::new(),
    }
}

pub fn match_rule<T: Tool>(
    behavior: PermissionBehavior,
    contents: &[String],
    input: &str,
    ctx: PermissionContext,
) -> Option<u32> {
    let input = parse::<T>(input).ok()?;
    T::match_rules(behavior, contents, &input, &context(ctx))
}

pub fn suggestions<T: Tool>(input: &str, ctx: PermissionContext) -> Vec<PermissionRule> {
    match parse::<T>(input) {
        Ok(i) => T::suggestions(&i, &context(ctx)),
        Err(_) => Vec::new(),
    }
}

pub fn call<T: Tool>(input: &str) -> Result<(), ToolError> {
    let input = parse::<T>(input)?;
    let mut out = Output::new();
    T::call(input, &mut out)
}
