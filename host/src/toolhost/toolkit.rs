//! The toolkit on the façade: tool groups and what a session is offered
//! (AgentScope's `_get_available_tools`, spec §11.2), and the meta tools
//! that change it (`reset_tools`) or read skills (`Skill`).

use std::sync::Arc;

use super::Toolhost;
use crate::catalog::group::{RESET_TOOLS, ToolGroups};
use crate::catalog::skill::{SKILL, Skills};
use crate::catalog::tool::{LoadError, ToolInfo};
use crate::execution::meta::{MetaTool, load_meta, meta_metadata};
use crate::state::AgentState;
use crate::types::ToolMetadata;

/// `reset_tools` over the configured groups.
struct ResetTools(Arc<ToolGroups>);

impl MetaTool for ResetTools {
    fn metadata(&self) -> ToolMetadata {
        // Not read-only, concurrency-safe (spec §11.6: reset_tools T/F).
        meta_metadata(RESET_TOOLS, self.0.reset_tools_description(), self.0.reset_tools_schema(), false, true)
    }

    fn run(&self, input: &serde_json::Value, state: &AgentState) -> Result<String, String> {
        self.0.reset(input, state)
    }
}

/// `Skill` over the skills found.
struct SkillViewer(Arc<Skills>);

impl MetaTool for SkillViewer {
    fn metadata(&self) -> ToolMetadata {
        // Read-only and concurrency-safe (spec §11.6: Skill T/T).
        meta_metadata(SKILL, self.0.description(), Skills::schema(), true, true)
    }

    fn run(&self, input: &serde_json::Value, _state: &AgentState) -> Result<String, String> {
        self.0.view(input)
    }
}

impl Toolhost {
    /// Registers `Skill` when a skill was found and `reset_tools` when a
    /// group besides `basic` is configured.
    pub(super) fn register_meta_tools(&self) -> Result<(), LoadError> {
        let skills = self.inner.skills.clone();
        if !skills.is_empty() {
            let label = format!("the meta tool {SKILL} ([skills] in the settings)");
            self.insert_loaded(load_meta(Arc::new(SkillViewer(skills)))?, &label)?;
        }
        let groups = self.inner.groups.clone();
        if !groups.is_empty() {
            let label = format!("the meta tool {RESET_TOOLS} ([groups] in the settings)");
            self.insert_loaded(load_meta(Arc::new(ResetTools(groups)))?, &label)?;
        }
        Ok(())
    }

    /// The skills found in `[skills] dirs`.
    pub fn skills(&self) -> &Skills {
        &self.inner.skills
    }

    /// What was wrong with each folder of `[skills] dirs` that is not a
    /// skill (each names the folder and the fix); those folders are
    /// skipped.
    pub fn skill_problems(&self) -> &[String] {
        self.inner.skills.problems()
    }

    /// The configured tool groups (empty when none is).
    pub fn groups(&self) -> &ToolGroups {
        &self.inner.groups
    }

    /// The tools offered to a session whose agent state is `session` (the
    /// host's own state when `None`): the meta tools first, then every tool
    /// of `basic` and of the session's active groups, by name. Loads
    /// nothing, like [`Toolhost::list`].
    pub async fn available(&self, session: Option<&AgentState>) -> Result<Vec<ToolInfo>, LoadError> {
        let state = session.unwrap_or(self.state());
        let mut tools: Vec<ToolInfo> = self
            .list()
            .await?
            .into_iter()
            .filter(|t| self.inner.groups.inactive_group(&t.name, state).is_none())
            .collect();
        // The meta tools lead the listing, as in the reference.
        tools.sort_by_key(|t| (t.name != SKILL, t.name != RESET_TOOLS));
        Ok(tools)
    }

    /// The refusal of a call to `tool` when its group is inactive in
    /// `session` (the host's own state when `None`); `None` when the tool
    /// may be called.
    pub fn inactive_refusal(&self, tool: &str, session: Option<&AgentState>) -> Option<String> {
        let state = session.unwrap_or(self.state());
        let group = self.inner.groups.inactive_group(tool, state)?;
        Some(ToolGroups::inactive_message(tool, &group.name))
    }
}
