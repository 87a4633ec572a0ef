//! The toolkit on the façade: tool groups and what a session is offered
//! (AgentScope's `_get_available_tools`, spec §11.2), and the meta tools
//! that change it (`reset_tools`) or read skills (`Skill`).

use std::sync::Arc;

use super::catalog::Catalog;
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

impl Catalog {
    /// Registers `Skill` when a skill was found and `reset_tools` when a
    /// group besides `basic` is configured.
    pub(super) fn register_meta_tools(&self) -> Result<(), LoadError> {
        let skills = self.skills.clone();
        if !skills.is_empty() {
            let label = format!("the meta tool {SKILL} ([skills] in the settings)");
            self.insert_loaded(load_meta(Arc::new(SkillViewer(skills)))?, &label)?;
        }
        let groups = self.groups.clone();
        if !groups.is_empty() {
            let label = format!("the meta tool {RESET_TOOLS} ([groups] in the settings)");
            self.insert_loaded(load_meta(Arc::new(ResetTools(groups)))?, &label)?;
        }
        Ok(())
    }

    /// The tools offered to a session whose agent state is `state`: the
    /// meta tools first, then every tool of `basic` and of the session's
    /// active groups, by name. Loads nothing, like [`Catalog::list`].
    pub async fn available(&self, state: &AgentState) -> Result<Vec<ToolInfo>, ListToolsError> {
        let active = self.active_groups(state).await?;
        let mut tools: Vec<ToolInfo> =
            self.list()?.into_iter().filter(|t| self.groups.inactive_group(&t.name, &active).is_none()).collect();
        // The meta tools lead the listing, as in the reference.
        tools.sort_by_key(|t| (t.name != SKILL, t.name != RESET_TOOLS));
        Ok(tools)
    }

    /// The refusal of a call to `tool` when its group is inactive in the
    /// session whose agent state is `state`; `None` when the tool may be
    /// called.
    pub async fn inactive_refusal(&self, tool: &str, state: &AgentState) -> Result<Option<String>, StateError> {
        let Some(group) = self.groups.group_of(tool) else { return Ok(None) };
        let active = self.active_groups(state).await?;
        Ok((!active.contains(&group.name)).then(|| ToolGroups::inactive_message(tool, &group.name)))
    }

    /// The active groups in `state`; none are read when no group is
    /// configured.
    async fn active_groups(&self, state: &AgentState) -> Result<Vec<String>, StateError> {
        if self.groups.is_empty() {
            return Ok(Vec::new());
        }
        state.active_groups().await
    }
}
