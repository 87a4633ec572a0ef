//! Asking the person at the terminal about a permission request.

use std::io::{BufRead, IsTerminal, Write};

use toolhost::PermissionAnswer;
use toolhost::permission::Decision;
use toolhost::tool::Origin;

use super::shown::line;

/// Whether a person can be asked (stdin and stderr are terminals).
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Where "allow and remember" writes, as the prompt names it (absolute).
pub fn remember_target(host: &toolhost::Toolhost) -> String {
    match host.settings_path() {
        Some(path) => path.display().to_string(),
        None => "memory only (no settings file)".to_string(),
    }
}

/// What the prompt adds when "allow and remember" would keep a content rule
/// of a tool that is not built in: its `match-rule` alone says what the
/// content covers, whatever the text looks like.
pub const PLUGIN_RULE_NOTE: &str = "this rule's meaning is decided by the plugin itself";

/// Whether a content rule of `tool` means what toolhost's documentation
/// says (a built-in), rather than whatever the plugin's `match-rule` decides.
pub fn rules_have_documented_meaning(host: &toolhost::Toolhost, tool: &str) -> bool {
    host.origin(tool) == Some(Origin::Builtin)
}

/// Asks: allow once, allow and remember the suggested rules, or deny.
/// `documented` is [`rules_have_documented_meaning`] for the tool.
pub fn ask(
    tool: &str,
    input: &serde_json::Value,
    decision: &Decision,
    remember_target: &str,
    documented: bool,
) -> PermissionAnswer {
    let mut err = std::io::stderr();
    // serde_json escapes C0 controls only; `line` escapes DEL, C1 and bidi too.
    let _ = writeln!(err, "\n{} wants to run with {}", line(tool), line(&input.to_string()));
    let _ = writeln!(err, "  {}", line(&decision.message));
    if let Some(reason) = &decision.reason {
        let _ = writeln!(err, "  ({})", line(reason));
    }
    let rules: Vec<String> = decision.suggested_rules.iter().map(|r| line(&r.to_string()).into_owned()).collect();
    let can_remember = !rules.is_empty() && !decision.bypass_immune;
    if can_remember && !documented && decision.suggested_rules.iter().any(|r| !r.is_tool_level()) {
        let _ = writeln!(err, "  note: {PLUGIN_RULE_NOTE}");
    }
    if can_remember {
        let _ =
            write!(err, "[y] allow once  [a] allow and remember {} in {remember_target}  [n] deny: ", rules.join(", "));
    } else {
        let _ = write!(err, "[y] allow once  [n] deny: ");
    }
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return PermissionAnswer::Deny;
    }
    match line.trim() {
        "y" | "Y" | "yes" => PermissionAnswer::AllowOnce,
        "a" | "A" if can_remember => PermissionAnswer::AllowAndRemember(decision.suggested_rules.clone()),
        _ => PermissionAnswer::Deny,
    }
}

/// What to say when nobody can be asked.
pub fn not_asked(tool: &str, decision: &Decision) -> String {
    toolhost::refusal::nobody_asked(tool, decision, "nobody could be asked: no terminal", "")
}
