//! The MCP client that connects `[mcp_servers.NAME]` (rmcp): starts or
//! reaches each configured server, lists its tools and offers them through
//! [`Toolhost::offer_upstream_tools`], and serves their calls as the
//! library's seam [`crate::execution::upstream::UpstreamServer`].
//! [`crate::ToolhostBuilder::build`] runs it as its
//! [`UpstreamStart`] says, so every embedder of the library that reads a
//! `toolhost.toml` gets the same upstream tools as the CLI.
//!
//! A server that cannot be started is reported
//! ([`Toolhost::upstream_problems`]) and offers nothing. With
//! [`UpstreamStart::Retrying`] (`toolhost serve`) it is tried again in the
//! background with a growing delay ([`UpstreamRetry`]), each failure logged, and
//! its tools are offered as soon as it comes up (a tool-list change). A
//! server that died after it was listed is started again by the next call
//! of one of its tools. Its `notifications/tools/list_changed` makes
//! toolhost list it again and offer the new set, which moves
//! [`Toolhost::tool_list_changes`].
//!
//! A server is hostile input, its listing too. The pages of a `tools/list`
//! are read within the bounds of [`crate::catalog::upstream::Listing`]
//! (pages, bytes, tools; a server that pages on for ever stops there, what
//! it listed is offered and the stop reported). A storm of list_changed
//! notifications is coalesced: at most one re-list runs and one waits,
//! [`UPSTREAM_RELIST_INTERVAL`] apart, on the connection that sent them (a
//! notification never starts a server). A problem is reported once: a
//! re-list that finds the same ones logs nothing new. What a server says
//! is logged through the escaper.
//!
//! The client speaks 2025-11-25 (`initialize`), where a server's
//! list-changed notifications need no subscription.
//!
//! A stdio server's process gets a scrubbed environment: the variables of
//! [`crate::capability::INHERITED_ENV`] (`PATH`, `HOME`, `LANG`, …)
//! from toolhost's, then the table's `env`; nothing else (no API key of
//! toolhost's own environment reaches it unless the user passes it). It
//! has no controlling terminal and no descriptor toolhost inherited, its
//! stderr is discarded, and it is killed when toolhost drops the
//! connection.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::Toolhost;
use crate::catalog::upstream::Listing;
use crate::escape::line;
use crate::execution::upstream::UpstreamServer;
use crate::settings::McpServerSettings;
use crate::sync::MutexExt as _;
use crate::telemetry::TraceParent;
use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation, PaginatedRequestParams, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::Value;
use tokio::sync::Mutex;

/// A running connection to one server.
type Service = RunningService<RoleClient, Notified>;

/// The least time between two re-lists of one server that its
/// list_changed notifications ask for: a storm of them lists it at most
/// once per interval.
pub const UPSTREAM_RELIST_INTERVAL: Duration = Duration::from_secs(1);

/// How a host that keeps running tries a server that did not start again:
/// the first retry `first` after the failure, each wait twice the one
/// before up to `longest`, at most `attempts` retries; then it gives up
/// until the front end is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamRetry {
    /// The wait before the first retry.
    pub first: Duration,
    /// The longest wait between two retries.
    pub longest: Duration,
    /// How many retries at most.
    pub attempts: u32,
}

impl Default for UpstreamRetry {
    /// 1 s, 2 s, 4 s, … up to a minute between retries, 20 retries (about
    /// a quarter of an hour).
    fn default() -> Self {
        Self { first: Duration::from_secs(1), longest: Duration::from_secs(60), attempts: 20 }
    }
}

