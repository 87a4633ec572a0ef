//! The toolkit on the façade: tool groups and what a session is offered
//! (AgentScope's `_get_available_tools`, spec §11.2), and the meta tools
//! that change it (`reset_tools`) or read skills (`Skill`).

use std::sync::Arc;

use super::Toolhost;
use crate::catalog::group::{RESET_TOOLS, ToolGroups};
use crate::catalog::skill::{SKILL, Skills};
use crate::catalog::tool::{LoadError, ToolInfo};
use crate::execution::meta::{MetaTool, load_meta, meta_metadata};
use crate::state::{AgentState, StateError};
use crate::types::ToolMetadata;

/// Why the tools offered to a session could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ListToolsError {
    /// A tool could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The session's active groups could not be read.
    #[error(transparent)]
    State(#[from] StateError),
}

/// `reset_tools` over the configured groups.
struct ResetTools(Arc<ToolGroups>);

#[async_trait::async_trait]
impl MetaTool for ResetTools {
    fn metadata(&self) -> ToolMetadata {
        // Not read-only, concurrency-safe (spec §11.6: reset_tools T/F).
        meta_metadata(RESET_TOOLS, self.0.reset_tools_description(), self.0.reset_tools_schema(), false, true)
    }

    async fn run(&self, input: &serde_json::Value, state: &AgentState) -> Result<String, String> {
        self.0.reset(input, state).await
    }
}

/// `Skill` over the skills found.
struct SkillViewer(Arc<Skills>);

#[async_trait::async_trait]
impl MetaTool for SkillViewer {
    fn metadata(&self) -> ToolMetadata {
        // Read-only and concurrency-safe (spec §11.6: Skill T/T).
        meta_metadata(SKILL, self.0.description(), Skills::schema(), true, true)
    }

    async fn run(&self, input: &serde_json::Value, _state: &AgentState) -> Result<String, String> {
        // Its file reads block briefly: off the async workers.
        let (skills, input) = (self.0.clone(), input.clone());
        tokio::task::spawn_blocking(move || skills.view(&input))
            .await
            .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
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
    pub async fn available(&self, session: Option<&AgentState>) -> Result<Vec<ToolInfo>, ListToolsError> {
        let active = self.active_groups(session).await?;
        let mut tools: Vec<ToolInfo> = self
            .list()
            .await?
            .into_iter()
            .filter(|t| self.inner.groups.inactive_group(&t.name, &active).is_none())
            .collect();
        // The meta tools lead the listing, as in the reference.
        tools.sort_by_key(|t| (t.name != SKILL, t.name != RESET_TOOLS));
        Ok(tools)
    }

    /// The refusal of a call to `tool` when its group is inactive in
    /// `session` (the host's own state when `None`); `None` when the tool
    /// may be called.
    pub async fn inactive_refusal(
        &self,
        tool: &str,
        session: Option<&AgentState>,
    ) -> Result<Option<String>, StateError> {
        let Some(group) = self.inner.groups.group_of(tool) else { return Ok(None) };
        let active = self.active_groups(session).await?;
        Ok((!active.contains(&group.name)).then(|| ToolGroups::inactive_message(tool, &group.name)))
    }

    /// The active groups of `session` (the host's own state when `None`);
    /// none are read when no group is configured.
    async fn active_groups(&self, session: Option<&AgentState>) -> Result<Vec<String>, StateError> {
        if self.inner.groups.is_empty() {
            return Ok(Vec::new());
        }
        session.unwrap_or(self.state()).active_groups().await
    }
}
