//! Asking the person at the terminal about a permission request.

use std::io::{BufRead, IsTerminal, Write};

use toolhost::permission::Decision;
use toolhost::question::PermissionQuestion;
use toolhost::{PermissionAnswer, PermissionRequest};

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
pub fn ask(host: &toolhost::Toolhost, req: &PermissionRequest, remember_target: &str) -> PermissionAnswer {
    let question = PermissionQuestion::new(host, &req.tool, &req.input, &req.decision);
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\n{}", question.headline);
    for detail in &question.details {
        let _ = writeln!(err, "  {detail}");
    }
    if let Some(note) = question.note {
        let _ = writeln!(err, "  note: {note}");
    }
    let can_remember = !question.rules.is_empty();
    if can_remember {
        let rules = question.rules.join(", ");
        let _ = write!(err, "[y] allow once  [a] allow and remember {rules} in {remember_target}  [n] deny: ");
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
        "a" | "A" if can_remember => PermissionAnswer::AllowAndRemember(req.decision.suggested_rules.clone()),
        _ => PermissionAnswer::Deny,
    }
}

/// What to say when nobody can be asked.
pub fn not_asked(tool: &str, decision: &Decision) -> String {
    toolhost::refusal::nobody_asked(tool, decision, "nobody could be asked: no terminal", "")
}
