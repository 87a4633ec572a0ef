//! `toolhost.toml`: every setting in one file, each also a CLI flag.
//!
//! ```toml
//! [permissions]
//! mode = "default"                    # default, accept_edits, explore, bypass, dont_ask
//! allow = ["Bash(git status:*)", "Edit(/work/src/**)"]
//! deny = ["Bash(rm:*)"]
//! ask = []
//! working_dirs = ["/work/project"]    # default: the current directory
//!
//! read_roots = ["/usr/share/doc"]     # extra read-only roots for built-ins
//! plugins = ["tools/word_count.wasm"]
//! plugin_dirs = ["tools/"]
//! watch = true                        # `serve` reloads plugins when their files change
//! locked = true                       # refuse plugins whose SHA-256 is not in toolhost.lock
//! lock_file = "toolhost.lock"         # default: beside this file
//!
//! [grants.WordCount]                  # third-party tools get nothing unless granted
//! fs_read = ["$WORKDIRS"]              # roots: $WORKDIRS or absolute, no . or ..
//!
//! [grants.Bash]                       # for a built-in only `env` is read:
//! env = ["GOPATH", "NODE_ENV=dev"]     # variables its processes get besides PATH, HOME, ...
//!
//! [limits]
//! timeout_ms = 120000
//! max_memory_bytes = 268435456
//! max_output_bytes = 8388608
//! max_state_value_bytes = 1048576
//! max_state_bytes = 67108864
//! max_state_keys = 10000
//! max_component_bytes = 268435456     # the largest plugin or middleware file read
//!
//! [tools.Bash]                        # a tool's own settings
//! dangerous_files = [".env", ".bashrc"]
//!
//! [backend]                           # where file and process operations run
//! kind = "local"                      # see toolhost::backend::BackendFactories
//! [backend.local]                     # the local sandbox (toolhost::backend::local::sandbox)
//! sandbox = "auto"                    # "on" | "auto" | "off"
//! network = false
//!
//! [middleware]                        # tool middleware (see toolhost::middleware)
//! files = ["mw/retry.wasm"]
//! [middleware.attach]                 # tool (or "*") -> names, outermost first
//! "*" = ["retry"]
//! [middleware.retry]                  # a middleware's own settings
//! max_attempts = 5
//!
//! [groups.web]                        # a tool group, offered once reset_tools activates it
//! description = "Fetching and searching the web"
//! instructions = "Cite every page you quote."
//! tools = ["Fetch", "Search"]
//!
//! [skills]                            # folders with a SKILL.md, read with the Skill tool
//! dirs = ["skills/"]
//!
//! [mcp_servers.docs]                  # an upstream MCP server: its tools become mcp__docs__TOOL
//! command = "python3"                 # stdio; or url = "http://…/mcp" (+ headers)
//! args = ["docs_server.py"]
//! env = { DOCS_ROOT = "/srv/docs" }
//! ```

pub use crate::state_store::{RedisSettings, StateSettings, StoreKind};
pub use overlay::{Overlay, OverlayError};

mod overlay;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use crate::capability::Policy;
use crate::limits::Limits;
use crate::lockfile::LOCK_FILE;
use crate::permission::settings::PermissionSettings;
use crate::protected::{ProtectedKind, ProtectedPaths};

/// The default settings file name, looked up in the current directory.
pub const SETTINGS_FILE: &str = "toolhost.toml";

/// Where sessions lived before they moved to the user state directory,
/// relative to the current directory.
pub const OLD_SESSIONS_DIR: &str = ".toolhost/sessions";

/// The backend kind when `[backend]` names none: this machine (the kind
/// the host's `backend/factory.rs` registers as `LOCAL`; a host built on default
/// settings fails to start if the two ever differ).
pub const DEFAULT_BACKEND: &str = "local";

/// `[backend]`: which backend runs file and process operations.
///
/// ```toml
/// [backend]
/// kind = "local"      # the kinds registered in toolhost::backend::BackendFactories
/// ```
///
/// Every other key of the table is an option of that kind, handed to its
/// factory (the `local` kind takes one, the `[backend.local]` table of its
/// sandbox, `toolhost::backend::local::sandbox::SandboxSettings`). The short form `backend = "local"`
/// names the kind alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackendSettings {
    /// The kind of backend (default `local`).
    pub kind: String,
    /// The kind's own options: the other keys of the table.
    #[serde(flatten)]
    pub options: toml::Table,
}

