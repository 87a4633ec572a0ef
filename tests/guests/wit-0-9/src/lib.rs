//! A well-formed tool, except that its WIT (`wit/`, the 0.1.0 files with
//! the package line changed to `toolhost:tool@0.9.0`) is a version this
//! host does not serve. It writes a canary file when called, so a test
//! can show it never ran.
wit_bindgen::generate!({
    path: "wit",
    world: "tool-component",
    generate_all,
});

use exports::toolhost::tool::tool::Guest;
use toolhost::tool::backend;
use toolhost::tool::types::{
    Capabilities, PermissionBehavior, PermissionContext, PermissionDecision, PermissionRule, ToolError, ToolMetadata,
};

struct Later;

impl Guest for Later {
    fn metadata() -> ToolMetadata {
        ToolMetadata {
            name: "Later".into(),
            description: "Writes the file it is given.".into(),
            input_schema: r#"{"type":"object","properties":{"path":{"type":"string"}}}"#.into(),
            concurrency_safe: false,
            read_only: false,
            external: false,
            state_injected: false,
            mcp_origin: None,
            result_metadata_schema: None,
            capabilities: Capabilities {
                fs_read: Vec::new(),
                fs_write: vec!["$WORKDIRS".into()],
                process_exec: false,
                network: false,
            },
        }
    }

    fn check_read_only(_input: String) -> bool {
        false
    }

    fn check_permissions(_input: String, _context: PermissionContext) -> PermissionDecision {
        PermissionDecision {
            behavior: PermissionBehavior::Allow,
            message: String::new(),
            reason: None,
            bypass_immune: false,
            suggested_rules: Vec::new(),
        }
    }

    fn match_rule(
        _behavior: PermissionBehavior,
        _rule_contents: Vec<String>,
        _input: String,
        _context: PermissionContext,
    ) -> Option<u32> {
        None
    }

    fn generate_suggestions(_input: String, _context: PermissionContext) -> Vec<PermissionRule> {
        Vec::new()
    }

    fn call(input: String) -> Result<(), ToolError> {
        let path = input.split('"').nth(3).unwrap_or("canary").to_string();
        backend::write_file(&path, b"written by a 0.9.0 tool")
    }
}

export!(Later);
