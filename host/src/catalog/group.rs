//! Tool groups and the meta tool `reset_tools` (AgentScope's `ToolGroup`
//! and `Toolkit.reset_tools`, spec §11.1–11.3 and §11.7): which tools the
//! model is offered in a session, and what `reset_tools` takes and answers.
//!
//! Every tool in no `[groups.NAME]` is in the group `basic`, always active.
//! The other groups are off until the model turns them on with
//! `reset_tools`, whose input is the final state: one boolean per group,
//! `true` for the groups to have on afterwards. The active set lives in the
//! session's agent state ([`AgentState::active_groups`]), so two sessions
//! of one host see different listings.

use std::collections::BTreeMap;

use crate::settings::GroupSettings;
use crate::state::AgentState;

/// The always-active group of every tool not put in another.
pub const BASIC: &str = "basic";
/// The meta tool's name.
pub const RESET_TOOLS: &str = "reset_tools";
/// Its permission message (the reference's, spec §11.7).
pub const META_ALLOWED: &str = "The meta tool is always allowed to be called.";

/// One group besides `basic`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolGroup {
    /// Its name (a `reset_tools` input key).
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Told to the model when it is activated.
    pub instructions: Option<String>,
    /// Its tools' names.
    pub tools: Vec<String>,
}

/// The configured groups, validated. Empty when no group is configured
/// (then `reset_tools` is not registered and every tool is offered).
#[derive(Debug, Clone, Default)]
pub struct ToolGroups {
    groups: Vec<ToolGroup>,
    /// Tool name → index of its group.
    group_of: BTreeMap<String, usize>,
}

impl ToolGroups {
    /// The groups of `[groups.NAME]` tables, in name order. Refused: a
    /// group named `basic` (every ungrouped tool is in it), a name or tool
    /// name outside the name rule, a group without a description, a tool
    /// in two groups, and `reset_tools` in any group.
    pub fn from_settings(settings: &BTreeMap<String, GroupSettings>) -> Result<Self, String> {
        let mut groups = Self::default();
        for (name, group) in settings {
            let at = format!("[groups.{name}]");
            if name == BASIC {
                return Err(format!(
                    "{at}: `basic` is the always-active group of every tool in no other group; give this group another name"
                ));
            }
            super::name::check_name("group", name).map_err(|e| format!("{at}: {e}"))?;
            if group.description.trim().is_empty() {
                return Err(format!(
                    "{at} has no description; the model reads it to decide when to activate the group (description = \"...\")"
                ));
            }
            for tool in &group.tools {
                super::name::check_name("tool", tool).map_err(|e| format!("{at} tools: {e}"))?;
                if tool == RESET_TOOLS {
                    return Err(format!("{at}: `reset_tools` is always offered; it cannot be in a group"));
                }
                if let Some(&other) = groups.group_of.get(tool) {
                    return Err(format!(
                        "{at}: tool '{tool}' is already in [groups.{}]; a tool belongs to one group",
                        groups.groups[other].name
                    ));
                }
                groups.group_of.insert(tool.clone(), groups.groups.len());
            }
            groups.groups.push(ToolGroup {
                name: name.clone(),
                description: group.description.clone(),
                instructions: group.instructions.clone().filter(|i| !i.trim().is_empty()),
                tools: group.tools.clone(),
            });
        }
        Ok(groups)
    }

    /// Whether any group besides `basic` exists (then `reset_tools` is
    /// registered).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The groups besides `basic`, in registration (name) order.
    pub fn groups(&self) -> &[ToolGroup] {
        &self.groups
    }

    /// The group `tool` is in, `None` for `basic`.
    pub fn group_of(&self, tool: &str) -> Option<&ToolGroup> {
        self.group_of.get(tool).map(|&i| &self.groups[i])
    }

    /// The group of `tool` when it is not among the `active` groups (so
    /// the tool may not be called nor offered); `None` when the tool is
    /// offered.
    pub fn inactive_group(&self, tool: &str, active: &[String]) -> Option<&ToolGroup> {
        let group = self.group_of(tool)?;
        (!active.contains(&group.name)).then_some(group)
    }

    /// The refusal of a call to a tool of an inactive group (the reference's
    /// text, which names `reset_tools`).
    pub fn inactive_message(tool: &str, group: &str) -> String {
        format!(
            "ToolGroupInactiveError: The tool '{tool}' in group '{group}' is currently inactive. You should first \
             activate the group by calling the '{RESET_TOOLS}' tool."
        )
    }

    /// `reset_tools`' description.
    pub fn reset_tools_description(&self) -> String {
        "Activate or deactivate tool groups. The input is the final state: set a group to true to have its tools \
         offered from now on, to false (or leave it out) to have them removed. The answer lists the active groups \
         and their instructions."
            .to_string()
    }

    /// `reset_tools`' input schema: one boolean per group, its description
    /// the group's, `false` by default, none required.
    pub fn reset_tools_schema(&self) -> serde_json::Value {
        let properties: serde_json::Map<String, serde_json::Value> = self
            .groups
            .iter()
            .map(|g| {
                let field = serde_json::json!({"type": "boolean", "default": false, "description": g.description});
                (g.name.clone(), field)
            })
            .collect();
        serde_json::json!({"type": "object", "properties": properties})
    }