impl BackendSettings {
    /// Sets `[backend.KIND] KEY = VALUE`, keeping the table's other keys
    /// (a `KIND` that is not a table becomes one).
    pub fn set_option(&mut self, kind: &str, key: &str, value: impl Into<toml::Value>) {
        let table = self.options.entry(kind).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !table.is_table() {
            *table = toml::Value::Table(toml::Table::new());
        }
        if let toml::Value::Table(table) = table {
            table.insert(key.into(), value.into());
        }
    }
}

impl Default for BackendSettings {
    fn default() -> Self {
        Self { kind: DEFAULT_BACKEND.to_string(), options: toml::Table::new() }
    }
}

impl<'de> Deserialize<'de> for BackendSettings {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match toml::Value::deserialize(deserializer)? {
            toml::Value::String(kind) => Ok(Self { kind, options: toml::Table::new() }),
            toml::Value::Table(mut options) => {
                let kind = match options.remove("kind") {
                    Some(toml::Value::String(kind)) => kind,
                    Some(other) => {
                        return Err(D::Error::custom(format!(
                            "[backend] kind must be a string such as \"local\", not {}",
                            other.type_str()
                        )));
                    }
                    None => Self::default().kind,
                };
                Ok(Self { kind, options })
            }
            other => Err(D::Error::custom(format!(
                "backend must be a table ([backend] kind = \"local\") or a kind name, not {}",
                other.type_str()
            ))),
        }
    }
}

/// The whole settings file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Mode, rules and working directories.
    pub permissions: PermissionSettings,
    /// Extra read-only roots given to the built-in tools.
    pub read_roots: Vec<PathBuf>,
    /// Plugin files to load, and registry references (`oci://host/ns/tool:tag`,
    /// `oci://host/ns/tool@sha256:…`; see [`crate::registry`]).
    pub plugins: Vec<PathBuf>,
    /// Directories whose `.wasm` files are loaded as plugins.
    pub plugin_dirs: Vec<PathBuf>,
    /// Load the embedded built-in tools (default true).
    pub builtins: bool,
    /// Capabilities granted per plugin tool name.
    pub grants: BTreeMap<String, Policy>,
    /// Per-call limits.
    pub limits: Limits,
    /// Each tool's own settings (`[tools.Bash]`), passed to the tool as JSON.
    pub tools: BTreeMap<String, toml::Table>,
    /// The execution backend (`[backend]`).
    pub backend: BackendSettings,
    /// Where compiled components are cached (default: the user cache dir,
    /// see [`Settings::cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// The most the compile cache folder may hold, in bytes (default 1 GiB);
    /// the least recently used entries are removed past it.
    pub cache_max_bytes: Option<u64>,
    /// Where session state files live (default: the user state dir, see
    /// [`Settings::state_dir`]).
    pub state_dir: Option<PathBuf>,
    /// Middleware components to load and the tools they wrap.
    pub middleware: MiddlewareSettings,
    /// `toolhost serve` watches the plugin folders and component files and
    /// reloads what changes (as `serve --watch`).
    pub watch: bool,
    /// The lock file (default: `toolhost.lock` beside the settings file, see
    /// [`Settings::lock_path`]).
    pub lock_file: Option<PathBuf>,
    /// Refuse every plugin and middleware whose SHA-256 is not in the lock
    /// file, on load and on reload (as `--locked`).
    pub locked: bool,
    /// Tool groups (`[groups.NAME]`), in name order; tools in none are in
    /// the always-active group `basic`.
    pub groups: BTreeMap<String, GroupSettings>,
    /// Where skills are found (`[skills]`).
    pub skills: SkillSettings,
    /// Upstream MCP servers whose tools toolhost offers as its own
    /// (`[mcp_servers.NAME]`), by name.
    pub mcp_servers: BTreeMap<String, McpServerSettings>,
    /// The audit log (`[audit]`): one JSON line per call.
    pub audit: crate::audit::AuditSettings,
    /// OCI registries (`[registry]`): polling, plain-HTTP hosts, bounds.
    pub registry: crate::registry::RegistrySettings,
    /// Signatures (`[trust]`): trusted keys, and whether one is required.
    pub trust: crate::registry::TrustSettings,
    /// Traces and metrics (`[telemetry]`).
    pub telemetry: crate::telemetry::TelemetrySettings,
    /// Where agent state lives (`[state]`): this process, or a shared Redis.
    pub state: crate::state_store::StateSettings,
}

