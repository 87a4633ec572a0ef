//! The `log` interface: a guest's log lines, within the call's log budget,
//! each one escaped into one host log line.

use crate::runtime::CallState;
use crate::runtime::bindings::v0_1_0::log::{Host, Level};

impl Host for CallState {
    async fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        if !self.log_budget.admit(message.len()) {
            return Ok(());
        }
        let tool = &*self.tool;
        // One guest line is one log line: a newline or an escape sequence in
        // it could forge host log lines or drive the terminal.
        let message = crate::escape::escaped(&message, false);
        match level {
            Level::Trace => tracing::trace!(tool, "{message}"),
            Level::Debug => tracing::debug!(tool, "{message}"),
            Level::Info => tracing::info!(tool, "{message}"),
            Level::Warn => tracing::warn!(tool, "{message}"),
            Level::Error => tracing::error!(tool, "{message}"),
        }
        Ok(())
    }
}