    /// Runs `reset_tools` on `state`: the groups set to `true` in `input`
    /// become the active set (in input order), and the answer lists them
    /// with their instructions. An unknown key or a non-boolean value
    /// changes nothing and is an error naming it, as does a state store
    /// that cannot keep the change.
    pub async fn reset(&self, input: &serde_json::Value, state: &AgentState) -> Result<String, String> {
        let object = input.as_object().ok_or_else(|| "Invalid arguments: the input must be an object".to_string())?;
        let unknown: Vec<&str> =
            object.keys().map(String::as_str).filter(|k| !self.groups.iter().any(|g| g.name == *k)).collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
            return Err(format!(
                "Invalid group name(s): {}. The current available groups are: {}",
                unknown.join(", "),
                known.join(", ")
            ));
        }
        let mut active = Vec::new();
        for (key, value) in object {
            match value {
                serde_json::Value::Bool(true) => active.push(key.clone()),
                serde_json::Value::Bool(false) => {}
                other => {
                    return Err(format!(
                        "Invalid arguments: the argument '{key}' should be a bool value, but got {}.",
                        json_type(other)
                    ));
                }
            }
        }
        state.set_active_groups(active.clone()).await.map_err(|e| e.to_string())?;
        Ok(self.activation_text(&active))
    }

    /// What `reset_tools` answers for the active set `active`.
    pub fn activation_text(&self, active: &[String]) -> String {
        let on: Vec<&ToolGroup> = self.groups.iter().filter(|g| active.contains(&g.name)).collect();
        if on.is_empty() {
            return "All tool groups are currently deactivated.".to_string();
        }
        let names: Vec<&str> = on.iter().map(|g| g.name.as_str()).collect();
        let mut text = format!("The currently activated tool group(s): {}.", names.join(", "));
        let with_instructions: Vec<(&str, &str)> =
            on.iter().filter_map(|g| g.instructions.as_deref().map(|i| (g.name.as_str(), i))).collect();
        if !with_instructions.is_empty() {
            text.push_str(
                "\n<tool-instructions>\nFollow these instructions when you use the tools of the activated groups:\n",
            );
            for (name, instructions) in with_instructions {
                text.push_str(&format!("<group name=\"{name}\">{instructions}</group>\n"));
            }
            text.push_str("</tool-instructions>");
        }
        text
    }
}

/// A JSON value's type as the error names it.
fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn groups() -> ToolGroups {
        let mut s = BTreeMap::new();
        let g = |d: &str, i: Option<&str>, t: &[&str]| GroupSettings {
            description: d.into(),
            instructions: i.map(str::to_string),
            tools: t.iter().map(|t| t.to_string()).collect(),
        };
        s.insert("group_1".to_string(), g("first", None, &["tool_1"]));
        s.insert("group_2".to_string(), g("second", Some("Use tool_2 carefully."), &["tool_2"]));
        ToolGroups::from_settings(&s).unwrap()
    }

    #[test]
    fn the_schema_has_one_boolean_per_group() {
        let schema = groups().reset_tools_schema();
        assert_eq!(
            schema["properties"]["group_1"],
            json!({"type": "boolean", "default": false, "description": "first"})
        );
        assert_eq!(schema["properties"].as_object().unwrap().len(), 2);
        assert!(schema.get("required").is_none());
    }

    #[tokio::test]
    async fn the_input_is_the_final_state() {
        let (g, state) = (groups(), AgentState::new());
        let text = g.reset(&json!({"group_2": true}), &state).await.unwrap();
        assert!(text.starts_with("The currently activated tool group(s): group_2."), "{text}");
        assert!(text.contains("<group name=\"group_2\">Use tool_2 carefully.</group>"), "{text}");
        let active = state.active_groups().await.unwrap();
        assert!(g.inactive_group("tool_1", &active).is_some() && g.inactive_group("tool_2", &active).is_none());
        let text = g.reset(&json!({"group_1": true, "group_2": true}), &state).await.unwrap();
        assert!(text.starts_with("The currently activated tool group(s): group_1, group_2."), "{text}");
        assert_eq!(g.reset(&json!({}), &state).await.unwrap(), "All tool groups are currently deactivated.");
        let active = state.active_groups().await.unwrap();
        assert!(g.inactive_group("tool_2", &active).is_some());
        assert!(g.inactive_group("Bash", &active).is_none(), "basic is always active");
    }

    #[tokio::test]
    async fn bad_input_changes_nothing() {
        let (g, state) = (groups(), AgentState::new());
        g.reset(&json!({"group_1": true}), &state).await.unwrap();
        let e = g.reset(&json!({"nope": true, "group_2": true}), &state).await.unwrap_err();
        assert_eq!(e, "Invalid group name(s): nope. The current available groups are: group_1, group_2");
        let e = g.reset(&json!({"group_2": "yes"}), &state).await.unwrap_err();
        assert!(e.contains("'group_2' should be a bool value, but got string"), "{e}");
        assert_eq!(state.active_groups().await.unwrap(), vec!["group_1".to_string()]);
    }

    #[test]
    fn bad_groups_are_refused_naming_the_table() {
        let one = |name: &str, tools: &[&str]| {
            let settings = GroupSettings {
                description: "d".into(),
                tools: tools.iter().map(|t| t.to_string()).collect(),
                ..Default::default()
            };
            BTreeMap::from([(name.to_string(), settings)])
        };
        assert!(ToolGroups::from_settings(&one("basic", &[])).unwrap_err().contains("[groups.basic]"));
        assert!(ToolGroups::from_settings(&one("a b", &[])).unwrap_err().contains("group name"));
        assert!(ToolGroups::from_settings(&one("g", &["reset_tools"])).unwrap_err().contains("always offered"));
        let mut two = one("a", &["X"]);
        two.extend(one("b", &["X"]));
        assert!(ToolGroups::from_settings(&two).unwrap_err().contains("already in [groups.a]"));
        let mut none = one("g", &[]);
        none.get_mut("g").unwrap().description = " ".into();
        assert!(ToolGroups::from_settings(&none).unwrap_err().contains("no description"));
    }
}
