//! The `state` interface. What a tool may do with the agent state depends
//! on its grant and the call's phase ([`crate::capability::Phase`]): nothing
//! while deciding, reads (and the host-verified read cache) in a read-only
//! call, everything in a full call.
//!
//! The read cache holds only what the host itself read: `cache-file` is
//! accepted only when the content equals the file as the host reads it at
//! that moment through the tool's own scope (byte for byte, or as text with
//! its line endings normalised to `\n`, as Read records it), and
//! `cached-file` hands out an entry only for a path the tool may read.

use std::sync::Arc;

use super::bounded_message;
use crate::backend::scope::Access;
use crate::backend::{self, BackendError};
use crate::runtime::CallState;
use crate::runtime::bindings::v0_1_0::state::Host;
use crate::state::{AgentState, StateBounds};

impl CallState {
    /// The agent state, if this tool may use it here (`write`: change a
    /// value); the error says why not.
    fn state_for(&self, write: bool) -> Result<Arc<AgentState>, String> {
        self.grants.state_allowed(write)?;
        self.agent_state.clone().ok_or_else(|| self.grants.denied("state"))
    }

    /// The mtime of `path` through the backend, within the tool's scope.
    /// (Borrows only `Sync` fields across the await, so the future is `Send`.)
    fn mtime(&self, path: String) -> impl std::future::Future<Output = Result<u64, BackendError>> + Send + 'static {
        let backend = self.backend.clone();
        let grants = self.grants.clone();
        async move {
            let stat: backend::FileStat = backend.stat(&grants.fs, &path).await?;
            Ok(stat.mtime_ns)
        }
    }

    /// Reads `path` as the host, through the tool's scope: its mtime (taken
    /// first, so a change during the read makes the entry stale) and bytes,
    /// at most `max_bytes` of them.
    fn host_read(
        &self,
        path: String,
        max_bytes: u64,
    ) -> impl std::future::Future<Output = Result<(u64, Vec<u8>), BackendError>> + Send + 'static {
        let backend = self.backend.clone();
        let grants = self.grants.clone();
        async move {
            let stat = backend.stat(&grants.fs, &path).await?;
            let bytes = backend.read_file(&grants.fs, &path, max_bytes).await?;
            Ok((stat.mtime_ns, bytes))
        }
    }

    /// Checks a state value's size against `limits.max_state_value_bytes`.
    fn check_value_size(&self, key: &str, value: &str) -> Result<(), String> {
        let size = (key.len() + value.len()) as u64;
        let limit = self.call_limits.max_state_value_bytes;
        if size > limit {
            return Err(format!(
                "the value for '{key}' is {size} bytes, more than the {limit} bytes a state value may hold; store less, or raise limits.max_state_value_bytes (--max-state-value-bytes)"
            ));
        }
        Ok(())
    }

    /// How large the agent state may grow (`limits.max_state_bytes`,
    /// `limits.max_state_keys`).
    fn state_bounds(&self) -> StateBounds {
        StateBounds { max_bytes: self.call_limits.max_state_bytes, max_keys: self.call_limits.max_state_keys }
    }
}

/// Whether `content` is what the host read (`bytes`): the same bytes, or
/// the same text (invalid UTF-8 replaced) with `\r\n` and lone `\r` as `\n`.
fn is_host_read(content: &str, bytes: &[u8]) -> bool {
    if content.as_bytes() == bytes {
        return true;
    }
    let text = String::from_utf8_lossy(bytes);
    text == content || (text.contains('\r') && text.replace("\r\n", "\n").replace('\r', "\n") == content)
}

impl Host for CallState {
    async fn cache_file(&mut self, path: String, content: String) -> wasmtime::Result<()> {
        let Ok(state) = self.state_for(false) else { return Ok(()) };
        // A file that cannot be read is not cached (as AgentScope): the next
        // write then requires a fresh read.
        // A file that holds `content` has at most twice its bytes (`\r\n`
        // read as `\n`): a larger one is not read at all.
        let max = (content.len() as u64).saturating_mul(2);
        match self.host_read(self.absolute(&path), max).await {
            Ok((mtime, bytes)) if is_host_read(&content, &bytes) => state.cache_file(&path, mtime, content),
            Ok(_) => tracing::warn!(
                tool = &*self.tool,
                "cache-file refused for {path}: the content given is not what the file holds"
            ),
            Err(e) => tracing::debug!(tool = &*self.tool, "cache-file skipped for {path}: {e}"),
        }
        Ok(())
    }

    async fn cached_file(&mut self, path: String) -> wasmtime::Result<Option<String>> {
        let Ok(state) = self.state_for(false) else { return Ok(None) };
        match self.mtime(self.absolute(&path)).await {
            Ok(mtime) => Ok(state.cached_file(&path, Some(mtime))),
            // Gone: the entry is stale and dropped.
            Err(BackendError::NotFound(_)) => Ok(state.cached_file(&path, None)),
            // Outside this tool's read grant (or unreadable): neither shown nor dropped.
            Err(_) => Ok(None),
        }
    }

    async fn forget_file(&mut self, path: String) -> wasmtime::Result<()> {
        if let Ok(state) = self.state_for(false)
            && self.grants.fs.locate(&self.absolute(&path), Access::Read).is_ok()
        {
            state.forget_file(&path);
        }
        Ok(())
    }

    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, String>> {
        Ok(self.state_for(false).map(|state| state.get(&key).map(|v| v.to_string())).map_err(bounded_message))
    }

    async fn compare_and_set(
        &mut self,
        key: String,
        expected: Option<String>,
        value: String,
    ) -> wasmtime::Result<Result<bool, String>> {
        Ok(self.compare_and_set_unbounded(key, expected, value).map_err(bounded_message))
    }

    async fn set(&mut self, key: String, value: String) -> wasmtime::Result<Result<(), String>> {
        Ok(self.set_unbounded(key, value).map_err(bounded_message))
    }
}

impl CallState {
    /// `compare-and-set`, its error text not yet cut for the guest.
    fn compare_and_set_unbounded(&self, key: String, expected: Option<String>, value: String) -> Result<bool, String> {
        let state = self.state_for(true)?;
        self.check_value_size(&key, &value)?;
        let expected = expected
            .as_deref()
            .map(serde_json::from_str::<serde_json::Value>)
            .transpose()
            .map_err(|e| format!("the expected value for '{key}' is not JSON: {e}"))?;
        let json = serde_json::from_str(&value).map_err(|e| format!("the value for '{key}' is not JSON: {e}"))?;
        state.compare_and_set(&key, expected.as_ref(), json, self.state_bounds()).map_err(|e| e.to_string())
    }

    /// `set`, its error text not yet cut for the guest.
    fn set_unbounded(&self, key: String, value: String) -> Result<(), String> {
        let state = self.state_for(true)?;
        self.check_value_size(&key, &value)?;
        let json = serde_json::from_str(&value).map_err(|e| format!("the value for '{key}' is not JSON: {e}"))?;
        state.set(&key, json, self.state_bounds()).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::is_host_read;

    #[test]
    fn only_what_the_file_holds_counts_as_read() {
        assert!(is_host_read("a\nb", b"a\nb"));
        assert!(is_host_read("a\nb\n", b"a\r\nb\r"), "line endings normalised as Read does");
        assert!(!is_host_read("fake base", b"real content"));
        assert!(!is_host_read("a\r\nb", b"a\nb"));
    }
}
