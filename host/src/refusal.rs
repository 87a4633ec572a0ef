//! What a call says when it needed a person's answer and nobody could be
//! asked (no terminal, an MCP client without elicitation): why, and the
//! rule that would allow calls like it, or, for a safety check, that no
//! rule can. One text for every front end. The decision's message and
//! reason quote the model's input, so they are escaped to one line.

use crate::escape::line;
use crate::permission::Decision;

/// The refusal of a call of `tool` that `decision` sent to a person who
/// could not be asked: `why` says why nobody was asked ("no terminal"),
/// `rules_go` where an allow rule would go, after "add the rule `…`"
/// (empty, or " to the server's settings").
pub fn nobody_asked(tool: &str, decision: &Decision, why: &str, rules_go: &str) -> String {
    let mut text = format!("Permission denied: {} ({why}).", line(&decision.message));
    if decision.bypass_immune {
        text.push_str(&format!(
            " This is a safety check: no allow rule can allow it; only --mode bypass skips it. ({})",
            line(decision.reason.as_deref().unwrap_or_default())
        ));
    } else {
        let rule = decision.suggested_rules.first().map_or_else(|| tool.to_owned(), ToString::to_string);
        let rule = line(&rule);
        text.push_str(&format!(
            " To allow calls like this, add the rule `{rule}`{rules_go}: --allow '{rule}' or [permissions].allow \
             in toolhost.toml."
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{Behavior, Rule, Source};

    fn asked(message: &str) -> Decision {
        Decision {
            behavior: Behavior::Ask,
            message: message.into(),
            reason: None,
            bypass_immune: false,
            source: Source::ModeFallback,
            rule: None,
            read_only: false,
            tool_check: None,
            suggested_rules: Vec::new(),
        }
    }

    #[test]
    fn names_the_suggested_rule_or_the_tool_and_keeps_to_one_line() {
        let mut decision = asked("Bash wants to run `rm x`\n\u{1b}[2J");
        let text = nobody_asked("Bash", &decision, "no terminal", "");
        assert!(text.starts_with("Permission denied: Bash wants to run `rm x`\\x0a\\x1b[2J (no terminal)."), "{text}");
        assert!(text.contains("add the rule `Bash`: --allow 'Bash'"), "{text}");
        decision.suggested_rules = vec![Rule::parse("Bash(rm:*)", Behavior::Allow).unwrap()];
        let text = nobody_asked("Bash", &decision, "no terminal", " to the server's settings");
        assert!(text.contains("add the rule `Bash(rm:*)` to the server's settings: --allow 'Bash(rm:*)'"), "{text}");
        assert!(!text.contains('\n') && !text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn a_safety_check_says_no_rule_can_allow_it() {
        let mut decision = asked("writes .git/config");
        decision.bypass_immune = true;
        decision.reason = Some("a protected path".into());
        let text = nobody_asked("Write", &decision, "no terminal", "");
        assert!(text.contains("no allow rule can allow it; only --mode bypass skips it. (a protected path)"), "{text}");
        assert!(!text.contains("add the rule"), "{text}");
    }
}
