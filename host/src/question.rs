//! A permission ask as a person reads it: the same words at the terminal
//! (`toolhost call`) and in an MCP elicitation form (`toolhost serve`).
//! Everything in it but toolhost's own words is someone else's text (the
//! model's input, a plugin's check message, a rule it suggests), so each
//! piece is escaped to one line ([`crate::escape::line`]).

use crate::Toolhost;
use crate::catalog::tool::Origin;
use crate::escape::line;
use crate::permission::Decision;

/// What the question adds when "allow and remember" would keep a content
/// rule of a tool that is not built in: its `match-rule` alone says what
/// the content covers, whatever the text looks like.
pub const PLUGIN_RULE_NOTE: &str = "this rule's meaning is decided by the plugin itself";

/// The pieces of one permission question, each escaped to one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionQuestion {
    /// `TOOL wants to run with INPUT`.
    pub headline: String,
    /// The decision's message, then its reason in parentheses (if any).
    pub details: Vec<String>,
    /// The rules "allow and remember" would keep; empty when it may not be
    /// offered ([`can_remember`]).
    pub rules: Vec<String>,
    /// [`PLUGIN_RULE_NOTE`] when one of [`PermissionQuestion::rules`] is a
    /// content rule whose meaning a plugin decides.
    pub note: Option<&'static str>,
}

impl PermissionQuestion {
    /// The question `decision` asks about calling `tool` with `input` on
    /// `host` (which says whether the tool is built in).
    pub fn new(host: &Toolhost, tool: &str, input: &serde_json::Value, decision: &Decision) -> Self {
        let mut details = vec![line(&decision.message).into_owned()];
        details.extend(decision.reason.as_deref().map(|reason| format!("({})", line(reason))));
        let rules: Vec<String> = if can_remember(decision) {
            decision.suggested_rules.iter().map(|r| line(&r.to_string()).into_owned()).collect()
        } else {
            Vec::new()
        };
        let plugin_decides = host.origin(tool) != Some(Origin::Builtin)
            && can_remember(decision)
            && decision.suggested_rules.iter().any(|r| !r.is_tool_level());
        Self {
            // serde_json escapes C0 controls only; `line` escapes DEL, C1 and bidi too.
            headline: format!("{} wants to run with {}", line(tool), line(&input.to_string())),
            details,
            rules,
            note: plugin_decides.then_some(PLUGIN_RULE_NOTE),
        }
    }
}

/// Whether "allow and remember" may be offered for `decision`: it has
/// rules to remember and is not a safety check (which no rule silences).
pub fn can_remember(decision: &Decision) -> bool {
    !decision.suggested_rules.is_empty() && !decision.bypass_immune
}
