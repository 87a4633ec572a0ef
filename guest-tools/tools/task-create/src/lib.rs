//! `TaskCreate`: adds a task to the agent's task list (AgentScope's
//! TaskCreate, spec §7). The list lives in the agent state under `tasks`;
//! see the `task-model` crate for the data model and the exact texts.

use serde_json::json;
use task_model::{CreateInput, store, time};
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

/// The TaskCreate tool.
pub struct TaskCreate;

const DESCRIPTION: &str = "Creates a task in the task list of this session, to plan and track multi-step work. \
Use it for work with three or more distinct steps, when the user gives a list of things to do, or when \
you discover follow-up work; skip it for a single trivial step. A new task starts as `pending` with no \
owner and no dependencies; the answer gives its id. Then use TaskUpdate to set it `in_progress` when you \
start and `completed` when it is fully done, to assign an owner, or to record dependencies (add_blocks, \
add_blocked_by); TaskList shows every task and TaskGet one task in full.";

impl Tool for TaskCreate {
    type Input = CreateInput;

    fn spec() -> ToolSpec {
        ToolSpec::new("TaskCreate", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "properties": {
                    "subject": {
                        "type": "string",
                        "description": "A brief, actionable title in the imperative, e.g. \"Add the login endpoint\"."
                    },
                    "description": {
                        "type": "string",
                        "description": "What needs to be done: the context and the acceptance criteria."
                    },
                    "metadata": {
                        "anyOf": [{"type": "object", "additionalProperties": true}, {"type": "null"}],
                        "default": null,
                        "description": "Arbitrary key-value data to attach to the task (e.g. {\"priority\": \"high\"})."
                    }
                },
                "required": ["subject", "description"]
            }))
            .concurrency_safe(true)
            .read_only(false)
            .state_injected(true)
    }

    fn check_permissions(_input: &CreateInput, _ctx: &Context) -> Decision {
        Decision::allow("TaskCreate is always allowed to be called.")
    }

    fn call(input: CreateInput, out: &mut Output) -> Result<(), ToolError> {
        let result =
            store::update(|tasks| Ok::<_, std::convert::Infallible>(tasks.create(input.clone(), time::now_iso())));
        match result {
            Ok(Ok(text)) => out.text(&text),
            Ok(Err(never)) => match never {},
            Err(e) => out.error(&format!("CreateTaskError: {e}")),
        };
        Ok(())
    }
}

export_tool!(TaskCreate);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::PermissionBehavior;

    #[test]
    fn spec_flags_and_permission() {
        let spec = TaskCreate::spec();
        assert_eq!(spec.name, "TaskCreate");
        assert!(spec.concurrency_safe && !spec.read_only && spec.state_injected && !spec.external);
        assert_eq!(spec.input_schema["type"], "object");
        let ctx = Context::default();
        let input: task_model::CreateInput = serde_json::from_str(r#"{"subject":"s","description":"d"}"#).unwrap();
        let d = TaskCreate::check_permissions(&input, &ctx);
        assert_eq!(d.behavior, PermissionBehavior::Allow);
        assert_eq!(d.message, "TaskCreate is always allowed to be called.");
    }
}
