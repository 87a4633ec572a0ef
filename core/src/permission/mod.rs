//! The permission engine: decides whether one tool call may run.
//!
//! This is AgentScope 2.x's permission engine (spec §4) rebuilt host-side. It
//! is pure logic: it knows nothing about wasmtime. The runtime implements
//! [`PolicyTool`] over a tool instance and calls [`evaluate`]; the engine
//! consults the user's [`RuleSet`], the tool's read-only check, the tool's own
//! check and the [`Mode`], in the reference order:
//!
//! toolhost's own files → deny rules → ask rules → read-only fast path →
//! the tool's own check → allow rules → mode fallback.
//!
//! The first step is toolhost's own: a call whose input names one of
//! toolhost's own files ([`Context::protected`]) is denied in every mode,
//! bypass included, whatever the rules (see [`crate::protected`]).
//!
//! The answer is a [`Decision`]: allow, deny or ask, with the exact messages of
//! the reference, the step that decided ([`Source`]), the rule that matched,
//! and, on ask paths, rules to offer the user.
//!
//! Rules are written as text: `Tool` or `Tool(content)` ([`Rule::parse`]), e.g.
//! `Bash(npm run:*)`, `Edit(src/**)`, `Read(/etc/**)`.
//!
//! Submodule [`settings`]: the `[permissions]` table of `toolhost.toml`,
//! and [`settings::remember_rule`] for "allow and remember". The JSON-lines
//! protocol of `toolhost check --batch` is [`crate::check_batch`], and its
//! work queue is the host's (`toolhost::check_batch`), outside this pure
//! engine.
//!
//! `docs/permissions.md` is the user-facing description, including where
//! toolhost deliberately differs from AgentScope.

mod engine;
mod rule;

pub mod settings;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use engine::{Decision, PolicyTool, Source, ToolVerdict, evaluate};
pub use rule::{Rule, RuleSet, RuleSyntaxError, RuleSyntaxErrorKind};
pub use settings::{PermissionSettings, remember_rule};

/// The five permission modes of AgentScope (spec §1.1, §4.3).
///
/// Written in snake case (`accept_edits`); parsing also accepts kebab case
/// (`accept-edits`) and any letter case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Ask for anything that no rule, read-only check or tool check allows.
    #[default]
    Default,
    /// Like `Default`; tools themselves may allow edits inside the working
    /// directories.
    AcceptEdits,
    /// Read-only exploration: anything that is not read-only is denied, and
    /// the tool's own check and allow rules are never consulted.
    Explore,
    /// Allow everything that no deny or ask rule stops, safety asks included.
    Bypass,
    /// Nobody can be asked: every ask, safety asks included, becomes a deny.
    DontAsk,
}

impl Mode {
    /// Every mode, in the reference order.
    pub const ALL: [Mode; 5] = [Mode::Default, Mode::AcceptEdits, Mode::Explore, Mode::Bypass, Mode::DontAsk];

    /// The reference spelling (`default`, `accept_edits`, `explore`,
    /// `bypass`, `dont_ask`), as used in messages (`Mode: accept_edits`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "accept_edits",
            Mode::Explore => "explore",
            Mode::Bypass => "bypass",
            Mode::DontAsk => "dont_ask",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A permission mode name that is not one of the five modes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode `{0}`: use one of default, accept_edits, explore, bypass, dont_ask")]
pub struct ModeParseError(pub String);

impl FromStr for Mode {
    type Err = ModeParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        Mode::ALL.into_iter().find(|m| m.as_str() == norm).ok_or_else(|| ModeParseError(s.to_owned()))
    }
}

impl Serialize for Mode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a rule, a tool check or a decision says about a call (spec §1.1).
///
/// A [`Decision`] is never `Passthrough`; a tool's verdict or a rule may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Behavior {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the user.
    Ask,
    /// No opinion: let the rules and the mode decide. Rules with this
    /// behaviour are dropped when added to a [`RuleSet`].
    Passthrough,
}

impl Behavior {
    /// The wire spelling: `allow`, `deny`, `ask`, `passthrough`.
    pub fn as_str(self) -> &'static str {
        match self {
            Behavior::Allow => "allow",
            Behavior::Deny => "deny",
            Behavior::Ask => "ask",
            Behavior::Passthrough => "passthrough",
        }
    }
}

impl fmt::Display for Behavior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool may look at when it judges a call (WIT `permission-context`).
///
/// Nothing here touches the filesystem: `cwd` and `home` say what relative
/// paths and `~` mean, and `working_dirs` are absolute paths the caller has
/// already resolved (each also in its symlink-free form when that differs).
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// The active mode.
    pub mode: Mode,
    /// Absolute working directories.
    pub working_dirs: Vec<String>,
    /// The directory relative paths are resolved against.
    pub cwd: String,
    /// What `~` expands to.
    pub home: String,
    /// The tool's own settings as a JSON object (`{}` when there are none).
    pub tool_config: serde_json::Value,
    /// toolhost's own files: a call whose input names one is denied before
    /// anything else, in every mode (not sent to the tool).
    pub protected: std::sync::Arc<crate::protected::ProtectedPaths>,
}

impl Default for Context {
    /// Mode `default`, no working directories, empty `cwd` and `home`, an
    /// empty tool configuration object and no protected path.
    fn default() -> Self {
        Context {
            mode: Mode::Default,
            working_dirs: Vec::new(),
            cwd: String::new(),
            home: String::new(),
            tool_config: serde_json::Value::Object(serde_json::Map::new()),
            protected: Default::default(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
