//! The guest SDK for toolhost tools.
//!
//! A tool is a type implementing [`Tool`]; `export_tool!(MyTool)` turns it
//! into the exports of a `toolhost:tool@0.1.0` component. Build with
//! `cargo build --release --target wasm32-wasip2` and hand the `.wasm` file to
//! `toolhost`. Everything optional has the default AgentScope gives it:
//!
//! | method | default |
//! |---|---|
//! | [`Tool::check_read_only`] | the static `read_only` flag |
//! | [`Tool::check_permissions`] | passthrough: the user's rules and the mode decide, so the call asks unless a rule allows it |
//! | [`Tool::match_rule`] | content rules never match (tool-level rules always do, in the host) |
//! | [`Tool::suggestions`] | one tool-level rule (`MyTool`) |
//!
//! ```ignore
//! use toolhost_sdk::{export_tool, Output, Tool, ToolError, ToolSpec};
//!
//! struct Shout;
//! #[derive(serde::Deserialize)]
//! struct Input { text: String }
//!
//! impl Tool for Shout {
//!     type Input = Input;
//!     fn spec() -> ToolSpec {
//!         ToolSpec::new("Shout", "Upper-cases text.").schema(serde_json::json!({
//!             "type": "object",
//!             "properties": {"text": {"type": "string"}},
//!             "required": ["text"]
//!         })).read_only(true)
//!     }
//!     fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
//!         out.text(&input.text.to_uppercase());
//!         Ok(())
//!     }
//! }
//! export_tool!(Shout);
//! ```

pub mod bindings;
pub mod middleware;
pub mod middleware_bindings;
mod spec;

#[doc(hidden)]
pub mod __adapter;
#[doc(hidden)]
pub mod __function;

pub use middleware::Middleware;
pub use serde_json;
pub use spec::ToolSpec;

/// Turns a plain Rust function into a tool (a "function tool").
///
/// ```ignore
/// /// Greets someone by name.
/// #[toolhost_sdk::tool(read_only)]
/// fn greet(
///     /// Who to greet.
///     name: String,
///     /// How many times.
///     #[default = 1]
///     times: u32,
///     /// Upper-case the greeting.
///     shout: Option<bool>,
/// ) -> Result<String, String> {
///     Ok(format!("Hello, {name}!").repeat(times as usize))
/// }
/// ```
///
/// - name: the function name in PascalCase (`greet` → `Greet`), or
///   `#[tool(name = "...")]`;
/// - description: the function's doc comment (required);
/// - input schema: from the parameter types (`String` → string, integers →
///   integer, unsigned ones with `minimum: 0`, `f32`/`f64` → number, `bool` →
///   boolean, `Vec<T>` → array, `Option<T>` → optional, `serde_json::Value` →
///   anything), each parameter's doc comment and `#[default = ...]`; or
///   the whole schema given with `#[tool(schema = "{...}")]`;
/// - flags: `#[tool(read_only, concurrency_safe)]`;
/// - permission: like AgentScope's `FunctionTool`, a non-immune ask (*Custom
///   function tools must be explicitly allowed by the user.*), so a call
///   runs when a rule (`--allow Greet`) or the user allows it;
/// - return: `String`, `()`, `serde_json::Value`, or a `Result` of one of
///   them with any `Display` error (which ends the call in state `error`).
///
/// One function tool per component (it generates the component's exports).
pub use toolhost_sdk_macros::tool;

pub use bindings::toolhost::tool::types::{
    Capabilities, Chunk, ContentBlock, DataBlock, PermissionBehavior, PermissionMode, PermissionRule, ResultState,
    ToolError, ToolMetadata,
};

/// Filesystem and process operations of the active backend, as far as the
/// user granted them (see the WIT `backend` interface).
pub mod backend {
    pub use crate::bindings::toolhost::tool::backend::*;
}

/// The injected agent state (read cache, key-value JSON), for tools whose
/// spec says [`ToolSpec::state_injected`].
pub mod state {
    pub use crate::bindings::toolhost::tool::state::*;
}

/// Writes a line to the host's log (never shown to the model).
pub mod log {
    pub use crate::bindings::toolhost::tool::log::Level;

    /// Logs at `info`.
    pub fn info(message: &str) {
        crate::bindings::toolhost::tool::log::log(Level::Info, message);
    }

    /// Logs at `warn`.
    pub fn warn(message: &str) {
        crate::bindings::toolhost::tool::log::log(Level::Warn, message);
    }

