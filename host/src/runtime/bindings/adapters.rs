//! The thin adapters between a WIT version's generated host traits and
//! records and the version-neutral host (`runtime/imports`,
//! [`crate::types`], [`crate::response`], [`crate::permission`],
//! [`crate::backend`]), one macro per interface of `toolhost:tool@0.1.0`.
//!
//! A version module invokes the macro of every interface whose WIT it
//! keeps as 0.1.0 wrote it, naming the generated module (`backend!(backend)`
//! implements `backend::Host` and converts `backend::FileStat`…), and writes
//! the adapters of a changed interface by hand, over the same neutral
//! functions. The generated types are the version's own, so every
//! conversion is the version's too; only the text is shared.

/// The generated worlds of a version whose WIT folder (`$path`, relative to
/// `host/`) keeps 0.1.0's interface names and resources: the `tool` and
/// `middleware` world modules (the middleware sharing every interface with
/// the tool), the interface modules the adapters name, and the two
/// functions that add the version's imports to a linker.
macro_rules! worlds {
    ($path:tt) => {
        /// The `tool-component` world. (Generated: the WIT files carry the documentation.)
        #[allow(missing_docs)]
        mod tool {
            wasmtime::component::bindgen!({
                path: $path,
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
                path: $path,
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
        use middleware::toolhost::tool::chain;
        pub(crate) use tool::ToolComponentPre;
        use tool::toolhost::tool::types as wit;
        use tool::toolhost::tool::{backend, log, output, state};

        /// Adds this version's interfaces (WASI excluded) to a tool linker.
        pub(crate) fn add_tool_imports(
            linker: &mut wasmtime::component::Linker<crate::runtime::CallState>,
        ) -> wasmtime::Result<()> {
            use wasmtime::component::HasSelf;
            use crate::runtime::CallState;
            tool::ToolComponent::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
        }

        /// Adds this version's interfaces (WASI excluded) to a middleware linker.
        pub(crate) fn add_middleware_imports(
            linker: &mut wasmtime::component::Linker<crate::runtime::CallState>,
        ) -> wasmtime::Result<()> {
            use wasmtime::component::HasSelf;
            use crate::runtime::CallState;
            middleware::MiddlewareComponent::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
        }
    };
}

/// `types`: the records every interface shares, converted both ways, and
/// the `tool-error` a failed import hands to the guest.
macro_rules! types {
    ($wit:ident) => {
        impl $wit::Host for crate::runtime::CallState {
            /// A host import's error reaches the guest as its `tool-error`;
            /// a trap stays a trap.
            fn convert_tool_error(
                &mut self,
                err: crate::runtime::imports::HostError,
            ) -> wasmtime::Result<$wit::ToolError> {
                err.into_tool_error().map(Into::into)
            }
        }

        impl From<&crate::permission::Context> for $wit::PermissionContext {
            fn from(ctx: &crate::permission::Context) -> Self {
                $wit::PermissionContext {
                    mode: ctx.mode.into(),
                    working_directories: ctx.working_dirs.clone(),
                    cwd: ctx.cwd.clone(),
                    home: ctx.home.clone(),
                    tool_config: ctx.tool_config.to_string(),
                }
            }
        }

        impl From<crate::permission::Mode> for $wit::PermissionMode {
            fn from(m: crate::permission::Mode) -> Self {
                use crate::permission::Mode;
                match m {
                    Mode::Default => $wit::PermissionMode::Default,
                    Mode::AcceptEdits => $wit::PermissionMode::AcceptEdits,
                    Mode::Explore => $wit::PermissionMode::Explore,
                    Mode::Bypass => $wit::PermissionMode::Bypass,
                    Mode::DontAsk => $wit::PermissionMode::DontAsk,
                }
            }
        }

        impl From<crate::permission::Behavior> for $wit::PermissionBehavior {
            fn from(b: crate::permission::Behavior) -> Self {
                use crate::permission::Behavior;
                match b {
                    Behavior::Allow => $wit::PermissionBehavior::Allow,
                    Behavior::Deny => $wit::PermissionBehavior::Deny,
                    Behavior::Ask => $wit::PermissionBehavior::Ask,
                    Behavior::Passthrough => $wit::PermissionBehavior::Passthrough,
                }
            }
        }

        impl From<$wit::PermissionBehavior> for crate::permission::Behavior {
            fn from(b: $wit::PermissionBehavior) -> Self {
                use crate::permission::Behavior;
                match b {
                    $wit::PermissionBehavior::Allow => Behavior::Allow,
                    $wit::PermissionBehavior::Deny => Behavior::Deny,
                    $wit::PermissionBehavior::Ask => Behavior::Ask,
                    $wit::PermissionBehavior::Passthrough => Behavior::Passthrough,
                }
            }
        }

        impl From<$wit::ToolError> for crate::types::ToolError {
            fn from(e: $wit::ToolError) -> Self {
                use crate::types::ToolError;
                match e {
                    $wit::ToolError::InvalidInput(m) => ToolError::InvalidInput(m),
                    $wit::ToolError::Denied(m) => ToolError::Denied(m),
                    $wit::ToolError::NotFound(m) => ToolError::NotFound(m),
                    $wit::ToolError::Timeout(m) => ToolError::Timeout(m),
                    $wit::ToolError::Io(m) => ToolError::Io(m),
                    $wit::ToolError::Unsupported(m) => ToolError::Unsupported(m),
                    $wit::ToolError::Internal(m) => ToolError::Internal(m),
                }
            }
        }

        impl From<crate::types::ToolError> for $wit::ToolError {
            fn from(e: crate::types::ToolError) -> Self {
                use crate::types::ToolError;
                match e {
                    ToolError::InvalidInput(m) => $wit::ToolError::InvalidInput(m),
                    ToolError::Denied(m) => $wit::ToolError::Denied(m),
                    ToolError::NotFound(m) => $wit::ToolError::NotFound(m),
                    ToolError::Timeout(m) => $wit::ToolError::Timeout(m),
                    ToolError::Io(m) => $wit::ToolError::Io(m),
                    ToolError::Unsupported(m) => $wit::ToolError::Unsupported(m),
                    ToolError::Internal(m) => $wit::ToolError::Internal(m),
                }
            }
        }

        impl From<$wit::ToolMetadata> for crate::types::ToolMetadata {
            fn from(m: $wit::ToolMetadata) -> Self {
                crate::types::ToolMetadata {
                    name: m.name,
                    description: m.description,
                    input_schema: m.input_schema,
                    concurrency_safe: m.concurrency_safe,
                    read_only: m.read_only,
                    external: m.external,
                    state_injected: m.state_injected,
                    mcp_origin: m.mcp_origin,
                    result_metadata_schema: m.result_metadata_schema,
                    capabilities: crate::types::Capabilities {
                        fs_read: m.capabilities.fs_read,
                        fs_write: m.capabilities.fs_write,
                        process_exec: m.capabilities.process_exec,
                        network: m.capabilities.network,
                    },
                }
            }
        }

        impl From<crate::types::ToolMetadata> for $wit::ToolMetadata {
            fn from(m: crate::types::ToolMetadata) -> Self {
                $wit::ToolMetadata {
                    name: m.name,
                    description: m.description,
                    input_schema: m.input_schema,
                    concurrency_safe: m.concurrency_safe,
                    read_only: m.read_only,
                    external: m.external,
                    state_injected: m.state_injected,
                    mcp_origin: m.mcp_origin,
                    result_metadata_schema: m.result_metadata_schema,
                    capabilities: $wit::Capabilities {
                        fs_read: m.capabilities.fs_read,
                        fs_write: m.capabilities.fs_write,
                        process_exec: m.capabilities.process_exec,
                        network: m.capabilities.network,
                    },
                }
            }
        }

        impl From<$wit::ContentBlock> for crate::response::ContentBlock {
            fn from(b: $wit::ContentBlock) -> Self {
                match b {
                    $wit::ContentBlock::Text(text) => crate::response::ContentBlock::Text { text },
                    $wit::ContentBlock::Data(d) => crate::response::ContentBlock::Data {
                        id: d.id,
                        media_type: d.media_type,
                        data: d.data,
                        name: d.name,
                    },
                }
            }
        }

        impl From<crate::response::Chunk> for $wit::Chunk {
            /// What a middleware receives from `next`.
            fn from(chunk: crate::response::Chunk) -> Self {
                use crate::response::{ContentBlock, ResultState};
                $wit::Chunk {
                    content: chunk
                        .content
                        .into_iter()
                        .map(|b| match b {
                            ContentBlock::Text { text } => $wit::ContentBlock::Text(text),
                            ContentBlock::Data { id, media_type, data, name } => {
                                $wit::ContentBlock::Data($wit::DataBlock { id, media_type, data, name })
                            }
                        })
                        .collect(),
                    state: match chunk.state {
                        ResultState::Running => $wit::ResultState::Running,
                        ResultState::Success => $wit::ResultState::Success,
                        ResultState::Error => $wit::ResultState::Error,
                        ResultState::Interrupted => $wit::ResultState::Interrupted,
                        ResultState::Denied => $wit::ResultState::Denied,
                    },
                    metadata: if chunk.metadata.is_empty() {
                        String::new()
                    } else {
                        serde_json::Value::Object(chunk.metadata).to_string()
                    },
                }
            }
        }

        impl From<$wit::ResultState> for crate::response::ResultState {
            fn from(state: $wit::ResultState) -> Self {
                use crate::response::ResultState;
                match state {
                    $wit::ResultState::Running => ResultState::Running,
                    $wit::ResultState::Success => ResultState::Success,
                    $wit::ResultState::Error => ResultState::Error,
                    $wit::ResultState::Interrupted => ResultState::Interrupted,
                    $wit::ResultState::Denied => ResultState::Denied,
                }
            }
        }
    };
}

/// `output`: a guest's chunks ([`crate::runtime::imports::output`]).
macro_rules! output {
    ($wit:ident) => {
        impl $wit::Host for crate::runtime::CallState {
            async fn emit(&mut self, chunk: $wit::Chunk) -> wasmtime::Result<bool> {
                let blocks = chunk.content.into_iter().map(Into::into);
                Ok(crate::runtime::imports::output::emit(self, blocks, chunk.state.into(), chunk.metadata).await)
            }
        }
    };
}

/// `log` as 0.1.0 wrote it: a level and a message, no fields.
macro_rules! log {
    ($wit:ident) => {
        impl $wit::Host for crate::runtime::CallState {
            async fn log(&mut self, level: $wit::Level, message: String) -> wasmtime::Result<()> {
                crate::runtime::imports::log::log(self, level.into(), &message, &[]);
                Ok(())
            }
        }

        super::adapters::log_level!($wit);
    };
}

/// The `level` enum of `log`, as the host's log level.
macro_rules! log_level {
    ($wit:ident) => {
        impl From<$wit::Level> for tracing::Level {
            fn from(level: $wit::Level) -> Self {
                match level {
                    $wit::Level::Trace => tracing::Level::TRACE,
                    $wit::Level::Debug => tracing::Level::DEBUG,
                    $wit::Level::Info => tracing::Level::INFO,
                    $wit::Level::Warn => tracing::Level::WARN,
                    $wit::Level::Error => tracing::Level::ERROR,
                }
            }
        }
    };
}

/// `state`: values, compare-and-set and the read cache
/// ([`crate::runtime::imports::state`]).
macro_rules! state {
    ($wit:ident) => {
        impl $wit::Host for crate::runtime::CallState {
            async fn cache_file(&mut self, path: String, content: String) -> wasmtime::Result<()> {
                crate::runtime::imports::state::cache_file(self, path, &content).await;
                Ok(())
            }

            async fn cached_file(&mut self, path: String) -> wasmtime::Result<Option<String>> {
                Ok(crate::runtime::imports::state::cached_file(self, &path).await)
            }

            async fn forget_file(&mut self, path: String) -> wasmtime::Result<()> {
                crate::runtime::imports::state::forget_file(self, &path).await;
                Ok(())
            }

            async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, String>> {
                Ok(crate::runtime::imports::state::get(self, &key).await)
            }

            async fn compare_and_set(
                &mut self,
                key: String,
                expected: Option<String>,
                value: String,
            ) -> wasmtime::Result<Result<bool, String>> {
                Ok(crate::runtime::imports::state::compare_and_set(self, key, expected, value).await)
            }

            async fn set(&mut self, key: String, value: String) -> wasmtime::Result<Result<(), String>> {
                Ok(crate::runtime::imports::state::set(self, key, value).await)
            }
        }
    };
}

/// `backend`: files, walks, searches and processes through the active
/// backend ([`crate::runtime::imports::backend`]).
macro_rules! backend {
    ($wit:ident) => {
        impl $wit::Host for crate::runtime::CallState {
            async fn os(&mut self) -> wasmtime::Result<$wit::OsFamily> {
                Ok(crate::runtime::imports::backend::os(self).into())
            }

            async fn cwd(&mut self) -> wasmtime::Result<String> {
                Ok(crate::runtime::imports::backend::cwd(self))
            }

            async fn expand_user(&mut self, path: String) -> wasmtime::Result<String> {
                Ok(crate::runtime::imports::backend::expand_user(self, &path))
            }

            async fn read_file(&mut self, path: String) -> Result<Vec<u8>, crate::runtime::imports::HostError> {
                crate::runtime::imports::backend::read_file(self, &path).await
            }

            async fn write_file(
                &mut self,
                path: String,
                contents: Vec<u8>,
            ) -> Result<(), crate::runtime::imports::HostError> {
                crate::runtime::imports::backend::write_file(self, &path, &contents).await
            }

            async fn stat(&mut self, path: String) -> Result<$wit::FileStat, crate::runtime::imports::HostError> {
                Ok(crate::runtime::imports::backend::stat(self, &path).await?.into())
            }

            async fn list_dir(
                &mut self,
                path: String,
            ) -> Result<Vec<$wit::DirEntry>, crate::runtime::imports::HostError> {
                let entries = crate::runtime::imports::backend::list_dir(self, &path).await?;
                Ok(entries.into_iter().map(Into::into).collect())
            }

            async fn create_dir(&mut self, path: String) -> Result<(), crate::runtime::imports::HostError> {
                crate::runtime::imports::backend::create_dir(self, &path).await
            }

            async fn remove(&mut self, path: String) -> Result<(), crate::runtime::imports::HostError> {
                crate::runtime::imports::backend::remove(self, &path).await
            }

            async fn real_path(&mut self, path: String) -> Result<String, crate::runtime::imports::HostError> {
                crate::runtime::imports::backend::real_path(self, &path).await
            }

            async fn walk(
                &mut self,
                options: $wit::WalkOptions,
            ) -> Result<Vec<$wit::DirEntry>, crate::runtime::imports::HostError> {
                let entries = crate::runtime::imports::backend::walk(self, options.into()).await?;
                Ok(entries.into_iter().map(Into::into).collect())
            }

            async fn search(
                &mut self,
                request: $wit::SearchRequest,
            ) -> Result<Vec<$wit::SearchFile>, crate::runtime::imports::HostError> {
                let files = crate::runtime::imports::backend::search(self, request.into()).await?;
                Ok(files.into_iter().map(Into::into).collect())
            }

            async fn spawn(
                &mut self,
                request: $wit::ExecRequest,
            ) -> Result<
                wasmtime::component::Resource<crate::runtime::imports::backend::ProcessHandle>,
                crate::runtime::imports::HostError,
            > {
                let request = crate::runtime::imports::backend::ExecRequest {
                    argv: request.argv,
                    cwd: request.cwd,
                    env: request.env,
                    timeout_ms: request.timeout_ms,
                    max_output_bytes: request.max_output_bytes,
                };
                crate::runtime::imports::backend::spawn(self, request).await
            }
        }

        impl $wit::HostProcess for crate::runtime::CallState {
            async fn next_output(
                &mut self,
                process: wasmtime::component::Resource<crate::runtime::imports::backend::ProcessHandle>,
            ) -> wasmtime::Result<Option<$wit::OutputPiece>> {
                Ok(crate::runtime::imports::backend::next_output(self, &process).await?.map(Into::into))
            }

            async fn wait(
                &mut self,
                process: wasmtime::component::Resource<crate::runtime::imports::backend::ProcessHandle>,
            ) -> wasmtime::Result<$wit::ExitStatus> {
                Ok(crate::runtime::imports::backend::wait(self, &process).await?.into())
            }

            async fn drop(
                &mut self,
                process: wasmtime::component::Resource<crate::runtime::imports::backend::ProcessHandle>,
            ) -> wasmtime::Result<()> {
                crate::runtime::imports::backend::drop_process(self, process)
            }
        }

        impl From<crate::backend::OsFamily> for $wit::OsFamily {
            fn from(os: crate::backend::OsFamily) -> Self {
                match os {
                    crate::backend::OsFamily::Posix => $wit::OsFamily::Posix,
                    crate::backend::OsFamily::Windows => $wit::OsFamily::Windows,
                }
            }
        }

        impl From<crate::backend::EntryKind> for $wit::EntryKind {
            fn from(k: crate::backend::EntryKind) -> Self {
                use crate::backend::EntryKind;
                match k {
                    EntryKind::File => $wit::EntryKind::File,
                    EntryKind::Directory => $wit::EntryKind::Directory,
                    EntryKind::Symlink => $wit::EntryKind::Symlink,
                    EntryKind::Other => $wit::EntryKind::Other,
                }
            }
        }

        impl From<crate::backend::FileStat> for $wit::FileStat {
            fn from(s: crate::backend::FileStat) -> Self {
                $wit::FileStat { kind: s.kind.into(), size: s.size, mtime_ns: s.mtime_ns }
            }
        }

        impl From<crate::backend::DirEntry> for $wit::DirEntry {
            fn from(e: crate::backend::DirEntry) -> Self {
                $wit::DirEntry { path: e.path, kind: e.kind.into(), size: e.size, mtime_ns: e.mtime_ns }
            }
        }

        impl From<$wit::WalkOptions> for crate::backend::WalkOptions {
            fn from(o: $wit::WalkOptions) -> Self {
                crate::backend::WalkOptions {
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

        impl From<$wit::SearchRequest> for crate::backend::SearchRequest {
            fn from(r: $wit::SearchRequest) -> Self {
                use crate::backend::SearchMode;
                crate::backend::SearchRequest {
                    files: r.files.into(),
                    pattern: r.pattern,
                    case_insensitive: r.case_insensitive,
                    multiline: r.multiline,
                    mode: match r.mode {
                        $wit::SearchMode::Content => SearchMode::Content,
                        $wit::SearchMode::FilesWithMatches => SearchMode::FilesWithMatches,
                        $wit::SearchMode::Count => SearchMode::Count,
                    },
                    before_context: r.before_context,
                    after_context: r.after_context,
                    max_columns: r.max_columns,
                }
            }
        }

        impl From<crate::backend::SearchFile> for $wit::SearchFile {
            fn from(f: crate::backend::SearchFile) -> Self {
                $wit::SearchFile {
                    path: f.path,
                    count: f.count,
                    lines: f
                        .lines
                        .into_iter()
                        .map(|l| $wit::SearchLine {
                            line_number: l.line_number,
                            text: l.text,
                            is_context: l.is_context,
                            gap_before: l.gap_before,
                        })
                        .collect(),
                }
            }
        }

        impl From<crate::backend::OutputPiece> for $wit::OutputPiece {
            fn from(piece: crate::backend::OutputPiece) -> Self {
                match piece {
                    crate::backend::OutputPiece::Stdout(b) => $wit::OutputPiece::Stdout(b),
                    crate::backend::OutputPiece::Stderr(b) => $wit::OutputPiece::Stderr(b),
                }
            }
        }

        impl From<crate::backend::ExitStatus> for $wit::ExitStatus {
            fn from(s: crate::backend::ExitStatus) -> Self {
                $wit::ExitStatus { code: s.code, timed_out: s.timed_out, truncated: s.truncated }
            }
        }
    };
}

/// `chain`: how a middleware runs the inner layers of a call
/// ([`crate::runtime::imports::chain`]).
macro_rules! chain {
    ($wit:ident) => {
        impl $wit::Host for crate::runtime::CallState {}

        impl $wit::HostNextHandler for crate::runtime::CallState {
            async fn run(
                &mut self,
                handler: wasmtime::component::Resource<crate::runtime::imports::chain::NextHandler>,
                input: String,
            ) -> Result<
                wasmtime::component::Resource<crate::runtime::imports::chain::InnerCall>,
                crate::runtime::imports::HostError,
            > {
                crate::runtime::imports::chain::run(self, &handler, input).await
            }

            async fn drop(
                &mut self,
                handler: wasmtime::component::Resource<crate::runtime::imports::chain::NextHandler>,
            ) -> wasmtime::Result<()> {
                crate::runtime::imports::chain::drop_entry(self, handler)
            }
        }

        impl $wit::HostInnerCall for crate::runtime::CallState {
            async fn next_chunk(
                &mut self,
                call: wasmtime::component::Resource<crate::runtime::imports::chain::InnerCall>,
            ) -> wasmtime::Result<Option<$wit::Chunk>> {
                Ok(crate::runtime::imports::chain::next_chunk(self, &call).await?.map(Into::into))
            }

            async fn outcome(
                &mut self,
                call: wasmtime::component::Resource<crate::runtime::imports::chain::InnerCall>,
            ) -> Result<(), crate::runtime::imports::HostError> {
                crate::runtime::imports::chain::outcome(self, &call).await
            }

            async fn drop(
                &mut self,
                call: wasmtime::component::Resource<crate::runtime::imports::chain::InnerCall>,
            ) -> wasmtime::Result<()> {
                crate::runtime::imports::chain::drop_entry(self, call)
            }
        }
    };
}

/// The exports: a live tool (`Tool`) and middleware (`Middleware`) instance
/// of the version, called with the host's types. `$tool` and `$mw` are the
/// generated world modules, `$wit` their `types`.
macro_rules! exports {
    ($tool:ident, $mw:ident, $wit:ident) => {
        /// A live tool instance of this version.
        pub(crate) struct Tool {
            bindings: $tool::ToolComponent,
            /// The last permission context and its WIT form: an instance that checks
            /// many calls (`toolhost check --batch`) usually gets the same context
            /// every time, and converting it (the tool configuration as JSON text)
            /// costs more than comparing it. Boxed: most instances never check.
            last_context: Option<Box<(crate::permission::Context, $wit::PermissionContext)>>,
        }

        impl Tool {
            /// Instantiates `pre` in `store`.
            pub(crate) async fn instantiate(
                pre: &$tool::ToolComponentPre<crate::runtime::CallState>,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
            ) -> wasmtime::Result<Self> {
                Ok(Self { bindings: pre.instantiate_async(store).await?, last_context: None })
            }

            pub(crate) async fn metadata(
                &self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
            ) -> wasmtime::Result<crate::types::ToolMetadata> {
                Ok(self.bindings.toolhost_tool_tool().call_metadata(store).await?.into())
            }

            pub(crate) async fn call(
                &self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
                input: &str,
            ) -> wasmtime::Result<Result<(), crate::types::ToolError>> {
                Ok(self.bindings.toolhost_tool_tool().call_call(store, input).await?.map_err(Into::into))
            }

            pub(crate) async fn check_read_only(
                &self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
                input: &str,
            ) -> wasmtime::Result<bool> {
                self.bindings.toolhost_tool_tool().call_check_read_only(store, input).await
            }

            pub(crate) async fn check_permissions(
                &mut self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
                input: &str,
                ctx: &crate::permission::Context,
            ) -> wasmtime::Result<crate::permission::ToolVerdict> {
                let ctx = super::cached_context(&mut self.last_context, ctx);
                let d = self.bindings.toolhost_tool_tool().call_check_permissions(store, input, ctx).await?;
                Ok(crate::permission::ToolVerdict {
                    behavior: d.behavior.into(),
                    message: d.message,
                    reason: d.reason,
                    bypass_immune: d.bypass_immune,
                })
            }

            pub(crate) async fn match_rule(
                &mut self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
                behavior: crate::permission::Behavior,
                contents: &[String],
                input: &str,
                ctx: &crate::permission::Context,
            ) -> wasmtime::Result<Option<u32>> {
                let ctx = super::cached_context(&mut self.last_context, ctx);
                self.bindings.toolhost_tool_tool().call_match_rule(store, behavior.into(), contents, input, ctx).await
            }

            pub(crate) async fn suggestions(
                &mut self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
                input: &str,
                ctx: &crate::permission::Context,
            ) -> wasmtime::Result<Vec<crate::permission::Rule>> {
                let ctx = super::cached_context(&mut self.last_context, ctx);
                let rules = self.bindings.toolhost_tool_tool().call_generate_suggestions(store, input, ctx).await?;
                Ok(rules
                    .into_iter()
                    .map(|r| crate::permission::Rule {
                        tool: r.tool_name,
                        content: r.rule_content,
                        behavior: r.behavior.into(),
                    })
                    .collect())
            }
        }

        /// A live middleware instance of this version.
        pub(crate) struct Middleware($mw::MiddlewareComponent);

        impl Middleware {
            /// Instantiates `pre` in `store`.
            pub(crate) async fn instantiate(
                pre: &$mw::MiddlewareComponentPre<crate::runtime::CallState>,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
            ) -> wasmtime::Result<Self> {
                Ok(Self(pre.instantiate_async(store).await?))
            }

            pub(crate) async fn info(
                &self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
            ) -> wasmtime::Result<crate::types::MiddlewareDescription> {
                let info = self.0.toolhost_tool_middleware().call_info(store).await?;
                Ok(crate::types::MiddlewareDescription { name: info.name, description: info.description })
            }

            pub(crate) async fn on_tool_call(
                &self,
                store: &mut wasmtime::Store<crate::runtime::CallState>,
                tool: crate::types::ToolMetadata,
                input: &str,
                next: wasmtime::component::Resource<crate::runtime::imports::chain::NextHandler>,
            ) -> wasmtime::Result<Result<(), crate::types::ToolError>> {
                let tool = $wit::ToolMetadata::from(tool);
                let outcome = self.0.toolhost_tool_middleware().call_on_tool_call(store, &tool, input, next).await?;
                Ok(outcome.map_err(Into::into))
            }
        }
    };
}

pub(crate) use {backend, chain, exports, log, log_level, output, state, types, worlds};