/// Which configured upstream servers [`crate::ToolhostBuilder::build`]
/// starts, and what becomes of one that does not start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum UpstreamStart {
    /// Every configured server, at once, each bounded by its
    /// `startup_timeout_ms`; one that does not start is reported
    /// ([`Toolhost::upstream_problems`]) and offers nothing until the next
    /// call of one of its tools would need it. The default.
    #[default]
    All,
    /// Only the servers named (a front end that runs one tool starts only
    /// the server it belongs to); the others offer nothing.
    Only(BTreeSet<String>),
    /// Every server, and one that does not start is tried again in the
    /// background as the [`UpstreamRetry`] says, every failure logged (`warn`) with its
    /// cause and the next wait; once it starts its tools are offered (which
    /// moves [`Toolhost::tool_list_changes`]). For a host that keeps
    /// running (`toolhost serve`).
    Retrying(UpstreamRetry),
    /// No server: the host offers no upstream tool.
    None,
}

impl UpstreamStart {
    fn wants(&self, server: &str) -> bool {
        match self {
            Self::All | Self::Retrying(_) => true,
            Self::Only(names) => names.contains(server),
            Self::None => false,
        }
    }
}

/// Starts the servers `start` names and offers their tools. Returns one
/// line per problem: a server that did not start (with the cause and what
/// to check), a tool that was not offered.
pub(crate) async fn connect(host: &Toolhost, start: &UpstreamStart) -> Vec<String> {
    let servers: Vec<Arc<Upstream>> = host
        .mcp_servers()
        .iter()
        .filter(|(name, _)| start.wants(name))
        .map(|(name, settings)| Upstream::new(host.clone(), name.clone(), settings.clone()))
        .collect();
    let results = futures::future::join_all(servers.iter().map(|s| s.clone().refresh())).await;
    let mut problems = Vec::new();
    for (server, result) in servers.into_iter().zip(results) {
        match result {
            Ok(not_offered) => problems.extend(not_offered),
            Err(unavailable) => match start {
                UpstreamStart::Retrying(retry) => {
                    problems.push(format!("{unavailable} (tried again in the background)"));
                    tokio::spawn(server.keep_starting(*retry));
                }
                _ => problems.push(unavailable),
            },
        }
    }
    problems
}

/// One upstream server: its settings, and its connection while it runs.
struct Upstream {
    host: Toolhost,
    name: String,
    settings: McpServerSettings,
    service: Mutex<Option<Arc<Service>>>,
    /// Itself, for the notification handler of each new connection.
    me: std::sync::Weak<Upstream>,
    /// A re-list waits for its turn (later notifications fold into it).
    relist_queued: AtomicBool,
    /// Held by the re-list that runs; when the last one started.
    relisting: Mutex<Option<tokio::time::Instant>>,
    /// The problems reported last, so that the same ones are not reported
    /// again on every re-list.
    reported: std::sync::Mutex<Vec<String>>,
}

impl Upstream {
    fn new(host: Toolhost, name: String, settings: McpServerSettings) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            host,
            name,
            settings,
            service: Mutex::new(None),
            me: me.clone(),
            relist_queued: AtomicBool::new(false),
            relisting: Mutex::new(None),
            reported: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Lists the server's tools (starting it if need be) and offers them:
    /// the problems not reported before (a bound the listing stopped at, a
    /// tool that was not offered), or why the server cannot be reached
    /// (then it offers nothing).
    async fn refresh(self: Arc<Self>) -> Result<Vec<String>, String> {
        let listed = match self.running().await {
            Ok(service) => self.list(&service).await,
            Err(e) => Err(e),
        };
        self.offer(listed)
    }

    /// Reads the server's `tools/list`, page by page, within the bounds of
    /// its settings and its start-up time: the entries, and the bound the
    /// reading stopped at.
    async fn list(&self, service: &Service) -> Result<(Vec<Value>, Option<String>), String> {
        let timeout = self.settings.startup_timeout();
        let read = async {
            let mut listing = Listing::new(&self.name, &self.settings);
            let mut cursor = None;
            loop {
                let params = PaginatedRequestParams::default().with_cursor(cursor);
                let page = service.peer().list_tools(Some(params)).await;
                let page = page.map_err(|e| format!("listing its tools failed: {e}"))?;
                let bytes = crate::response::json_len(&page);
                cursor = page.next_cursor;
                let tools = page.tools.into_iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
                if !listing.add_page(tools, bytes, cursor.is_some()) {
                    return Ok(listing.finish());
                }
            }
        };
        tokio::time::timeout(timeout, read)
            .await
            .map_err(|_| format!("it did not list its tools within {timeout:?}"))?
    }

