use crate::backend::{self, BackendError};
use crate::runtime::CallState;
use crate::runtime::bindings::tool::toolhost::tool::state::Host;

impl CallState {
    /// The agent state, if this tool was granted it.
    fn granted_state(&self) -> Option<&std::sync::Arc<crate::state::AgentState>> {
        if self.grants.state { self.agent_state.as_ref() } else { None }
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
}

impl Host for CallState {
    async fn cache_file(&mut self, path: String, content: String) -> wasmtime::Result<()> {
        if self.granted_state().is_none() {
            return Ok(());
        }
        // A file that cannot be stat'ed is not cached (as AgentScope): the
        // next write then requires a fresh read.
        if let Ok(mtime) = self.mtime(path.clone()).await
            && let Some(state) = self.granted_state()
        {
            state.cache_file(&path, mtime, content);
        }
        Ok(())
    }

    async fn cached_file(&mut self, path: String) -> wasmtime::Result<Option<String>> {
        if self.granted_state().is_none() {
            return Ok(None);
        }
        let mtime = self.mtime(path.clone()).await.ok();
        Ok(self.granted_state().and_then(|s| s.cached_file(&path, mtime)))
    }

    async fn forget_file(&mut self, path: String) -> wasmtime::Result<()> {
        if let Some(state) = self.granted_state() {
            state.forget_file(&path);
        }
        Ok(())
    }

    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, String>> {
        match self.granted_state() {
            Some(state) => Ok(Ok(state.get(&key).map(|v| v.to_string()))),
            None => Ok(Err(self.grants.denied("state"))),
        }
    }

    async fn compare_and_set(
        &mut self,
        key: String,
        expected: Option<String>,
        value: String,
    ) -> wasmtime::Result<Result<bool, String>> {
        let Some(state) = self.granted_state() else {
            return Ok(Err(self.grants.denied("state")));
        };
        let expected = match expected.as_deref().map(serde_json::from_str::<serde_json::Value>).transpose() {
            Ok(e) => e,
            Err(e) => return Ok(Err(format!("the expected value for '{key}' is not JSON: {e}"))),
        };
        match serde_json::from_str(&value) {
            Ok(json) => Ok(Ok(state.compare_and_set(&key, expected.as_ref(), json))),
            Err(e) => Ok(Err(format!("the value for '{key}' is not JSON: {e}"))),
        }
    }

    async fn set(&mut self, key: String, value: String) -> wasmtime::Result<Result<(), String>> {
        let Some(state) = self.granted_state() else {
            return Ok(Err(self.grants.denied("state")));
        };
        match serde_json::from_str(&value) {
            Ok(json) => {
                state.set(&key, json);
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(format!("the value for '{key}' is not JSON: {e}"))),
        }
    }
}