    /// Logs at `debug`.
    pub fn debug(message: &str) {
        crate::bindings::toolhost::tool::log::log(Level::Debug, message);
    }
}

/// What a tool's `check-permissions` returns.
#[derive(Debug, Clone)]
pub struct Decision {
    /// Allow, deny, ask or passthrough.
    pub behavior: PermissionBehavior,
    /// Shown to the user (and to the model on deny).
    pub message: String,
    /// Why, for `toolhost check`'s explanation.
    pub reason: Option<String>,
    /// A safety ask no allow rule can silence.
    pub bypass_immune: bool,
}

impl Decision {
    fn new(behavior: PermissionBehavior, message: impl Into<String>) -> Self {
        Self { behavior, message: message.into(), reason: None, bypass_immune: false }
    }

    /// Let the rules and the mode decide.
    pub fn passthrough(message: impl Into<String>) -> Self {
        Self::new(PermissionBehavior::Passthrough, message)
    }

    /// Allow the call.
    pub fn allow(message: impl Into<String>) -> Self {
        Self::new(PermissionBehavior::Allow, message)
    }

    /// Refuse the call.
    pub fn deny(message: impl Into<String>) -> Self {
        Self::new(PermissionBehavior::Deny, message)
    }

    /// Ask the user; an allow rule may still allow it.
    pub fn ask(message: impl Into<String>) -> Self {
        Self::new(PermissionBehavior::Ask, message)
    }

    /// A safety ask: no allow rule silences it (bypass mode skips it, dont-ask denies).
    pub fn safety_ask(message: impl Into<String>) -> Self {
        Self { bypass_immune: true, ..Self::new(PermissionBehavior::Ask, message) }
    }

    /// Adds the reason shown in explanations.
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

/// The permission context a tool judges a call in. Nothing here touches the
/// filesystem.
#[derive(Debug, Clone)]
pub struct Context {
    /// The active mode.
    pub mode: PermissionMode,
    /// Absolute working directories (given and symlink-resolved forms).
    pub working_dirs: Vec<String>,
    /// What relative paths are relative to.
    pub cwd: String,
    /// What `~` means.
    pub home: String,
    /// The tool's own settings from `toolhost.toml` (`{}` when none).
    pub tool_config: serde_json::Value,
}

impl Default for Context {
    /// Default mode, no working directories, `/` as cwd and home, no settings.
    fn default() -> Self {
        Self {
            mode: PermissionMode::Default,
            working_dirs: Vec::new(),
            cwd: "/".into(),
            home: "/".into(),
            tool_config: serde_json::Value::Object(Default::default()),
        }
    }
}

impl Context {
    /// Whether the mode lets tools allow edits inside the working
    /// directories by themselves (accept-edits and dont-ask, as AgentScope).
    pub fn auto_allows_edits(&self) -> bool {
        matches!(self.mode, PermissionMode::AcceptEdits | PermissionMode::DontAsk)
    }
}

/// A rule suggestion for the user (always an allow rule for this tool).
pub fn suggest(tool: &str, content: Option<String>) -> PermissionRule {
    PermissionRule { tool_name: tool.to_string(), rule_content: content, behavior: PermissionBehavior::Allow }
}

/// The stream of a call's output.
pub struct Output {
    open: bool,
}

impl Output {
    #[doc(hidden)]
    pub fn new() -> Self {
        Self { open: true }
    }

    /// Whether the host still accepts output (false once the cap is reached:
    /// stop producing).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Sends a chunk now; the caller sees it before the call ends.
    pub fn emit(&mut self, chunk: Chunk) -> bool {
        if self.open {
            self.open = bindings::toolhost::tool::output::emit(&chunk);
        }
        self.open
    }

    /// Sends text (state `running`).
    pub fn text(&mut self, text: &str) -> bool {
        self.emit(text_chunk(text, ResultState::Running, None))
    }

    /// Sends text with a JSON metadata object merged into the response.
    pub fn text_with_metadata(&mut self, text: &str, metadata: &serde_json::Value) -> bool {
        self.emit(text_chunk(text, ResultState::Running, Some(metadata)))
    }

    /// Sends an error result: the response ends in state `error` with this
    /// text. Use it for failures the model should read and act on.
    pub fn error(&mut self, text: &str) -> bool {
        self.emit(text_chunk(text, ResultState::Error, None))
    }

