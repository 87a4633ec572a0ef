//! Command-line arguments. Every setting of toolhost.toml is also a flag.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use toolhost::permission::Mode;
use toolhost::settings::{Overlay, Settings};
use toolhost::{Toolhost, UpstreamStart};

/// Run AI-agent tools as sandboxed WebAssembly components.
///
/// Every tool (Bash, Read, Write, Edit, Glob, Grep, the task tools, AskUser
/// and any plugin) is a WASI 0.2 component; the permission engine decides
/// each call (allow, ask or deny) before any of the tool's code runs for it.
///
/// Settings come from ./toolhost.toml (or --config); every setting is also a
/// flag. Exit codes: 0 success, 1 error, 2 usage, 3 denied, 4 external
/// execution required.
#[derive(Parser, Debug)]
#[command(name = "toolhost", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every subcommand takes.
#[derive(Args, Debug, Clone, Default)]
pub struct Global {
    /// Settings file [default: ./toolhost.toml if it exists]; "allow and remember" writes here (creating ./toolhost.toml if need be)
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Working directory the tools may read and write (repeatable) [default: the current directory]
    #[arg(long = "workdir", global = true, value_name = "DIR")]
    pub workdirs: Vec<PathBuf>,
    /// Extra read-only root for the built-in tools (repeatable)
    #[arg(long = "read-root", global = true, value_name = "DIR")]
    pub read_roots: Vec<PathBuf>,
    /// Permission mode: default, accept-edits, explore, bypass, dont-ask
    #[arg(long, global = true)]
    pub mode: Option<Mode>,
    /// Allow rule, e.g. 'Bash(git status:*)' or 'Edit(/work/src/**)' (repeatable)
    #[arg(long = "allow", global = true, value_name = "RULE")]
    pub allow: Vec<String>,
    /// Deny rule (repeatable)
    #[arg(long = "deny", global = true, value_name = "RULE")]
    pub deny: Vec<String>,
    /// Ask rule (repeatable)
    #[arg(long = "ask", global = true, value_name = "RULE")]
    pub ask: Vec<String>,
    /// Load a plugin component (repeatable)
    #[arg(long = "plugin", global = true, value_name = "FILE.wasm")]
    pub plugins: Vec<PathBuf>,
    /// Load every .wasm file in a directory as a plugin (repeatable)
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
    /// Grant a plugin a capability: NAME=fs-read[:/path], NAME=fs-write[:/path], NAME=exec, NAME=state, NAME=env:VAR[=value] (a variable for the processes it spawns), NAME=all (repeatable)
    #[arg(long = "grant", global = true, value_name = "NAME=CAP")]
    pub grants: Vec<String>,
    /// Load a middleware component (repeatable); attach it with --attach
    #[arg(long = "middleware", global = true, value_name = "FILE.wasm")]
    pub middleware: Vec<PathBuf>,
    /// Attach middleware to a tool, outermost first: TOOL=NAME[,NAME], or '*=NAME' for every tool (repeatable)
    #[arg(long = "attach", global = true, value_name = "TOOL=NAMES")]
    pub attach: Vec<String>,
    /// Per-call time limit in milliseconds
    #[arg(long, global = true, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Per-instance memory limit in bytes
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_memory_bytes: Option<u64>,
    /// Per-call output limit in bytes
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_output_bytes: Option<u64>,
    /// Largest value (key plus JSON text) a tool may store in the agent state, in bytes
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_state_value_bytes: Option<u64>,
    /// Largest the whole agent state may grow (keys plus JSON text), in bytes
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_state_bytes: Option<u64>,
    /// Most keys the agent state may hold
    #[arg(long, global = true, value_name = "N")]
    pub max_state_keys: Option<u64>,
    /// Log output per tool or middleware instance in bytes; lines past it are dropped and counted
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_log_bytes: Option<u64>,
    /// Largest plugin or middleware file read, in bytes (checked before reading)
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_component_bytes: Option<u64>,
    /// Do not load the embedded built-in tools
    #[arg(long, global = true)]
    pub no_builtins: bool,
    /// Refuse every plugin and middleware whose SHA-256 is not in toolhost.lock (written by `toolhost lock`), on load and on reload [default: `locked` in toolhost.toml]
    #[arg(long, global = true)]
    pub locked: bool,
    /// Compile cache directory [default: ~/.cache/toolhost]
    #[arg(long, global = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The most the compile cache may hold; the least recently used entries go [default: 1 GiB]
    #[arg(long, global = true, value_name = "BYTES")]
    pub cache_max_bytes: Option<u64>,
    /// The lock file `lock` writes and --locked checks [default: toolhost.lock beside the settings file]
    #[arg(long, global = true, value_name = "FILE")]
    pub lock_file: Option<PathBuf>,
    /// Write one JSON line per tool call (decision, host operations, outcome) to FILE [default: [audit] path, else none]
    #[arg(long, global = true, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Where file and process operations run: a backend kind (local, docker) [default: [backend] kind, else local]
    #[arg(long, global = true, value_name = "KIND")]
    pub backend: Option<String>,
    /// Confine the processes of the local backend with Landlock, seccomp and cgroups: on (fail where the kernel cannot), auto (else warn and run unconfined), off [default: [backend.local] sandbox, else off]
    #[arg(long, global = true, value_name = "MODE", value_parser = ["on", "auto", "off"])]
    pub sandbox: Option<String>,
    /// The image of the Docker backend's container (it must exist on the engine; never pulled) [default: [backend.docker] image]
    #[arg(long, global = true, value_name = "IMAGE")]
    pub docker_image: Option<String>,
    /// Speak plain HTTP (no TLS) to this registry host[:port] (repeatable; loopback registries always are) [default: [registry] insecure]
    #[arg(long, global = true, value_name = "HOST")]
    pub insecure_registry: Vec<String>,
    /// Where agent state lives: local (this process; named sessions as files, one process at a time) or redis (shared by every process that names the same Redis and key prefix) [default: [state] store, else local]
    #[arg(long, global = true, value_name = "KIND", value_parser = ["local", "redis"])]
    pub state_store: Option<String>,
    /// The Redis of a shared state store: redis://HOST:PORT/DB or rediss://… (no password here: TOOLHOST_REDIS_PASSWORD or [state.redis] password_file) [default: [state.redis] url]
    #[arg(long, global = true, value_name = "URL", env = "TOOLHOST_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// The prefix of every Redis key of this deployment (one per deployment) [default: [state.redis] key_prefix]
    #[arg(long, global = true, value_name = "PREFIX")]
    pub redis_key_prefix: Option<String>,
    /// The keyring that seals pending questions, the same on every process of a deployment (`toolhost keyring new`) [default: [state] keyring_file]
    #[arg(long, global = true, value_name = "FILE")]
    pub state_keyring: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl Global {
    /// The settings file merged with the flags (flags win; rules add up).
    pub fn settings(&self) -> Result<(Settings, Option<PathBuf>)> {
        let (mut s, path) = Settings::discover(self.config.as_deref())?;
        self.overlay().apply(&mut s, &std::env::current_dir()?)?;
        Ok((s, path))
    }

    /// The flags that change settings, as the library's overlay.
    fn overlay(&self) -> Overlay {
        let mut backend_options = Vec::new();
        if let Some(mode) = &self.sandbox {
            backend_options.push(("local".into(), "sandbox".into(), mode.as_str().into()));
        }
        if let Some(image) = &self.docker_image {
            backend_options.push(("docker".into(), "image".into(), image.as_str().into()));
        }
        Overlay {
            working_dirs: self.workdirs.clone(),
            read_roots: self.read_roots.clone(),
            mode: self.mode,
            allow: self.allow.clone(),
            deny: self.deny.clone(),
            ask: self.ask.clone(),
            plugins: self.plugins.clone(),
            plugin_dirs: self.plugin_dirs.clone(),
            grants: self.grants.clone(),
            middleware: self.middleware.clone(),
            attach: self.attach.clone(),
            timeout_ms: self.timeout_ms,
            max_memory_bytes: self.max_memory_bytes,
            max_output_bytes: self.max_output_bytes,
            max_state_value_bytes: self.max_state_value_bytes,
            max_state_bytes: self.max_state_bytes,
            max_state_keys: self.max_state_keys,
            max_log_bytes: self.max_log_bytes,
            max_component_bytes: self.max_component_bytes,
            no_builtins: self.no_builtins,
            locked: self.locked,
            cache_dir: self.cache_dir.clone(),
            cache_max_bytes: self.cache_max_bytes,
            insecure_registries: self.insecure_registry.clone(),
            lock_file: self.lock_file.clone(),
            audit: self.audit.clone(),
            backend: self.backend.clone(),
            backend_options,
            state_store: self.state_store.clone(),
            redis_url: self.redis_url.clone(),
            redis_key_prefix: self.redis_key_prefix.clone(),
            state_keyring: self.state_keyring.clone(),
        }
    }

    /// A host built from the settings and flags, with warnings printed, for
    /// a one-shot command: built-ins first used on baseline code are left to
    /// `toolhost __optimise-builtins` when the command ends.
    pub async fn host(&self) -> Result<Toolhost> {
        self.host_with(|_| true).await
    }

    /// The host, with the tools of the upstream MCP servers `wanted`
    /// accepts (each such server is started, or reached, now).
    pub async fn host_with(&self, wanted: impl Fn(&str) -> bool) -> Result<Toolhost> {
        let (settings, read) = self.settings()?;
        let servers = settings.mcp_servers.keys().filter(|name| wanted(name)).cloned().collect();
        self.host_over(settings, read, UpstreamStart::Only(servers), false, false, None).await
    }

    /// The host of `toolhost serve`, which keeps running: every upstream
    /// server is started now, and one that does not start is tried again in
    /// the background until it does (its tools then appear, with a
    /// tool-list change); built-ins first used on baseline code are
    /// optimised in the background.
    /// `metrics`: keep Prometheus metrics (`serve --metrics`); `replica`:
    /// this process's id among a deployment's (`serve --replica-id`).
    pub async fn host_for_serve(&self, metrics: bool, replica: Option<&str>) -> Result<Toolhost> {
        let (settings, read) = self.settings()?;
        let start = UpstreamStart::Retrying(toolhost::UpstreamRetry::default());
        self.host_over(settings, read, start, true, metrics, replica).await
    }

    /// The host of `settings` (read from `read`), its upstream servers
    /// started as `upstream` says; warnings printed. `long_running` hosts
    /// optimise their built-ins themselves, and wait for a shared state
    /// store at start. With `[state] store = "redis"` the host applies and
    /// keeps remembered rules in it.
    async fn host_over(
        &self,
        settings: Settings,
        read: Option<PathBuf>,
        upstream: UpstreamStart,
        long_running: bool,
        metrics: bool,
        replica: Option<&str>,
    ) -> Result<Toolhost> {
        let remember = Settings::remember_path(read.as_deref())?;
        let replica = crate::state_store::replica_id(replica, long_running);
        let mut builder = crate::state_store::with_rule_store(Toolhost::builder(), &settings, long_running)
            .await?
            .settings(settings, Some(remember))
            .optimise_builtins_in_background(long_running)
            .hold_audit_log(long_running)
            .metrics(metrics)
            .upstream(upstream);
        if let Some(replica) = replica {
            builder = builder.replica(replica);
        }
        if let Some(observer) = crate::first_run::observer() {
            builder = builder.compile_observer(observer);
        }
        let host = builder.build().await?;
        crate::first_run::remember(&host);
        // A plugin loading in the background may have the name: checked
        // once the loads are done (`first_run::wait_for_plugins`).
        if host.pending_loads().is_empty() {
            warn_unknown_rules(&host);
        }
        for problem in host.skill_problems() {
            eprintln!("warning: {} (skipped)", crate::shown::line(problem));
        }
        for problem in host.upstream_problems() {
            eprintln!("warning: {}", crate::shown::line(problem));
        }
        Ok(host)
    }
}

/// Warns of permission rules that name tools this host does not have.
pub fn warn_unknown_rules(host: &Toolhost) {
    for tool in host.rules_for_unknown_tools() {
        eprintln!("warning: permission rules name the tool '{tool}', which is not loaded");
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the loaded tools
    List(ListArgs),
    /// Show a tool's description, input schema, flags and capabilities
    Describe(DescribeArgs),
    /// Call a tool: prints its output as it streams
    Call(CallArgs),
    /// Finish an external call (printed by `call` with exit code 4) with its result
    Resume(ResumeArgs),
    /// Run a batch of calls (a JSON list) as an agent would: consecutive
    /// concurrency-safe calls in parallel, the rest one at a time, results in order
    Run(RunArgs),
    /// Evaluate the permission engine without running anything
    Check(CheckArgs),
    /// Show what a .wasm component is: metadata, WIT version, capabilities, imports, hash;
    /// with two files (OLD NEW), the capability diff from OLD to NEW
    Inspect(InspectArgs),
    /// Serve every tool to MCP clients (stdio by default, or streamable HTTP
    /// with --http), with the same settings, permissions and limits as `call`
    Serve(Box<ServeArgs>),
    /// Pin every configured plugin and middleware in toolhost.lock (beside the settings file):
    /// name, file, SHA-256 and the capabilities it declares, which approves them for reloads
    Lock(LockArgs),
    /// Push a component to an OCI registry (REF: host[:port]/name:tag), in the wasm layout wkg writes
    Push(PushArgs),
    /// Pull a component from an OCI registry (by tag or @sha256:digest), its digest (and, with [trust], its signature) checked
    Pull(PullArgs),
    /// Sign a component file (writes FILE.sig) or a pushed reference (pushes a cosign signature) with a P-256 key
    Sign(SignArgs),
    /// Show the live replicas of a deployment ([state] store = "redis": id, host, pid, version, tool-set and
    /// policy digests, reload errors) and what each `serve --watch` of this machine has loaded: file, SHA-256,
    /// grants, last reload error
    Status(StatusArgs),
    /// Print (or write to a folder) the WIT package this toolhost speaks, to build plugins against
    Wit(WitArgs),
    /// Make a tool project in Rust, Python or JavaScript that builds as it is (`toolhost build`)
    New(NewArgs),
    /// Build the tool or middleware project in this folder (toolhost-plugin.toml) into a .wasm;
    /// prints its path and SHA-256
    Build(BuildArgs),
    /// Work with an audit log (written with --audit FILE or [audit] path)
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Make the keys that seal pending questions, shared by every process of a deployment ([state] keyring_file)
    #[command(subcommand)]
    Keyring(KeyringCommand),
    /// List the rules "allow and remember" kept in the shared state store ([state] store = "redis"), or forget one
    Rules(RulesArgs),
    /// Internal: compile built-ins' and plugins' optimised code into the
    /// cache (started in the background after a first run)
    #[command(name = "__optimise-builtins", hide = true)]
    OptimiseBuiltins(OptimiseArgs),
}

#[derive(Args, Debug)]
pub struct OptimiseArgs {
    /// The compile cache directory
    #[arg(long, value_name = "DIR")]
    pub cache: PathBuf,
    /// The built-ins to compile
    pub names: Vec<String>,
    /// A plugin file to compile, if it still has this SHA-256 (repeatable;
    /// not `--plugin`, which every command takes to load one)
    #[arg(long = "wasm", value_name = "SHA256=FILE")]
    pub wasm_files: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Serve on stdin/stdout (the default): what an MCP client starts as a subprocess
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve MCP streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8765); an address other than loopback needs a token
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Bearer token every HTTP request must carry (prefer --token-file or the environment: arguments are visible to other users)
    #[arg(long, env = "TOOLHOST_MCP_TOKEN", hide_env_values = true, value_name = "T", requires = "http")]
    pub token: Option<String>,
    /// Read the bearer token from the first line of this file
    #[arg(long, value_name = "FILE", requires = "http", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// Browser origin allowed to call over HTTP, e.g. http://localhost:3000 (repeatable); any other Origin is refused
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub allowed_origins: Vec<String>,
    /// Host name the HTTP Host header may carry besides loopback and the bound address (repeatable)
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// Largest HTTP request body in bytes [default: 4 MiB]
    #[arg(long, value_name = "BYTES", requires = "http")]
    pub max_body_bytes: Option<usize>,
    /// HTTP connections serving requests at once; the next waits (up to 10 s), then gets 503 [default: 512]
    #[arg(long, value_name = "N", requires = "http")]
    pub max_connections: Option<usize>,
    /// Long-lived HTTP streams (subscriptions/listen, GET streams) and calls waiting for an elicitation answer, at once; they hold no connection slot [default: 256]
    #[arg(long, value_name = "N", requires = "http")]
    pub max_streams: Option<usize>,
    /// The same, for one client address (an IPv6 /64) [default: 32]
    #[arg(long, value_name = "N", requires = "http")]
    pub max_streams_per_peer: Option<usize>,
    /// Seconds an HTTP write may wait for the client to read before the connection is dropped [default: 30]
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub write_timeout: Option<f64>,
    /// Live 2025-11-25 MCP sessions; the next evicts the one idle longest (503 if all are busy) [default: 1000]
    #[arg(long, value_name = "N", requires = "http")]
    pub max_sessions: Option<usize>,
    /// Seconds an MCP session may stay silent before it is closed [default: 300]
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub session_idle_timeout: Option<f64>,
    /// Seconds an MCP session that made no request after initialize is kept [default: 60]
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub unused_session_timeout: Option<f64>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464; as [telemetry] metrics_addr); an address other than loopback needs --metrics-token
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Bearer token every scrape of --metrics must carry
    #[arg(long, env = "TOOLHOST_METRICS_TOKEN", hide_env_values = true, value_name = "T")]
    pub metrics_token: Option<String>,
    /// On SIGINT/SIGTERM, how long running calls may finish before they are cancelled and their processes killed
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub grace: f64,
    /// This process among the replicas of a deployment: in its audit records, `{replica}` in [audit] path
    /// and the rules it remembers ([state] store = "redis"); must differ per replica [default: HOSTNAME-PID]
    #[arg(long, env = "TOOLHOST_REPLICA_ID", value_name = "ID")]
    pub replica_id: Option<String>,
    /// Keep one named agent state (read cache, tasks) for every client, as `call --session` does;
    /// without it each MCP session has its own state, dropped when the session ends
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// Watch the plugin folders (--plugins), plugin files and middleware files, and reload what changes:
    /// a new .wasm is loaded, a changed one swapped in (running calls finish on the old version), a
    /// removed one unloaded; a broken update keeps the old version serving (see `toolhost status`)
    /// [default: `watch` in toolhost.toml, else off]
    #[arg(long)]
    pub watch: bool,
}

