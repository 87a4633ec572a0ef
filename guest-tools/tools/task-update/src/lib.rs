//! `TaskUpdate`: changes or deletes a task of the agent's task list
//! (AgentScope's TaskUpdate, spec §7, with toolhost's safer dependency and
//! transition rules). See the `task-model` crate for the exact texts.

use serde_json::json;
use task_model::{UpdateInput, store};
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

/// The TaskUpdate tool.
pub struct TaskUpdate;

const DESCRIPTION: &str = "Updates a task of the task list: its subject, description, owner, status or \
metadata, or its dependencies. Set status `in_progress` when you start a task and `completed` only when \
it is fully done (tests pass, nothing left); `deleted` removes the task and every dependency on it; \
`pending` reopens it. A task cannot become `in_progress` or `completed` while a task blocking it is not \
completed. `add_blocks` lists tasks that cannot start until this one is done; `add_blocked_by` lists \
tasks that must be done first; ids must exist and dependencies may not form a cycle. `metadata` keys are \
merged into the task's metadata; a null value removes the key. Omitted or null fields are left as they \
are. An update that is refused changes nothing.";

fn nullable(schema: serde_json::Value, description: &str) -> serde_json::Value {
    json!({"anyOf": [schema, {"type": "null"}], "default": null, "description": description})
}

impl Tool for TaskUpdate {
    type Input = UpdateInput;

    fn spec() -> ToolSpec {
        let ids = json!({"type": "array", "items": {"type": "string"}});
        ToolSpec::new("TaskUpdate", DESCRIPTION)
            .schema(json!({
                "type": "object",
                "properties": {
                    "task_id": {"type": "string", "description": "The id of the task to update."},
                    "subject": nullable(json!({"type": "string"}), "A new title (an empty string is ignored)."),
                    "description": nullable(json!({"type": "string"}), "A new description."),
                    "add_blocks": nullable(ids.clone(), "Ids of tasks that cannot start until this one is completed."),
                    "status": nullable(
                        json!({"type": "string", "enum": ["pending", "in_progress", "completed", "deleted"]}),
                        "The new status; `deleted` removes the task."
                    ),
                    "add_blocked_by": nullable(ids, "Ids of tasks that must be completed before this one."),
                    "owner": nullable(json!({"type": "string"}), "Who works on the task."),
                    "metadata": nullable(
                        json!({"type": "object", "additionalProperties": true}),
                        "Keys to merge into the task's metadata; a null value removes that key."
                    )
                },
                "required": ["task_id"]
            }))
            .concurrency_safe(true)
            .read_only(false)
            .state_injected(true)
    }

    fn check_permissions(_input: &UpdateInput, _ctx: &Context) -> Decision {
        Decision::allow("TaskUpdate is always allowed to be called.")
    }

    fn call(input: UpdateInput, out: &mut Output) -> Result<(), ToolError> {
        match store::update(|tasks| tasks.update(input.clone())) {
            Ok(Ok(text)) => out.text(&text),
            Ok(Err(e)) => out.error(&e.to_string()),
            Err(e @ store::StoreError::Corrupt(_)) => out.error(&format!("TaskStateError: {e}")),
            Err(e) => out.error(&format!("TaskUpdateError: {e}")),
        };
        Ok(())
    }
}

export_tool!(TaskUpdate);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::PermissionBehavior;

    #[test]
    fn spec_flags_and_permission() {
        let spec = TaskUpdate::spec();
        assert_eq!(spec.name, "TaskUpdate");
        assert!(spec.concurrency_safe && !spec.read_only && spec.state_injected && !spec.external);
        assert_eq!(spec.input_schema["type"], "object");
        let ctx = Context::default();
        let input: task_model::UpdateInput = serde_json::from_str(r#"{"task_id":"1"}"#).unwrap();
        let d = TaskUpdate::check_permissions(&input, &ctx);
        assert_eq!(d.behavior, PermissionBehavior::Allow);
        assert_eq!(d.message, "TaskUpdate is always allowed to be called.");
    }
}

#[cfg(test)]
mod schema_tests {
    use super::*;

    #[test]
    fn optional_fields_are_nullable_with_null_default() {
        let schema = TaskUpdate::spec().input_schema;
        assert_eq!(schema["required"], json!(["task_id"]));
        for field in ["subject", "description", "add_blocks", "status", "add_blocked_by", "owner", "metadata"] {
            let p = &schema["properties"][field];
            assert_eq!(p["anyOf"][1], json!({"type": "null"}), "{field}");
            assert_eq!(p["default"], serde_json::Value::Null, "{field}");
        }
        assert_eq!(
            schema["properties"]["status"]["anyOf"][0]["enum"],
            json!(["pending", "in_progress", "completed", "deleted"])
        );
    }
}