/// One `[mcp_servers.NAME]` table: an MCP server whose tools become
/// toolhost tools named `mcp__NAME__TOOL`. Exactly one of `command` (a
/// process spoken to over stdio) or `url` (streamable HTTP) is given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerSettings {
    /// The program to start (stdio transport).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables its process gets besides the scrubbed base environment
    /// (`PATH`, `HOME`, `LANG`, …; nothing else of toolhost's is inherited).
    pub env: BTreeMap<String, String>,
    /// The streamable HTTP endpoint (`http://host:port/mcp`).
    pub url: Option<String>,
    /// Headers sent with every HTTP request (such as `Authorization`).
    pub headers: BTreeMap<String, String>,
    /// How long starting the server and listing its tools may take, in
    /// milliseconds (default 30000). Calls are bounded by `[limits]
    /// timeout_ms` like every tool's.
    pub startup_timeout_ms: Option<u64>,
    /// Whether a tool's `readOnlyHint` annotation makes it read-only (allowed
    /// without asking, in every mode, unless a deny or ask rule matches).
    /// Default true, as AgentScope does; false makes every tool of this
    /// server ask unless an allow rule says otherwise.
    pub trust_read_only_hints: Option<bool>,
    /// The most `tools/list` pages read from this server (default
    /// [`DEFAULT_MAX_LIST_PAGES`]); a listing that still has a `nextCursor`
    /// there stops, and what it listed is offered and the stop reported.
    pub max_list_pages: Option<u64>,
    /// The most bytes of `tools/list` pages (as JSON, everything a page
    /// carries) read from this server in all (default
    /// [`DEFAULT_MAX_LIST_BYTES`]); as `max_list_pages` at the bound.
    pub max_list_bytes: Option<u64>,
}

/// The default `[mcp_servers.NAME] max_list_pages`: a server that pages
/// its 1024 tools (the most toolhost takes) needs 128 pages only if it
/// lists fewer than 8 on each.
pub const DEFAULT_MAX_LIST_PAGES: u64 = 128;

/// The default `[mcp_servers.NAME] max_list_bytes` (16 MiB): 16 KiB for each
/// of the 1024 tools toolhost takes, several times what real servers' tools
/// take (a description and a schema are a few KiB).
pub const DEFAULT_MAX_LIST_BYTES: u64 = 16 << 20;

impl McpServerSettings {
    /// Checks the table of server `name`: a name the tool names can carry
    /// and exactly one transport.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!(
                "[mcp_servers.{name}]: a server name must be 1 or more characters of A-Z, a-z, 0-9, _ or - \
                 (it becomes part of its tools' names, mcp__{name}__TOOL)"
            ));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err(format!(
                "[mcp_servers.{name}] has both `command` and `url`; give `command` (+ args, env) for a server \
                 started over stdio, or `url` (+ headers) for one reached over HTTP"
            )),
            (None, None) => Err(format!(
                "[mcp_servers.{name}] has neither `command` nor `url`; give `command` (+ args, env) for a server \
                 started over stdio, or `url` (+ headers) for one reached over HTTP"
            )),
            (Some(_), None) if !self.headers.is_empty() => {
                Err(format!("[mcp_servers.{name}]: `headers` apply only to a server reached by `url`"))
            }
            (None, Some(_)) if !self.args.is_empty() || !self.env.is_empty() => {
                Err(format!("[mcp_servers.{name}]: `args` and `env` apply only to a server started by `command`"))
            }
            _ if self.max_list_pages == Some(0) || self.max_list_bytes == Some(0) => Err(format!(
                "[mcp_servers.{name}]: `max_list_pages` and `max_list_bytes` must be at least 1 (leave them out \
                 for the defaults, {DEFAULT_MAX_LIST_PAGES} pages and {DEFAULT_MAX_LIST_BYTES} bytes)"
            )),
            _ => Ok(()),
        }
    }

    /// The most `tools/list` pages read (`max_list_pages`).
    pub fn list_pages(&self) -> u64 {
        self.max_list_pages.unwrap_or(DEFAULT_MAX_LIST_PAGES)
    }

    /// The most bytes of tool entries read (`max_list_bytes`).
    pub fn list_bytes(&self) -> u64 {
        self.max_list_bytes.unwrap_or(DEFAULT_MAX_LIST_BYTES)
    }

    /// Whether `readOnlyHint` is believed (default true).
    pub fn trusts_read_only_hints(&self) -> bool {
        self.trust_read_only_hints.unwrap_or(true)
    }

    /// The start-up (connect and list) timeout.
    pub fn startup_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.startup_timeout_ms.unwrap_or(30_000))
    }
}

