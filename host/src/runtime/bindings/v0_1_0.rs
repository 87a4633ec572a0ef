//! `toolhost:tool@0.1.0`: the bindings generated from the frozen WIT in
//! `wit/v0.1.0`, and every conversion between their types and the host's
//! own ([`crate::types`], [`crate::response`], [`crate::permission`],
//! [`crate::backend`]). Nothing outside `runtime/` names a type of this
//! module; the host-side import implementations (`runtime/imports/*`) are
//! this version's and use its interface modules re-exported below.
//!
//! This module never changes once released: a later WIT version is a new
//! frozen folder and a sibling module converting into the same host types.

use wasmtime::Store;
use wasmtime::component::Resource;

use crate::backend as be;
use crate::permission::{self, Behavior, Rule, ToolVerdict};
use crate::response::{Chunk, ContentBlock, ResultState};
use crate::runtime::CallState;
use crate::runtime::imports::HostError;
use crate::runtime::imports::chain::NextHandler;
use crate::types;

/// The package version this module was generated from.
pub const VERSION: &str = "0.1.0";

/// The WIT files of this version (name and text), as `toolhost wit` writes them.
pub const WIT_FILES: &[(&str, &str)] = &[
    ("host.wit", include_str!("../../../../wit/v0.1.0/host.wit")),
    ("types.wit", include_str!("../../../../wit/v0.1.0/types.wit")),
    ("worlds.wit", include_str!("../../../../wit/v0.1.0/worlds.wit")),
];

/// Whether a component built against `toolhost:tool@version` is served by
/// this module: `0.1.P` for every patch level `P` up to this module's own
/// (0), since a patch release only adds to the WIT, and a component built
/// against a later patch may use what this host does not have.
// The comparison is the rule for every patch level; at patch 0 it is `==`.
#[allow(clippy::absurd_extreme_comparisons)]
pub fn accepts(version: &str) -> bool {
    const PATCH: u32 = 0;
    let Some(patch) = version.strip_prefix("0.1.") else { return false };
    !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()) && patch.parse::<u32>().is_ok_and(|p| p <= PATCH)
}

/// The `tool-component` world. (Generated: the WIT files carry the documentation.)
#[allow(missing_docs)]
mod tool {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "tool-component",
        imports: { default: async | trappable },
        exports: { default: async },
        trappable_error_type: { "toolhost:tool/types.tool-error" => crate::runtime::imports::HostError },
        with: {
            "toolhost:tool/backend.process": crate::runtime::imports::backend::ProcessHandle,
        },
    });
}

/// The `middleware-component` world; shares every interface with `tool`.
#[allow(missing_docs)]
mod middleware {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "middleware-component",
        imports: { default: async | trappable },
        exports: { default: async },
        trappable_error_type: { "toolhost:tool/types.tool-error" => crate::runtime::imports::HostError },
        with: {
            "toolhost:tool/types": super::tool::toolhost::tool::types,
            "toolhost:tool/log": super::tool::toolhost::tool::log,
            "toolhost:tool/output": super::tool::toolhost::tool::output,
            "toolhost:tool/backend": super::tool::toolhost::tool::backend,
            "toolhost:tool/state": super::tool::toolhost::tool::state,
            "toolhost:tool/chain.inner-call": crate::runtime::imports::chain::InnerCall,
            "toolhost:tool/chain.next-handler": crate::runtime::imports::chain::NextHandler,
        },
    });
}

pub(crate) use middleware::MiddlewareComponentPre;
pub(crate) use middleware::toolhost::tool::chain;
pub(crate) use tool::ToolComponentPre;
use tool::toolhost::tool::types as wit;
pub(crate) use tool::toolhost::tool::{backend, log, output, state};

/// Adds this version's interfaces (WASI excluded) to a tool linker.
pub(crate) fn add_tool_imports(linker: &mut wasmtime::component::Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    tool::ToolComponent::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
}

/// Adds this version's interfaces (WASI excluded) to a middleware linker.
pub(crate) fn add_middleware_imports(linker: &mut wasmtime::component::Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    middleware::MiddlewareComponent::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
}

