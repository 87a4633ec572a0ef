//! The `state` interface, version-neutral. What a tool may do with the agent state depends
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
use crate::state::{AgentState, CachedFile, ReadForm, StateBounds, file_digest};

impl CallState {
    /// The agent state, if this tool may use it here (`write`: change a
    /// value); the error says why not.
    fn state_for(&self, write: bool) -> Result<Arc<AgentState>, String> {
        self.grants.state_allowed(write)?;
        self.agent_state.clone().ok_or_else(|| self.grants.denied("state"))
    }

    /// `path`'s metadata through the backend, within the tool's scope.
    /// (Borrows only `Sync` fields across the await, so the future is `Send`.)
    fn stat(
        &self,
        path: String,
    ) -> impl std::future::Future<Output = Result<backend::FileStat, BackendError>> + Send + 'static {
        let backend = self.backend.clone();
        let grants = self.grants.clone();
        async move { backend.stat(&grants.fs, &path).await }
    }

    /// At most `max_bytes` of `path` through the backend, within the
    /// tool's scope.
    fn read_bytes(
        &self,
        path: String,
        max_bytes: u64,
    ) -> impl std::future::Future<Output = Result<Vec<u8>, BackendError>> + Send + 'static {
        let backend = self.backend.clone();
        let grants = self.grants.clone();
        async move { backend.read_file(&grants.fs, &path, max_bytes).await }
    }

    /// Reads `path` as the host, through the tool's scope: its mtime (taken
    /// first, so a change during the read makes the entry stale) and bytes,
    /// at most `max_bytes` of them.
    fn host_read(
        &self,
        path: String,
        max_bytes: u64,
    ) -> impl std::future::Future<Output = Result<(u64, Vec<u8>), BackendError>> + Send + 'static {
        let (stat, read) = (self.stat(path.clone()), self.read_bytes(path, max_bytes));
        async move {
            let stat = stat.await?;
            Ok((stat.mtime_ns, read.await?))
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

/// Records `path` as read with `content`, if the host reads that content
/// there now through the tool's scope.
pub(crate) async fn cache_file(cx: &mut CallState, path: String, content: &str) {
    let Ok(state) = cx.state_for(false) else { return };
    // A file that cannot be read is not cached (as AgentScope): the next
    // write then requires a fresh read.
    // A file that holds `content` has at most twice its bytes (`\r\n`
    // read as `\n`): a larger one is not read at all.
    let max = (content.len() as u64).saturating_mul(2);
    match cx.host_read(cx.absolute(&path), max).await {
        Ok((mtime_ns, bytes)) => match ReadForm::of(content, &bytes) {
            Some(form) => {
                let entry = CachedFile {
                    path: path.clone(),
                    mtime_ns,
                    size: bytes.len() as u64,
                    sha256: file_digest(&bytes),
                    form,
                };
                // No error channel here: a store that cannot record it
                // leaves the file unread, and the next write asks for
                // a fresh Read.
                if let Err(e) = state.cache_file(entry).await {
                    tracing::warn!(tool = &*cx.tool, "cache-file not recorded for {path}: {e}");
                }
            }
            None => tracing::warn!(
                tool = &*cx.tool,
                "cache-file refused for {path}: the content given is not what the file holds"
            ),
        },
        Err(e) => tracing::debug!(tool = &*cx.tool, "cache-file skipped for {path}: {e}"),
    }
}

/// The content recorded for `path`, while the file is still what was read
/// and the tool may read it.
pub(crate) async fn cached_file(cx: &mut CallState, path: &str) -> Option<String> {
    let Ok(state) = cx.state_for(false) else { return None };
    let Ok(Some(entry)) = state.cached_file(path).await else { return None };
    // The store keeps no content: the file is read again through this
    // tool's scope and handed out only while it is what was read.
    let stat = cx.stat(cx.absolute(path)).await;
    let unchanged = match stat {
        Ok(stat) if stat.mtime_ns == entry.mtime_ns && stat.size == entry.size => {
            match cx.read_bytes(cx.absolute(path), entry.size).await {
                Ok(bytes) if file_digest(&bytes) == entry.sha256 => return Some(entry.form.content(&bytes)),
                Ok(_) => false,
                Err(BackendError::NotFound(_)) => false,
                Err(_) => return None,
            }
        }
        Ok(_) | Err(BackendError::NotFound(_)) => false,
        // Outside this tool's read grant (or unreadable): neither shown nor dropped.
        Err(_) => return None,
    };
    if !unchanged {
        // Changed or gone: the entry is stale and dropped.
        let _ = state.forget_file(path).await;
    }
    None
}

/// Drops what is recorded for `path`, if the tool may read it.
pub(crate) async fn forget_file(cx: &mut CallState, path: &str) {
    if let Ok(state) = cx.state_for(false)
        && cx.grants.fs.locate(&cx.absolute(path), Access::Read).is_ok()
    {
        let _ = state.forget_file(path).await;
    }
}

/// A state value as JSON text; the error, cut for the guest, says why not.
pub(crate) async fn get(cx: &mut CallState, key: &str) -> Result<Option<String>, String> {
    let got = match cx.state_for(false) {
        Ok(state) => state.get(key).await.map(|v| v.map(|v| v.to_string())).map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    got.map_err(bounded_message)
}

/// Sets `key` to `value` if it holds `expected` (`None`: absent): whether
/// it did; the error, cut for the guest, says why not.
pub(crate) async fn compare_and_set(
    cx: &mut CallState,
    key: String,
    expected: Option<String>,
    value: String,
) -> Result<bool, String> {
    cx.compare_and_set_unbounded(key, expected, value).await.map_err(bounded_message)
}

/// Sets `key` to `value`; the error, cut for the guest, says why not.
pub(crate) async fn set(cx: &mut CallState, key: String, value: String) -> Result<(), String> {
    cx.set_unbounded(key, value).await.map_err(bounded_message)
}

impl CallState {
    /// `compare-and-set`, its error text not yet cut for the guest. (The
    /// checks are made before the first await: the future holds only the
    /// state, so it is `Send`.)
    fn compare_and_set_unbounded(
        &self,
        key: String,
        expected: Option<String>,
        value: String,
    ) -> impl std::future::Future<Output = Result<bool, String>> + Send + 'static {
        let checked = (|| {
            let state = self.state_for(true)?;
            self.check_value_size(&key, &value)?;
            let expected = expected
                .as_deref()
                .map(serde_json::from_str::<serde_json::Value>)
                .transpose()
                .map_err(|e| format!("the expected value for '{key}' is not JSON: {e}"))?;
            let json = serde_json::from_str(&value).map_err(|e| format!("the value for '{key}' is not JSON: {e}"))?;
            Ok::<_, String>((state, expected, json, self.state_bounds()))
        })();
        async move {
            let (state, expected, json, bounds) = checked?;
            let swapped = state.compare_and_set(&key, expected, json, bounds).await.map_err(|e| e.to_string())?;
            if !swapped {
                crate::telemetry::trace::note(|call| call.note(|n| n.state_conflicts += 1));
            }
            Ok(swapped)
        }
    }

    /// `set`, its error text not yet cut for the guest.
    fn set_unbounded(
        &self,
        key: String,
        value: String,
    ) -> impl std::future::Future<Output = Result<(), String>> + Send + 'static {
        let checked = (|| {
            let state = self.state_for(true)?;
            self.check_value_size(&key, &value)?;
            let json = serde_json::from_str(&value).map_err(|e| format!("the value for '{key}' is not JSON: {e}"))?;
            Ok::<_, String>((state, json, self.state_bounds()))
        })();
        async move {
            let (state, json, bounds) = checked?;
            state.set(&key, json, bounds).await.map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::state::ReadForm;

    #[test]
    fn only_what_the_file_holds_counts_as_read() {
        assert_eq!(ReadForm::of("a\nb", b"a\nb"), Some(ReadForm::Text));
        assert_eq!(ReadForm::of("a\nb\n", b"a\r\nb\r"), Some(ReadForm::Normalised), "line endings as Read makes them");
        assert_eq!(ReadForm::of("fake base", b"real content"), None);
        assert_eq!(ReadForm::of("a\r\nb", b"a\nb"), None);
        assert_eq!(ReadForm::Normalised.content(b"a\r\nb\r"), "a\nb\n");
    }
}