/// One `[groups.NAME]` table: a group of tools the model turns on and off
/// with `reset_tools`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroupSettings {
    /// What the group is for (the description of its `reset_tools` switch).
    pub description: String,
    /// Told to the model when the group is activated.
    pub instructions: Option<String>,
    /// The names of its tools.
    pub tools: Vec<String>,
}

/// The `[skills]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillSettings {
    /// Directories whose sub-folders with a `SKILL.md` are skills
    /// (relative paths are relative to the settings file).
    pub dirs: Vec<PathBuf>,
}

/// The key of [`MiddlewareSettings::attach`] meaning "every tool".
pub const EVERY_TOOL: &str = "*";

/// The `[middleware]` table of `toolhost.toml`: `files`, `attach`, and one
/// `[middleware.NAME]` table per middleware with its own settings (so no
/// middleware named `files` or `attach` can have settings).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MiddlewareSettings {
    /// Middleware component files to load (relative paths are relative to
    /// the settings file).
    pub files: Vec<PathBuf>,
    /// Tool name (or `"*"` for every tool) → middleware names, outermost
    /// first.
    pub attach: BTreeMap<String, Vec<String>>,
    /// Each middleware's own settings (`[middleware.logging]`), passed to
    /// it as JSON like a tool's `[tools.NAME]`.
    #[serde(flatten)]
    pub settings: BTreeMap<String, toml::Table>,
}

impl<'de> Deserialize<'de> for MiddlewareSettings {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let table = toml::Table::deserialize(deserializer)?;
        let mut out = MiddlewareSettings::default();
        for (key, value) in table {
            match key.as_str() {
                "files" => {
                    out.files = value.try_into().map_err(|e| D::Error::custom(format!("[middleware] files: {e}")))?
                }
                "attach" => {
                    out.attach = value.try_into().map_err(|e| D::Error::custom(format!("[middleware.attach]: {e}")))?
                }
                _ => match value {
                    toml::Value::Table(settings) => {
                        out.settings.insert(key, settings);
                    }
                    other => {
                        return Err(D::Error::custom(format!(
                            "[middleware] {key} = {other}: unknown key; [middleware] takes `files`, `attach` and one table per middleware with its own settings, e.g. [middleware.{key}]"
                        )));
                    }
                },
            }
        }
        Ok(out)
    }
}

impl MiddlewareSettings {
    /// A middleware's own settings (`[middleware.NAME]`) as JSON; `{}` when
    /// none.
    pub fn config(&self, name: &str) -> serde_json::Value {
        match self.settings.get(name) {
            Some(table) => serde_json::to_value(table).unwrap_or_else(|_| serde_json::json!({})),
            None => serde_json::json!({}),
        }
    }

