//! `TaskGet`: shows one task of the agent's task list in full (AgentScope's
//! TaskGet, spec §7). See the `task-model` crate for the exact format.

use serde_json::json;
use task_model::{GetInput, store};
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

/// The TaskGet tool.
pub struct TaskGet;

const DESCRIPTION: &str = "Shows one task of the task list in full: subject, status, description, owner, \
the tasks blocking it and blocked by it, and its metadata. Use it before starting a task to read its \
requirements, or to check what it waits for. TaskList gives the ids.";

impl Tool for TaskGet {
    type Input = GetInput;

    fn spec() -> ToolSpec {
        ToolSpec::new("TaskGet", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "properties": {
                    "task_id": {"type": "string", "description": "The id of the task, as TaskCreate or TaskList gave it."}
                },
                "required": ["task_id"]
            }))
            .concurrency_safe(true)
            .read_only(false)
            .state_injected(true)
    }

    fn check_permissions(_input: &GetInput, _ctx: &Context) -> Decision {
        Decision::allow("TaskGet is always allowed to be called.")
    }

    fn call(input: GetInput, out: &mut Output) -> Result<(), ToolError> {
        match store::load() {
            Ok(tasks) => match tasks.get(&input.task_id) {
                Ok(text) => out.text(&text),
                Err(e) => out.error(&e.to_string()),
            },
            Err(e) => out.error(&format!("TaskStateError: {e}")),
        };
        Ok(())
    }
}

export_tool!(TaskGet);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::PermissionBehavior;

    #[test]
    fn spec_flags_and_permission() {
        let spec = TaskGet::spec();
        assert_eq!(spec.name, "TaskGet");
        assert!(spec.concurrency_safe && !spec.read_only && spec.state_injected && !spec.external);
        assert_eq!(spec.input_schema["type"], "object");
        let ctx = Context::default();
        let input: task_model::GetInput = serde_json::from_str(r#"{"task_id":"1"}"#).unwrap();
        let d = TaskGet::check_permissions(&input, &ctx);
        assert_eq!(d.behavior, PermissionBehavior::Allow);
        assert_eq!(d.message, "TaskGet is always allowed to be called.");
    }
}
