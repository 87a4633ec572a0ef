//! Asking the person at the terminal about a permission request.

use std::io::{BufRead, IsTerminal, Write};

use toolhost::PermissionAnswer;
use toolhost::permission::Decision;

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

/// Asks: allow once, allow and remember the suggested rules, or deny.
pub fn ask(tool: &str, input: &serde_json::Value, decision: &Decision, remember_target: &str) -> PermissionAnswer {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\n{} wants to run with {}", line(tool), input);
    let _ = writeln!(err, "  {}", line(&decision.message));
    if let Some(reason) = &decision.reason {
        let _ = writeln!(err, "  ({})", line(reason));
    }
    let rules: Vec<String> = decision.suggested_rules.iter().map(|r| line(&r.to_string()).into_owned()).collect();
    let can_remember = !rules.is_empty() && !decision.bypass_immune;
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
    let mut text = format!("Permission denied: {} (nobody could be asked: no terminal).", line(&decision.message));
    if decision.bypass_immune {
        text.push_str(&format!(
            " This is a safety check: no allow rule can allow it; only --mode bypass skips it. ({})",
            line(decision.reason.as_deref().unwrap_or_default())
        ));
    } else if let Some(rule) = decision.suggested_rules.first() {
        let rule = line(&rule.to_string()).into_owned();
        text.push_str(&format!(" To allow calls like this, add the rule `{rule}`: --allow '{rule}' or [permissions].allow in toolhost.toml."));
    } else {
        text.push_str(&format!(
            " To allow it, add an allow rule for {tool}: --allow '{tool}' or [permissions].allow in toolhost.toml."
        ));
    }
    text
}