    /// Parses one `--attach` value: `TOOL=NAME[,NAME...]` (`*=NAME` for
    /// every tool), appending to the attachments.
    pub fn add_attach(&mut self, spec: &str) -> Result<(), String> {
        let (tool, names) = spec.split_once('=').ok_or_else(|| {
            format!("--attach '{spec}' must look like TOOL=NAME[,NAME], e.g. Bash=logging,retry or '*=logging'")
        })?;
        let tool = tool.trim();
        let names: Vec<String> =
            names.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
        if tool.is_empty() || names.is_empty() {
            return Err(format!(
                "--attach '{spec}' needs a tool name and at least one middleware name, e.g. Bash=logging"
            ));
        }
        self.attach.entry(tool.to_string()).or_default().extend(names);
        Ok(())
    }

    /// Makes relative file paths absolute against `base`.
    pub fn resolve_relative(&mut self, base: &Path) {
        for file in &mut self.files {
            if file.is_relative() {
                *file = base.join(&*file);
            }
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            permissions: PermissionSettings::default(),
            read_roots: Vec::new(),
            plugins: Vec::new(),
            plugin_dirs: Vec::new(),
            builtins: true,
            grants: BTreeMap::new(),
            limits: Limits::default(),
            tools: BTreeMap::new(),
            backend: BackendSettings::default(),
            cache_dir: None,
            cache_max_bytes: None,
            state_dir: None,
            middleware: Default::default(),
            watch: false,
            lock_file: None,
            locked: false,
            groups: BTreeMap::new(),
            skills: SkillSettings::default(),
            mcp_servers: BTreeMap::new(),
            audit: Default::default(),
            registry: Default::default(),
            trust: Default::default(),
            telemetry: Default::default(),
            state: Default::default(),
        }
    }
}

