//! The tool registry's entries: every tool is known by name from the moment
//! it is registered, and an entry is either a loaded tool or one that loads
//! on first use.
//!
//! The built-ins are registered not yet loaded ([`ToolEntry::Lazy`]): start-up
//! costs nothing per built-in, and the first thing that needs one (a call, a
//! check, an instance; a description or a listing reads the metadata
//! embedded beside a built-in, [`ToolEntry::info`]) loads it, once, however many
//! tasks ask at the same time. Plugins loaded from a file and native function
//! tools are registered loaded ([`ToolEntry::Loaded`]). A lazy source other
//! than an embedded built-in (a plugin file re-read on hot reload, a tool an
//! MCP server proxies) is one more [`LazySource`] variant.

use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::builtin::Builtin;
use crate::runtime::Runtime;
use crate::tool::{LoadError, LoadedTool, Origin, ToolInfo};

/// A registered tool: loaded, or loaded on first use.
#[derive(Clone)]
pub(crate) enum ToolEntry {
    /// Ready for calls.
    Loaded(Arc<LoadedTool>),
    /// Known by name and origin; [`ToolEntry::get`] loads it the first time.
    Lazy(Arc<LazyTool>),
}

impl ToolEntry {
    /// An entry for an embedded built-in, not loaded yet.
    pub(crate) fn builtin(builtin: &'static Builtin) -> Self {
        ToolEntry::Lazy(Arc::new(LazyTool {
            origin: Origin::Builtin,
            source: LazySource::Builtin(builtin),
            loaded: OnceCell::new(),
        }))
    }

    /// Where the tool comes from, known without loading it.
    pub(crate) fn origin(&self) -> &Origin {
        match self {
            ToolEntry::Loaded(tool) => &tool.info.origin,
            ToolEntry::Lazy(lazy) => &lazy.origin,
        }
    }

    /// Whether the tool is loaded (a lazy entry after its first use).
    pub(crate) fn is_loaded(&self) -> bool {
        match self {
            ToolEntry::Loaded(_) => true,
            ToolEntry::Lazy(lazy) => lazy.loaded.initialized(),
        }
    }

    /// Its metadata, without loading it: a built-in not loaded yet answers
    /// from the metadata embedded beside its component.
    pub(crate) fn info(&self) -> Result<ToolInfo, LoadError> {
        match self {
            ToolEntry::Loaded(tool) => Ok(tool.info.clone()),
            ToolEntry::Lazy(lazy) => match lazy.loaded.get() {
                Some(tool) => Ok(tool.info.clone()),
                None => match lazy.source {
                    LazySource::Builtin(builtin) => builtin.info(),
                },
            },
        }
    }

    /// The loaded tool, loading it first if need be. A failed load is not
    /// remembered: the next use tries again (a failure may be transient, such
    /// as a full instance pool during the `metadata` probe).
    pub(crate) async fn get(&self, runtime: &Runtime) -> Result<Arc<LoadedTool>, LoadError> {
        match self {
            ToolEntry::Loaded(tool) => Ok(tool.clone()),
            ToolEntry::Lazy(lazy) => lazy.get(runtime).await,
        }
    }
}

/// A tool registered by name whose component is loaded on first use.
pub(crate) struct LazyTool {
    origin: Origin,
    source: LazySource,
    /// Set once, by the first successful load; concurrent first uses wait
    /// for that one load.
    loaded: OnceCell<Arc<LoadedTool>>,
}

/// Where a lazy tool's component comes from.
enum LazySource {
    /// Embedded in the binary.
    Builtin(&'static Builtin),
}

impl LazyTool {
    async fn get(&self, runtime: &Runtime) -> Result<Arc<LoadedTool>, LoadError> {
        let tool = self
            .loaded
            .get_or_try_init(|| async {
                match self.source {
                    LazySource::Builtin(builtin) => crate::builtin::load(runtime, builtin).await.map(Arc::new),
                }
            })
            .await?;
        Ok(tool.clone())
    }
}