impl wit::Host for CallState {
    /// A host import's error reaches the guest as its `tool-error`; a trap
    /// stays a trap.
    fn convert_tool_error(&mut self, err: HostError) -> wasmtime::Result<wit::ToolError> {
        err.into_tool_error().map(Into::into)
    }
}

/// A live tool instance of this version.
pub(crate) struct Tool {
    bindings: tool::ToolComponent,
    /// The last permission context and its WIT form: an instance that checks
    /// many calls (`toolhost check --batch`) usually gets the same context
    /// every time, and converting it (the tool configuration as JSON text)
    /// costs more than comparing it. Boxed: most instances never check.
    last_context: Option<Box<(permission::Context, wit::PermissionContext)>>,
}

impl Tool {
    /// Instantiates `pre` in `store`.
    pub(crate) async fn instantiate(
        pre: &ToolComponentPre<CallState>,
        store: &mut Store<CallState>,
    ) -> wasmtime::Result<Self> {
        Ok(Self { bindings: pre.instantiate_async(store).await?, last_context: None })
    }

    pub(crate) async fn metadata(&self, store: &mut Store<CallState>) -> wasmtime::Result<types::ToolMetadata> {
        Ok(self.bindings.toolhost_tool_tool().call_metadata(store).await?.into())
    }

    pub(crate) async fn call(
        &self,
        store: &mut Store<CallState>,
        input: &str,
    ) -> wasmtime::Result<Result<(), types::ToolError>> {
        Ok(self.bindings.toolhost_tool_tool().call_call(store, input).await?.map_err(Into::into))
    }

    pub(crate) async fn check_read_only(&self, store: &mut Store<CallState>, input: &str) -> wasmtime::Result<bool> {
        self.bindings.toolhost_tool_tool().call_check_read_only(store, input).await
    }

    pub(crate) async fn check_permissions(
        &mut self,
        store: &mut Store<CallState>,
        input: &str,
        ctx: &permission::Context,
    ) -> wasmtime::Result<ToolVerdict> {
        let ctx = cached_context(&mut self.last_context, ctx);
        let d = self.bindings.toolhost_tool_tool().call_check_permissions(store, input, ctx).await?;
        Ok(ToolVerdict {
            behavior: d.behavior.into(),
            message: d.message,
            reason: d.reason,
            bypass_immune: d.bypass_immune,
        })
    }

    pub(crate) async fn match_rule(
        &mut self,
        store: &mut Store<CallState>,
        behavior: Behavior,
        contents: &[String],
        input: &str,
        ctx: &permission::Context,
    ) -> wasmtime::Result<Option<u32>> {
        let ctx = cached_context(&mut self.last_context, ctx);
        self.bindings.toolhost_tool_tool().call_match_rule(store, behavior.into(), contents, input, ctx).await
    }

    pub(crate) async fn suggestions(
        &mut self,
        store: &mut Store<CallState>,
        input: &str,
        ctx: &permission::Context,
    ) -> wasmtime::Result<Vec<Rule>> {
        let ctx = cached_context(&mut self.last_context, ctx);
        let rules = self.bindings.toolhost_tool_tool().call_generate_suggestions(store, input, ctx).await?;
        Ok(rules
            .into_iter()
            .map(|r| Rule { tool: r.tool_name, content: r.rule_content, behavior: r.behavior.into() })
            .collect())
    }
}

/// A live middleware instance of this version.
pub(crate) struct Middleware(middleware::MiddlewareComponent);

impl Middleware {
    /// Instantiates `pre` in `store`.
    pub(crate) async fn instantiate(
        pre: &MiddlewareComponentPre<CallState>,
        store: &mut Store<CallState>,
    ) -> wasmtime::Result<Self> {
        Ok(Self(pre.instantiate_async(store).await?))
    }

    pub(crate) async fn info(&self, store: &mut Store<CallState>) -> wasmtime::Result<types::MiddlewareDescription> {
        let info = self.0.toolhost_tool_middleware().call_info(store).await?;
        Ok(types::MiddlewareDescription { name: info.name, description: info.description })
    }