impl Settings {
    /// Reads a settings file. Relative paths in it are resolved against the
    /// file's directory. Errors name the file and the offending key.
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::own_file::read_to_string(path, crate::own_file::SETTINGS_BOUND)
            .with_context(|| format!("reading settings file {}", path.display()))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() { std::env::current_dir()? } else { base };
        Self::parse(&text, &base).with_context(|| format!("settings file {} is invalid", path.display()))
    }

    /// Parses the text of a settings file, resolving its relative paths
    /// against `base` (the file's directory).
    pub fn parse(text: &str, base: &Path) -> Result<Self> {
        let mut settings: Settings = toml::from_str(text)?;
        settings.audit.validate().map_err(anyhow::Error::msg)?;
        settings.telemetry.validate().map_err(anyhow::Error::msg)?;
        settings.state.validate().map_err(anyhow::Error::msg)?;
        settings.resolve_relative(base);
        Ok(settings)
    }

    /// Loads `path` if given, else `./toolhost.toml` if it exists, else the
    /// defaults. Returns the settings and the file they came from.
    pub fn discover(path: Option<&Path>) -> Result<(Self, Option<PathBuf>)> {
        match path {
            Some(p) => Ok((Self::load(p)?, Some(p.to_path_buf()))),
            None => {
                let default = Path::new(SETTINGS_FILE);
                if default.exists() {
                    let abs = std::env::current_dir()?.join(default);
                    Ok((Self::load(&abs)?, Some(abs)))
                } else {
                    Ok((Self::default(), None))
                }
            }
        }
    }

    fn resolve_relative(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() && crate::registry::oci_reference(p).is_none() {
                *p = base.join(&*p);
            }
        };
        self.plugins.iter_mut().for_each(fix);
        self.plugin_dirs.iter_mut().for_each(fix);
        self.read_roots.iter_mut().for_each(fix);
        self.skills.dirs.iter_mut().for_each(fix);
        self.middleware.resolve_relative(base);
        self.trust.resolve_relative(base);
        if let Some(p) = self.cache_dir.as_mut() {
            fix(p);
        }
        if let Some(p) = self.state_dir.as_mut() {
            fix(p);
        }
        if let Some(p) = self.lock_file.as_mut() {
            fix(p);
        }
        if let Some(p) = self.audit.path.as_mut() {
            fix(p);
        }
        let state = &mut self.state;
        for p in
            [&mut state.keyring_file, &mut state.redis.password_file, &mut state.redis.ca_file].into_iter().flatten()
        {
            fix(p);
        }
    }

    /// The lock file: `lock_file` when set, else `toolhost.lock` beside
    /// `settings_path` (the file read or remembered into), else in the
    /// current directory.
    pub fn lock_path(&self, settings_path: Option<&Path>) -> PathBuf {
        if let Some(path) = &self.lock_file {
            return path.clone();
        }
        match settings_path.and_then(Path::parent) {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join(LOCK_FILE),
            _ => std::path::absolute(LOCK_FILE).unwrap_or_else(|_| PathBuf::from(LOCK_FILE)),
        }
    }

    /// Every plugin file these settings load: `plugins` (registry
    /// references left out), then each plugin folder's `.wasm` files sorted
    /// by name.
    pub fn plugin_files(&self) -> Result<Vec<PathBuf>> {
        let mut files: Vec<PathBuf> =
            self.plugins.iter().filter(|p| crate::registry::oci_reference(p).is_none()).cloned().collect();
        for dir in &self.plugin_dirs {
            files.extend(wasm_files(dir).with_context(|| format!("reading plugin directory {}", dir.display()))?);
        }
        Ok(files)
    }

    /// The working directories: absolute, existing, symlinks resolved where
    /// possible. Defaults to the current directory. A relative path is an
    /// error (a policy should not depend on where toolhost was started).
    pub fn working_dirs(&self) -> Result<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        for dir in &self.permissions.working_dirs {
            let path = PathBuf::from(dir);
            if path.is_relative() {
                bail!(
                    "working directory '{dir}' is relative; give an absolute path (--workdir /abs/path or [permissions].working_dirs)"
                );
            }
            dirs.push(path);
        }
        if dirs.is_empty() {
            dirs.push(std::env::current_dir().context("reading the current directory")?);
        }
        Ok(dirs)
    }

    /// A tool's own settings as a JSON object (`{}` when none).
    pub fn tool_config(&self, tool: &str) -> serde_json::Value {
        match self.tools.get(tool) {
            Some(table) => serde_json::to_value(table).unwrap_or_else(|_| serde_json::json!({})),
            None => serde_json::json!({}),
        }
    }

    /// The compile cache directory: `cache_dir` when set, else
    /// `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`.
    pub fn cache_dir(&self) -> PathBuf {
        match &self.cache_dir {
            Some(dir) => dir.clone(),
            None => user_dir("XDG_CACHE_HOME", ".cache", "toolhost-cache"),
        }
    }

    /// The session state directory: `state_dir` when set, else
    /// `$XDG_STATE_HOME/toolhost/sessions`, else
    /// `~/.local/state/toolhost/sessions`: never inside a working directory
    /// unless configured so (and then still off limits to every tool, see
    /// [`crate::protected`]).
    pub fn state_dir(&self) -> PathBuf {
        match &self.state_dir {
            Some(dir) => dir.clone(),
            None => user_dir("XDG_STATE_HOME", ".local/state", "toolhost-state").join("sessions"),
        }
    }

    /// Where each watching `toolhost serve` keeps its status file
    /// (`<pid>.json`, read by `toolhost status`): `.serve` in the state
    /// folder (no session name starts with a dot).
    pub fn serve_status_dir(&self) -> PathBuf {
        self.state_dir().join(".serve")
    }

    /// The folder where an earlier toolhost kept its sessions
    /// ([`OLD_SESSIONS_DIR`] in the current directory), when it exists and
    /// no `state_dir` is configured: its files are no longer read and
    /// should be moved to [`Settings::state_dir`].
    pub fn old_sessions_dir(&self) -> Option<PathBuf> {
        if self.state_dir.is_some() {
            return None;
        }
        let old = std::env::current_dir().ok()?.join(OLD_SESSIONS_DIR);
        old.is_dir().then_some(old)
    }

    /// The file "allow and remember" writes to: the settings file read
    /// (`--config` included), else `./toolhost.toml`, as an absolute path.
    pub fn remember_path(read: Option<&Path>) -> Result<PathBuf> {
        let path = read.unwrap_or(Path::new(SETTINGS_FILE));
        std::path::absolute(path).with_context(|| format!("making {} absolute", path.display()))
    }

    /// toolhost's own files for these settings, off limits to every tool:
    /// `settings_path` (the file read or remembered into), the settings file
    /// toolhost would read next time (`./toolhost.toml`) and the one of
    /// every working directory (a run started there reads it), the session
    /// state folder, the compile cache, every configured plugin and
    /// middleware file and plugin folder (whoever rewrites or adds one runs
    /// with that component's grants on the next start) and, if it exists,
    /// the old `.toolhost` state folder in the current directory.
    pub fn protected_paths(&self, settings_path: Option<&Path>) -> ProtectedPaths {
        let mut p = ProtectedPaths::new();
        if let Some(path) = settings_path {
            p.add(ProtectedKind::SettingsFile, path);
        }
        p.add(ProtectedKind::SettingsFile, Path::new(SETTINGS_FILE));
        p.add(ProtectedKind::LockFile, &self.lock_path(settings_path));
        p.add(ProtectedKind::LockFile, Path::new(LOCK_FILE));
        for dir in self.working_dirs().unwrap_or_default() {
            p.add(ProtectedKind::SettingsFile, &dir.join(SETTINGS_FILE));
            p.add(ProtectedKind::LockFile, &dir.join(LOCK_FILE));
        }
        for file in self.plugins.iter().chain(&self.middleware.files) {
            p.add(ProtectedKind::ComponentFile, file);
        }
        for dir in &self.plugin_dirs {
            p.add(ProtectedKind::PluginDir, dir);
            // Each entry as a file too: its real form is where a link in
            // the folder leads (a build folder, say), and the backend knows
            // its other hard links by the entry's inode.
            for file in wasm_files(dir).unwrap_or_default() {
                p.add(ProtectedKind::ComponentFile, &file);
            }
        }
        for dir in &self.skills.dirs {
            p.add(ProtectedKind::SkillDir, dir);
        }
        p.add(ProtectedKind::StateDir, &self.state_dir());
        p.add(ProtectedKind::CacheDir, &self.cache_dir());
        match self.audit.own_folder() {
            Some(folder) => p.add(ProtectedKind::AuditDir, folder),
            None => {
                for file in self.audit.files() {
                    p.add(ProtectedKind::AuditLog, &file);
                }
                // A lock removed under a serving process would let a second
                // one write the same log.
                if let Some(path) = &self.audit.path {
                    p.add(ProtectedKind::AuditLog, &crate::own_file::lock_path(path));
                }
            }
        }
        for file in [&self.state.keyring_file, &self.state.redis.password_file].into_iter().flatten() {
            p.add(ProtectedKind::Secret, file);
        }
        if let Some(old) = self.old_sessions_dir() {
            p.add(ProtectedKind::StateDir, old.parent().unwrap_or(&old));
        }
        p
    }
}