    /// Offers what `listed` read (or withdraws the server's tools when it
    /// could not be read).
    fn offer(self: Arc<Self>, listed: Result<(Vec<Value>, Option<String>), String>) -> Result<Vec<String>, String> {
        match listed {
            Ok((listing, stopped)) => {
                let mut problems: Vec<String> = stopped.into_iter().collect();
                problems.extend(self.host.offer_upstream_tools(&self.name, &listing, self.clone()));
                Ok(self.not_reported(problems))
            }
            Err(e) => {
                self.host.withdraw_upstream_tools(&self.name);
                Err(format!("MCP server {} is not available, its tools are not offered: {e}", self.name))
            }
        }
    }

    /// Of `problems`, those the last listing did not report.
    fn not_reported(&self, problems: Vec<String>) -> Vec<String> {
        let mut reported = self.reported.lock_unpoisoned();
        let new = problems.iter().filter(|p| !reported.contains(p)).cloned().collect();
        *reported = problems;
        new
    }

    /// The re-list a list_changed notification asks for, on the connection
    /// that runs now (none: nothing to list; the next call starts the
    /// server again). Coalesced: one runs at a time, [`UPSTREAM_RELIST_INTERVAL`]
    /// after the one before, and notifications that come while one waits
    /// fold into it.
    fn relist_soon(self: Arc<Self>) {
        if self.relist_queued.swap(true, Ordering::SeqCst) {
            return;
        }
        tokio::spawn(async move {
            let mut last = self.relisting.lock().await;
            if let Some(at) = *last {
                tokio::time::sleep_until(at + UPSTREAM_RELIST_INTERVAL).await;
            }
            // A notification from now on asks for another re-list.
            self.relist_queued.store(false, Ordering::SeqCst);
            *last = Some(tokio::time::Instant::now());
            let running = self.service.lock().await.clone().filter(|s| !s.is_closed());
            let Some(service) = running else { return };
            let listed = self.list(&service).await;
            match self.clone().offer(listed) {
                Ok(problems) => problems.iter().for_each(|problem| tracing::warn!("{}", line(problem))),
                Err(unavailable) => tracing::warn!("{}", line(&unavailable)),
            }
        });
    }

    /// Tries the server again after each wait of `retry` until it starts
    /// (its tools are then offered) or the retries run out.
    async fn keep_starting(self: Arc<Self>, retry: UpstreamRetry) {
        let mut wait = retry.first;
        for attempt in 1..=retry.attempts {
            tokio::time::sleep(wait).await;
            match self.clone().refresh().await {
                Ok(not_offered) => {
                    tracing::info!("MCP server {} started (retry {attempt}); its tools are offered", self.name);
                    not_offered.iter().for_each(|problem| tracing::warn!("{}", line(problem)));
                    return;
                }
                Err(unavailable) if attempt < retry.attempts => {
                    wait = (wait * 2).min(retry.longest);
                    tracing::warn!(
                        "{} (retry {attempt} of {}; the next in {} s)",
                        line(&unavailable),
                        retry.attempts,
                        wait.as_secs_f64()
                    );
                }
                Err(unavailable) => tracing::warn!(
                    "{} (retry {attempt} of {}, the last: restart toolhost serve to try again)",
                    line(&unavailable),
                    retry.attempts
                ),
            }
        }
    }