    pub(crate) async fn on_tool_call(
        &self,
        store: &mut Store<CallState>,
        tool: types::ToolMetadata,
        input: &str,
        next: Resource<NextHandler>,
    ) -> wasmtime::Result<Result<(), types::ToolError>> {
        let tool = wit::ToolMetadata::from(tool);
        let outcome = self.0.toolhost_tool_middleware().call_on_tool_call(store, &tool, input, next).await?;
        Ok(outcome.map_err(Into::into))
    }
}

/// The WIT form of `ctx`, converted only when it differs from the last one
/// (`cache`).
fn cached_context<'a>(
    cache: &'a mut Option<Box<(permission::Context, wit::PermissionContext)>>,
    ctx: &permission::Context,
) -> &'a wit::PermissionContext {
    let fresh = match cache.as_deref() {
        Some((last, _)) => !same_context(last, ctx),
        None => true,
    };
    if fresh {
        *cache = None;
    }
    &cache.get_or_insert_with(|| Box::new((ctx.clone(), ctx.into()))).1
}

/// Whether two contexts convert to the same WIT record: equal, with the
/// tool configurations' keys in the same order too (their JSON text is
/// what the guest gets).
fn same_context(a: &permission::Context, b: &permission::Context) -> bool {
    a.mode == b.mode
        && a.working_dirs == b.working_dirs
        && a.cwd == b.cwd
        && a.home == b.home
        && same_json(&a.tool_config, &b.tool_config)
}

/// Equality of JSON values that also requires object keys in the same
/// order (`serde_json`'s `==` ignores the order).
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b)),
        _ => a == b,
    }
}

impl From<&permission::Context> for wit::PermissionContext {
    fn from(ctx: &permission::Context) -> Self {
        wit::PermissionContext {
            mode: ctx.mode.into(),
            working_directories: ctx.working_dirs.clone(),
            cwd: ctx.cwd.clone(),
            home: ctx.home.clone(),
            tool_config: ctx.tool_config.to_string(),
        }
    }
}

impl From<permission::Mode> for wit::PermissionMode {
    fn from(m: permission::Mode) -> Self {
        match m {
            permission::Mode::Default => wit::PermissionMode::Default,
            permission::Mode::AcceptEdits => wit::PermissionMode::AcceptEdits,
            permission::Mode::Explore => wit::PermissionMode::Explore,
            permission::Mode::Bypass => wit::PermissionMode::Bypass,
            permission::Mode::DontAsk => wit::PermissionMode::DontAsk,
        }
    }
}

impl From<Behavior> for wit::PermissionBehavior {
    fn from(b: Behavior) -> Self {
        match b {
            Behavior::Allow => wit::PermissionBehavior::Allow,
            Behavior::Deny => wit::PermissionBehavior::Deny,
            Behavior::Ask => wit::PermissionBehavior::Ask,
            Behavior::Passthrough => wit::PermissionBehavior::Passthrough,
        }
    }
}

impl From<wit::PermissionBehavior> for Behavior {
    fn from(b: wit::PermissionBehavior) -> Self {
        match b {
            wit::PermissionBehavior::Allow => Behavior::Allow,
            wit::PermissionBehavior::Deny => Behavior::Deny,
            wit::PermissionBehavior::Ask => Behavior::Ask,
            wit::PermissionBehavior::Passthrough => Behavior::Passthrough,
        }
    }
}

impl From<wit::ToolError> for types::ToolError {
    fn from(e: wit::ToolError) -> Self {
        match e {
            wit::ToolError::InvalidInput(m) => types::ToolError::InvalidInput(m),
            wit::ToolError::Denied(m) => types::ToolError::Denied(m),
            wit::ToolError::NotFound(m) => types::ToolError::NotFound(m),
            wit::ToolError::Timeout(m) => types::ToolError::Timeout(m),
            wit::ToolError::Io(m) => types::ToolError::Io(m),
            wit::ToolError::Unsupported(m) => types::ToolError::Unsupported(m),
            wit::ToolError::Internal(m) => types::ToolError::Internal(m),
        }
    }
}