impl Settings {
    /// Where tools may write, as these settings configure it, each with its
    /// symlinks resolved where it exists: the working directories, every
    /// root a `[grants.NAME]` table lets a tool write (`$WORKDIRS` is the
    /// working directories), and `backend_paths`, where every process of
    /// the backend may write (its options say: `[backend.local]
    /// allow_write`). A component file reached through one of them is
    /// loaded only when pinned (see `toolhost::toolhost::pinned`). Working
    /// directories that cannot be read from the settings are left out (the
    /// host refuses to start on them anyway).
    pub fn tool_writable_roots(&self, backend_paths: &[PathBuf]) -> Vec<PathBuf> {
        let working = self.working_dirs().unwrap_or_default();
        let mut roots = working.clone();
        for policy in self.grants.values() {
            for root in &policy.fs_write {
                if root == crate::capability::WORKDIRS {
                    roots.extend(working.iter().cloned());
                } else {
                    roots.push(PathBuf::from(root));
                }
            }
        }
        roots.extend(backend_paths.iter().cloned());
        let mut out: Vec<PathBuf> = Vec::new();
        for root in roots.into_iter().filter(|r| r.is_absolute()) {
            let root = crate::protected::real_form(&root).unwrap_or(root);
            if !out.contains(&root) {
                out.push(root);
            }
        }
        out
    }
}

/// The `.wasm` files of a plugin folder, sorted by name.
pub fn wasm_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    files.sort();
    Ok(files)
}