#[derive(Args, Debug)]
pub struct RulesArgs {
    /// Forget this rule, written as listed (e.g. 'Bash(git push:*)'): every process stops applying it before its next decision
    #[arg(long, value_name = "RULE")]
    pub forget: Option<String>,
    /// Print the rules as JSON
    #[arg(long)]
    pub json: bool,
}

/// `toolhost keyring ...`.
#[derive(Subcommand, Debug)]
pub enum KeyringCommand {
    /// Print one line for a keyring file: `ID BASE64`, a fresh random 32-byte key. The first line of the
    /// file seals, every line opens: to rotate, add the new line on every process, then move it first,
    /// then remove the old one after 10 minutes
    New(KeyringNewArgs),
}

#[derive(Args, Debug)]
pub struct KeyringNewArgs {
    /// The key's id (letters, digits, '-', '_', '.') [default: k<seconds since 1970>]
    #[arg(long)]
    pub id: Option<String>,
}

/// `toolhost audit ...`.
#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Decide every logged call again under the current settings and list each whose decision
    /// would change (before -> after, with the deciding step and rule); exit code 1 when any did
    Replay(ReplayArgs),
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The audit log (JSON lines)
    pub file: PathBuf,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LockArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Credentials for a registry (else the Docker configuration's: config file and credential helpers).
#[derive(Args, Debug, Default)]
pub struct RegistryArgs {
    /// User name for the registry (with --password-stdin)
    #[arg(long, value_name = "NAME", requires = "password_stdin")]
    pub username: Option<String>,
    /// Read the registry password (or token) from the first line of standard input
    #[arg(long)]
    pub password_stdin: bool,
}

#[derive(Args, Debug)]
pub struct PushArgs {
    /// The component file
    pub file: PathBuf,
    /// Where to push it: host[:port]/name:tag (an oci:// prefix is allowed)
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Args, Debug)]
pub struct PullArgs {
    /// What to pull: host[:port]/name:tag or host[:port]/name@sha256:… (an oci:// prefix is allowed)
    pub reference: String,
    /// Also write the component to this file
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Args, Debug)]
pub struct SignArgs {
    /// A component file, or a pushed reference (host[:port]/name:tag or @sha256:…; oci:// allowed)
    pub target: String,
    /// The private key (PEM P-256, PKCS#8 or SEC1)
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct NewArgs {
    /// The project's name (lower case, `-` or `_` between words): its folder and the tool's name
    pub name: String,
    /// The language: rust, python or js
    #[arg(long, value_enum)]
    pub lang: crate::guest::Lang,
    /// Where to make it (default: ./NAME)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The project folder (default: the current one)
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct WitArgs {
    /// Write the package's .wit files into this folder (created if needed) instead of printing them
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// List what this session is offered: `basic` and the tool groups its `reset_tools` activated
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
}

#[derive(Args, Debug)]
pub struct DescribeArgs {
    /// The tool name
    pub tool: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CallArgs {
    /// The tool name
    pub tool: String,
    /// The input, a JSON object [default: {}]; `-` reads it from stdin
    pub input: Option<String>,
    /// Keep agent state (read cache, tasks) between invocations under this name
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// Print events as JSON lines instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// The event `call` printed (a file, or - for stdin)
    #[arg(long, value_name = "FILE")]
    pub event: PathBuf,
    /// The result: {"output": "...", "state": "success", "metadata": {...}} (a file, or - for stdin)
    #[arg(long, value_name = "FILE")]
    pub result: PathBuf,
    /// Print the response as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A JSON list of calls: [{"id": "1", "tool": "Read", "input": {...}}, ...] (a file, or - for stdin)
    pub calls: PathBuf,
    /// Keep agent state between invocations under this name
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The tool name (not with --batch)
    pub tool: Option<String>,
    /// The input JSON (not with --batch)
    pub input: Option<String>,
    /// Read JSON Lines requests on stdin, write one JSON line per request
    #[arg(long, conflicts_with_all = ["tool", "input"])]
    pub batch: bool,
    /// Print the decision as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The component file
    pub file: PathBuf,
    /// A newer version of it: print what it declares beyond FILE (the capability diff a reload holds back)
    #[arg(value_name = "NEW")]
    pub new: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}