impl From<types::ToolError> for wit::ToolError {
    fn from(e: types::ToolError) -> Self {
        match e {
            types::ToolError::InvalidInput(m) => wit::ToolError::InvalidInput(m),
            types::ToolError::Denied(m) => wit::ToolError::Denied(m),
            types::ToolError::NotFound(m) => wit::ToolError::NotFound(m),
            types::ToolError::Timeout(m) => wit::ToolError::Timeout(m),
            types::ToolError::Io(m) => wit::ToolError::Io(m),
            types::ToolError::Unsupported(m) => wit::ToolError::Unsupported(m),
            types::ToolError::Internal(m) => wit::ToolError::Internal(m),
        }
    }
}

impl From<wit::ToolMetadata> for types::ToolMetadata {
    fn from(m: wit::ToolMetadata) -> Self {
        types::ToolMetadata {
            name: m.name,
            description: m.description,
            input_schema: m.input_schema,
            concurrency_safe: m.concurrency_safe,
            read_only: m.read_only,
            external: m.external,
            state_injected: m.state_injected,
            mcp_origin: m.mcp_origin,
            result_metadata_schema: m.result_metadata_schema,
            capabilities: types::Capabilities {
                fs_read: m.capabilities.fs_read,
                fs_write: m.capabilities.fs_write,
                process_exec: m.capabilities.process_exec,
                network: m.capabilities.network,
            },
        }
    }
}

impl From<types::ToolMetadata> for wit::ToolMetadata {
    fn from(m: types::ToolMetadata) -> Self {
        wit::ToolMetadata {
            name: m.name,
            description: m.description,
            input_schema: m.input_schema,
            concurrency_safe: m.concurrency_safe,
            read_only: m.read_only,
            external: m.external,
            state_injected: m.state_injected,
            mcp_origin: m.mcp_origin,
            result_metadata_schema: m.result_metadata_schema,
            capabilities: wit::Capabilities {
                fs_read: m.capabilities.fs_read,
                fs_write: m.capabilities.fs_write,
                process_exec: m.capabilities.process_exec,
                network: m.capabilities.network,
            },
        }
    }
}

/// Converts a chunk a guest emitted. Metadata that is not a JSON object is
/// dropped with a warning naming `tool`: it is the tool's bug, not the
/// caller's problem.
pub(crate) fn chunk_from_wit(chunk: wit::Chunk, tool: &str) -> Chunk {
    let metadata = match chunk.metadata.trim() {
        "" => Default::default(),
        text => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => {
                tracing::warn!(tool, "chunk metadata is not a JSON object; dropped");
                Default::default()
            }
        },
    };
    Chunk {
        content: chunk
            .content
            .into_iter()
            .map(|b| match b {
                wit::ContentBlock::Text(text) => ContentBlock::Text { text },
                wit::ContentBlock::Data(d) => {
                    ContentBlock::Data { id: d.id, media_type: d.media_type, data: d.data, name: d.name }
                }
            })
            .collect(),
        state: chunk.state.into(),
        metadata,
    }
}

impl From<Chunk> for wit::Chunk {
    /// What a middleware receives from `next`.
    fn from(chunk: Chunk) -> Self {
        wit::Chunk {
            content: chunk
                .content
                .into_iter()
                .map(|b| match b {
                    ContentBlock::Text { text } => wit::ContentBlock::Text(text),
                    ContentBlock::Data { id, media_type, data, name } => {
                        wit::ContentBlock::Data(wit::DataBlock { id, media_type, data, name })
                    }
                })
                .collect(),
            state: match chunk.state {
                ResultState::Running => wit::ResultState::Running,
                ResultState::Success => wit::ResultState::Success,
                ResultState::Error => wit::ResultState::Error,
                ResultState::Interrupted => wit::ResultState::Interrupted,
                ResultState::Denied => wit::ResultState::Denied,
            },
            metadata: if chunk.metadata.is_empty() {
                String::new()
            } else {
                serde_json::Value::Object(chunk.metadata).to_string()
            },
        }
    }
}