    /// The running connection, started (again) when there is none or the
    /// last one closed.
    async fn running(&self) -> Result<Arc<Service>, String> {
        let mut slot = self.service.lock().await;
        if let Some(service) = slot.as_ref()
            && !service.is_closed()
        {
            return Ok(service.clone());
        }
        // A server that ran before is started again.
        if slot.take().is_some()
            && let Some(telemetry) = self.host.telemetry()
        {
            telemetry.metrics().upstream_restarts.inc();
        }
        let timeout = self.settings.startup_timeout();
        let service = tokio::time::timeout(timeout, self.start()).await.map_err(|_| {
            format!("it did not start within {timeout:?} (raise startup_timeout_ms if it needs longer)")
        })??;
        let service = Arc::new(service);
        *slot = Some(service.clone());
        Ok(service)
    }

    async fn start(&self) -> Result<Service, String> {
        let handler = Notified { upstream: self.me.clone() };
        if let Some(command) = &self.settings.command {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&self.settings.args).env_clear().kill_on_drop(true);
            for key in crate::capability::INHERITED_ENV {
                if let Some(value) = std::env::var_os(key) {
                    cmd.env(key, value);
                }
            }
            cmd.envs(&self.settings.env);
            // SAFETY: `detach_child` makes only async-signal-safe system calls.
            // An upstream server is not trusted: no controlling terminal, no
            // descriptor toolhost inherited.
            unsafe {
                cmd.pre_exec(crate::backend::local::detach_child);
            }
            let (transport, _) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}; check that it is installed and on PATH"))?;
            handler.serve(transport).await.map_err(|e| format!("`{command}` did not complete the MCP handshake: {e}"))
        } else {
            let url = self.settings.url.clone().unwrap_or_default();
            let mut config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str());
            for (key, value) in &self.settings.headers {
                if key.eq_ignore_ascii_case("authorization") {
                    config.auth_header = Some(value.strip_prefix("Bearer ").unwrap_or(value).to_string());
                    continue;
                }
                let name = http::HeaderName::try_from(key.as_str())
                    .map_err(|e| format!("header `{key}` is not a valid header name: {e}"))?;
                let value = http::HeaderValue::try_from(value.as_str())
                    .map_err(|e| format!("the value of header `{key}` is not valid: {e}"))?;
                config.custom_headers.insert(name, value);
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            handler.serve(transport).await.map_err(|e| format!("{url} did not complete the MCP handshake: {e}"))
        }
    }
}

impl UpstreamServer for Upstream {
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: serde_json::Map<String, Value>,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let service =
                self.running().await.map_err(|e| format!("MCP server {} is not available: {e}", self.name))?;
            let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
            let mut span = crate::telemetry::trace::child(|| format!("mcp tools/call {}", self.name));
            if let Some(span) = &span {
                params.meta = Some(request_meta(span.traceparent()));
            }
            let result = service.peer().call_tool(params).await;
            if let (Some(span), Err(_)) = (&mut span, &result) {
                span.fail("the upstream request failed");
            }
            drop(span);
            match result {
                Ok(result) => serde_json::to_value(result).map_err(|e| e.to_string()),
                Err(e) => {
                    if service.is_closed() || matches!(e, rmcp::ServiceError::TransportClosed) {
                        // Started again by the next call.
                        self.service.lock().await.take();
                        return Err(format!(
                            "MCP server {} ended during the call ({e}); it is started again on the next call",
                            self.name
                        ));
                    }
                    Err(format!("MCP server {}: {e}", self.name))
                }
            }
        })
    }
}

/// The client side's handler: the client's identity and protocol version,
/// and list-changed notifications.
#[derive(Clone)]
struct Notified {
    upstream: std::sync::Weak<Upstream>,
}

impl ClientHandler for Notified {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(Default::default(), Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Off the connection's task (listing waits for that task to read
        // the answer), coalesced with the others of a storm.
        if let Some(upstream) = self.upstream.upgrade() {
            upstream.relist_soon();
        }
    }
}

/// A request `_meta` carrying `parent`, so the server's spans continue
/// toolhost's.
fn request_meta(parent: TraceParent) -> rmcp::model::RequestMetaObject {
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_traceparent(&parent.traceparent);
    if let Some(state) = &parent.tracestate {
        meta.set_tracestate(state);
    }
    meta
}
