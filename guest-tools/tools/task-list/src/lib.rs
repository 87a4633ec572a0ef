//! `TaskList`: lists the agent's tasks, one line each (AgentScope's
//! TaskList, spec §7). See the `task-model` crate for the exact format.

use serde_json::json;
use task_model::{ListInput, store};
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

/// The TaskList tool.
pub struct TaskList;

const DESCRIPTION: &str = "Lists every task of the task list, one line each: `{id} [{status}] {subject}`, \
then `({owner})` if it has one and `[blocked by a, b]` if other tasks block it (completed blockers \
included). Use it to find the next task to work on: prefer pending tasks whose blockers are all \
completed, lowest id first. Call it after completing a task to see what became available.";

impl Tool for TaskList {
    type Input = ListInput;

    fn spec() -> ToolSpec {
        ToolSpec::new("TaskList", DESCRIPTION)
            .schema(json!({"type": "object", "properties": {}}))
            .concurrency_safe(true)
            .read_only(false)
            .state_injected(true)
    }

    fn check_permissions(_input: &ListInput, _ctx: &Context) -> Decision {
        Decision::allow("TaskList is always allowed to be called.")
    }

    fn call(_input: ListInput, out: &mut Output) -> Result<(), ToolError> {
        match store::load() {
            Ok(tasks) => out.text(&tasks.list()),
            Err(e) => out.error(&format!("TaskStateError: {e}")),
        };
        Ok(())
    }
}

export_tool!(TaskList);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::PermissionBehavior;

    #[test]
    fn spec_flags_and_permission() {
        let spec = TaskList::spec();
        assert_eq!(spec.name, "TaskList");
        assert!(spec.concurrency_safe && !spec.read_only && spec.state_injected && !spec.external);
        assert_eq!(spec.input_schema["type"], "object");
        let ctx = Context::default();
        let input: task_model::ListInput = serde_json::from_str(r#"{}"#).unwrap();
        let d = TaskList::check_permissions(&input, &ctx);
        assert_eq!(d.behavior, PermissionBehavior::Allow);
        assert_eq!(d.message, "TaskList is always allowed to be called.");
    }
}