impl From<wit::ResultState> for ResultState {
    fn from(state: wit::ResultState) -> Self {
        match state {
            wit::ResultState::Running => ResultState::Running,
            wit::ResultState::Success => ResultState::Success,
            wit::ResultState::Error => ResultState::Error,
            wit::ResultState::Interrupted => ResultState::Interrupted,
            wit::ResultState::Denied => ResultState::Denied,
        }
    }
}

impl From<be::OsFamily> for backend::OsFamily {
    fn from(os: be::OsFamily) -> Self {
        match os {
            be::OsFamily::Posix => backend::OsFamily::Posix,
            be::OsFamily::Windows => backend::OsFamily::Windows,
        }
    }
}

impl From<be::EntryKind> for backend::EntryKind {
    fn from(k: be::EntryKind) -> Self {
        match k {
            be::EntryKind::File => backend::EntryKind::File,
            be::EntryKind::Directory => backend::EntryKind::Directory,
            be::EntryKind::Symlink => backend::EntryKind::Symlink,
            be::EntryKind::Other => backend::EntryKind::Other,
        }
    }
}

impl From<be::FileStat> for backend::FileStat {
    fn from(s: be::FileStat) -> Self {
        backend::FileStat { kind: s.kind.into(), size: s.size, mtime_ns: s.mtime_ns }
    }
}

impl From<be::DirEntry> for backend::DirEntry {
    fn from(e: be::DirEntry) -> Self {
        backend::DirEntry { path: e.path, kind: e.kind.into(), size: e.size, mtime_ns: e.mtime_ns }
    }
}

impl From<backend::WalkOptions> for be::WalkOptions {
    fn from(o: backend::WalkOptions) -> Self {
        be::WalkOptions {
            root: o.root,
            globs: o.globs,
            file_type: o.file_type,
            hidden: o.hidden,
            respect_ignore_files: o.respect_ignore_files,
            follow_symlinks: o.follow_symlinks,
            max_entries: o.max_entries,
            match_names: o.match_names,
        }
    }
}

impl From<backend::SearchRequest> for be::SearchRequest {
    fn from(r: backend::SearchRequest) -> Self {
        be::SearchRequest {
            files: r.files.into(),
            pattern: r.pattern,
            case_insensitive: r.case_insensitive,
            multiline: r.multiline,
            mode: match r.mode {
                backend::SearchMode::Content => be::SearchMode::Content,
                backend::SearchMode::FilesWithMatches => be::SearchMode::FilesWithMatches,
                backend::SearchMode::Count => be::SearchMode::Count,
            },
            before_context: r.before_context,
            after_context: r.after_context,
            max_columns: r.max_columns,
        }
    }
}

impl From<be::SearchFile> for backend::SearchFile {
    fn from(f: be::SearchFile) -> Self {
        backend::SearchFile {
            path: f.path,
            count: f.count,
            lines: f
                .lines
                .into_iter()
                .map(|l| backend::SearchLine {
                    line_number: l.line_number,
                    text: l.text,
                    is_context: l.is_context,
                    gap_before: l.gap_before,
                })
                .collect(),
        }
    }
}

impl From<be::OutputPiece> for backend::OutputPiece {
    fn from(piece: be::OutputPiece) -> Self {
        match piece {
            be::OutputPiece::Stdout(b) => backend::OutputPiece::Stdout(b),
            be::OutputPiece::Stderr(b) => backend::OutputPiece::Stderr(b),
        }
    }
}

impl From<be::ExitStatus> for backend::ExitStatus {
    fn from(s: be::ExitStatus) -> Self {
        backend::ExitStatus { code: s.code, timed_out: s.timed_out, truncated: s.truncated }
    }
}

#[cfg(test)]
mod tests {
    use super::accepts;

    #[test]
    fn accepts_its_own_version_and_no_later_patch_or_other_minor() {
        assert!(accepts("0.1.0"));
        for refused in ["0.1.1", "0.2.0", "0.9.0", "1.0.0", "0.1", "0.1.0-rc1", "0.1.+0", "0.1.x", ""] {
            assert!(!accepts(refused), "{refused}");
        }
    }
}
