//! The `log` interface, version-neutral: a guest's log lines, within the
//! call's log budget, each one escaped into one host log line.

use tracing::Level;

use crate::runtime::CallState;

/// Logs `message` with its `fields` (`key=value` after the message; none
/// before `toolhost:tool@0.2.0`) as one line, if the call's log budget
/// admits its bytes.
pub(crate) fn log(cx: &mut CallState, level: Level, message: &str, fields: &[(String, String)]) {
    let size = message.len() + fields.iter().map(|(k, v)| k.len() + v.len() + 2).sum::<usize>();
    if !cx.log_budget.admit(size) {
        return;
    }
    let tool = &*cx.tool;
    // One guest line is one log line: a newline or an escape sequence in
    // it could forge host log lines or drive the terminal.
    let mut line = crate::escape::escaped(message, false);
    for (key, value) in fields {
        let line = line.to_mut();
        line.push(' ');
        line.push_str(&crate::escape::escaped(key, false));
        line.push('=');
        line.push_str(&crate::escape::escaped(value, false));
    }
    match level {
        Level::TRACE => tracing::trace!(tool, "{line}"),
        Level::DEBUG => tracing::debug!(tool, "{line}"),
        Level::INFO => tracing::info!(tool, "{line}"),
        Level::WARN => tracing::warn!(tool, "{line}"),
        Level::ERROR => tracing::error!(tool, "{line}"),
    }
}