    /// Sends binary data (an image, a PDF) for the model.
    pub fn data(&mut self, media_type: &str, data: Vec<u8>, name: Option<String>) -> bool {
        let block = DataBlock { id: None, media_type: media_type.to_string(), data, name };
        self.emit(Chunk {
            content: vec![ContentBlock::Data(block)],
            state: ResultState::Running,
            metadata: String::new(),
        })
    }
}

impl Default for Output {
    fn default() -> Self {
        Self::new()
    }
}

/// A chunk of one text block.
pub fn text_chunk(text: &str, state: ResultState, metadata: Option<&serde_json::Value>) -> Chunk {
    Chunk {
        content: vec![ContentBlock::Text(text.to_string())],
        state,
        metadata: metadata.map(|m| m.to_string()).unwrap_or_default(),
    }
}

/// A tool. Implement [`Tool::spec`] and [`Tool::call`]; the rest has
/// AgentScope's defaults. Register it with [`export_tool!`].
pub trait Tool {
    /// The input, deserialised from the JSON object the host validated
    /// against the schema of [`Tool::spec`].
    type Input: serde::de::DeserializeOwned;

    /// Name, description, schema, flags and capabilities.
    fn spec() -> ToolSpec;

    /// Whether this input only reads; defaults to the static flag.
    fn check_read_only(_input: &Self::Input) -> bool {
        Self::spec().read_only
    }

    /// The tool's own permission judgement; defaults to passthrough.
    fn check_permissions(_input: &Self::Input, _ctx: &Context) -> Decision {
        Decision::passthrough("")
    }

    /// Whether one rule content (e.g. `src/**`) matches this input. The
    /// default matches no content rule (tool-level rules always match).
    fn match_rule(_behavior: PermissionBehavior, _rule_content: &str, _input: &Self::Input, _ctx: &Context) -> bool {
        false
    }

    /// The index of the first matching rule; defaults to trying
    /// [`Tool::match_rule`] on each. Override for rules that must be judged
    /// together (Bash covers a compound command with several allow rules).
    fn match_rules(
        behavior: PermissionBehavior,
        contents: &[String],
        input: &Self::Input,
        ctx: &Context,
    ) -> Option<u32> {
        contents.iter().position(|c| Self::match_rule(behavior, c, input, ctx)).and_then(|i| u32::try_from(i).ok())
    }

    /// Rules to offer when the call is asked about; defaults to one
    /// tool-level rule.
    fn suggestions(_input: &Self::Input, _ctx: &Context) -> Vec<PermissionRule> {
        vec![suggest(&Self::spec().name, None)]
    }

    /// Runs the tool, emitting output through `out`.
    fn call(input: Self::Input, out: &mut Output) -> Result<(), ToolError>;
}

/// Exports a [`Tool`] as the component's `tool` interface.
#[macro_export]
macro_rules! export_tool {
    ($tool:ty) => {
        #[doc(hidden)]
        pub struct __ToolhostExport;

        impl $crate::bindings::exports::toolhost::tool::tool::Guest for __ToolhostExport {
            fn metadata() -> $crate::ToolMetadata {
                $crate::__adapter::metadata::<$tool>()
            }
            fn check_read_only(input: String) -> bool {
                $crate::__adapter::check_read_only::<$tool>(&input)
            }
            fn check_permissions(
                input: String,
                context: $crate::bindings::toolhost::tool::types::PermissionContext,
            ) -> $crate::bindings::toolhost::tool::types::PermissionDecision {
                $crate::__adapter::check_permissions::<$tool>(&input, context)
            }
            fn match_rule(
                behavior: $crate::PermissionBehavior,
                rule_contents: Vec<String>,
                input: String,
                context: $crate::bindings::toolhost::tool::types::PermissionContext,
            ) -> Option<u32> {
                $crate::__adapter::match_rule::<$tool>(behavior, &rule_contents, &input, context)
            }
            fn generate_suggestions(
                input: String,
                context: $crate::bindings::toolhost::tool::types::PermissionContext,
            ) -> Vec<$crate::PermissionRule> {
                $crate::__adapter::suggestions::<$tool>(&input, context)
            }
            fn call(input: String) -> Result<(), $crate::ToolError> {
                $crate::__adapter::call::<$tool>(&input)
            }
        }

        $crate::bindings::__export_tool_component!(__ToolhostExport with_types_in $crate::bindings);
    };
}