/// `$VAR/toolhost` when `VAR` holds an absolute path, else
/// `~/<under_home>/toolhost`, else `<temp>/<fallback>`.
fn user_dir(var: &str, under_home: &str, fallback: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(var).map(PathBuf::from).filter(|d| d.is_absolute()) {
        return dir.join("toolhost");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(under_home).join("toolhost"),
        None => std::env::temp_dir().join(fallback),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "[limits]\ntimeout = 5\n").unwrap();
        let err = format!("{:#}", Settings::load(&path).unwrap_err());
        assert!(err.contains("timeout"), "{err}");
    }

    #[test]
    fn relative_plugin_paths_resolve_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "plugins = [\"p/a.wasm\"]\n[tools.Bash]\ndangerous_files = [\".env\"]\n").unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.plugins[0], dir.path().join("p/a.wasm"));
        assert_eq!(s.tool_config("Bash"), serde_json::json!({"dangerous_files": [".env"]}));
    }

    #[test]
    fn middleware_tables_are_each_middlewares_settings() {
        let s: Settings = toml::from_str(
            "[middleware]\nfiles = [\"r.wasm\"]\n[middleware.attach]\n\"*\" = [\"retry\"]\n[middleware.retry]\nmax_attempts = 5\n",
        )
        .unwrap();
        assert_eq!(s.middleware.files, vec![PathBuf::from("r.wasm")]);
        assert_eq!(s.middleware.attach["*"], vec!["retry".to_string()]);
        assert_eq!(s.middleware.config("retry"), serde_json::json!({"max_attempts": 5}));
        assert_eq!(s.middleware.config("logging"), serde_json::json!({}));
        let bad = toml::from_str::<Settings>("[middleware]\nfile = [\"r.wasm\"]\n").unwrap_err().to_string();
        assert!(bad.contains("unknown key") && bad.contains("[middleware.file]"), "{bad}");
    }

    #[test]
    fn groups_and_skills_are_tables() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        let text = "[groups.web]\ndescription = \"d\"\ntools = [\"Fetch\"]\n[skills]\ndirs = [\"sk\"]\n";
        std::fs::write(&path, text).unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.groups["web"].tools, vec!["Fetch".to_string()]);
        assert_eq!(s.groups["web"].instructions, None);
        assert_eq!(s.skills.dirs, vec![dir.path().join("sk")]);
        let bad = toml::from_str::<Settings>("[groups.web]\ntool = []\n").unwrap_err().to_string();
        assert!(bad.contains("tool"), "{bad}");
    }

    #[test]
    fn backend_is_a_table_or_a_kind_name() {
        let parse = |text: &str| toml::from_str::<Settings>(text).map(|s| s.backend);
        assert_eq!(parse("").unwrap(), BackendSettings::default());
        assert_eq!(parse("[backend]\nkind = \"local\"\n").unwrap().kind, "local");
        assert_eq!(parse("backend = \"docker\"\n").unwrap().kind, "docker");
        let with_options = parse("[backend]\nkind = \"docker\"\nimage = \"debian\"\n").unwrap();
        assert_eq!((with_options.kind.as_str(), with_options.options["image"].as_str()), ("docker", Some("debian")));
        let err = parse("[backend]\nkind = 3\n").unwrap_err().to_string();
        assert!(err.contains("kind must be a string"), "{err}");
    }

    /// The reproducer of [`crate::audit`]'s bound, through the file: such a
    /// file is refused by name instead of exhausting memory.
    #[test]
    fn an_audit_keep_past_its_bound_is_refused_before_anything_uses_it() {
        let err =
            Settings::parse("[audit]\npath = \"/l/audit.jsonl\"\nkeep = 4000000000\n", Path::new("/w")).unwrap_err();
        assert!(format!("{err:#}").contains("[audit] keep = 4000000000"), "{err:#}");
    }

    #[test]
    fn relative_working_dir_is_refused() {
        let mut s = Settings::default();
        s.permissions.working_dirs = vec!["rel".into()];
        assert!(format!("{:#}", s.working_dirs().unwrap_err()).contains("absolute"));
    }
}
