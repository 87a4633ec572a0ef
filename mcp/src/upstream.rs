//! Tools of upstream MCP servers (`[mcp_servers.NAME]`): the rmcp client
//! side of toolhost, implementing the library's seam
//! [`toolhost::execution::upstream::UpstreamServer`].
//!
//! [`connect_servers`] starts (or reaches) every configured server, lists
//! its tools and offers them through
//! [`Toolhost::offer_upstream_tools`]; a server that cannot be started is
//! reported and offers nothing (a `toolhost` command tries again when it
//! next runs). A long-running front end (`toolhost serve`) uses
//! [`connect_servers_retrying`]: a server that did not start is tried again
//! in the background with a growing delay ([`Retry`]), each failure logged,
//! and its tools are offered as soon as it comes up (a tool-list change,
//! which serve's clients are told of). A server that died after it was
//! listed is started again by the next call of one of its tools. Its
//! `notifications/tools/list_changed` makes toolhost list it again and
//! offer the new set, which moves [`Toolhost::tool_list_changes`] (and so
//! the list_changed toolhost sends its own MCP clients).
//!
//! The client speaks 2025-11-25 (`initialize`), where a server's
//! list-changed notifications need no subscription.
//!
//! A stdio server's process gets a scrubbed environment: the variables of
//! [`toolhost::capability::INHERITED_ENV`] (`PATH`, `HOME`, `LANG`, …)
//! from toolhost's, then the table's `env`; nothing else (no API key of
//! toolhost's own environment reaches it unless the user passes it). Its
//! stderr is discarded, and it is killed when toolhost drops the
//! connection.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::Value;
use tokio::sync::Mutex;
use toolhost::Toolhost;
use toolhost::execution::upstream::UpstreamServer;
use toolhost::settings::McpServerSettings;

/// A running connection to one server.
type Service = RunningService<RoleClient, Notified>;

/// Starts every configured upstream server and offers its tools. Returns
/// one line per problem: a server that did not start (with the cause and
/// what to check), a tool that was not offered. Servers are started at
/// once, each bounded by its `startup_timeout_ms`.
pub async fn connect_servers(host: &Toolhost) -> Vec<String> {
    connect_servers_where(host, |_| true).await
}

/// Like [`connect_servers`], for the servers whose name `wanted` accepts
/// (a front end that runs one tool starts only the server it belongs to).
pub async fn connect_servers_where(host: &Toolhost, wanted: impl Fn(&str) -> bool) -> Vec<String> {
    connect(host, wanted, None).await
}

/// How a long-running front end keeps trying a server that did not start:
/// the first retry `first` after the failure, each wait twice the one
/// before up to `longest`, at most `attempts` retries; then it gives up
/// until the front end is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// The wait before the first retry.
    pub first: Duration,
    /// The longest wait between two retries.
    pub longest: Duration,
    /// How many retries at most.
    pub attempts: u32,
}

impl Default for Retry {
    /// 1 s, 2 s, 4 s, … up to a minute between retries, 20 retries (about
    /// a quarter of an hour).
    fn default() -> Self {
        Self { first: Duration::from_secs(1), longest: Duration::from_secs(60), attempts: 20 }
    }
}

/// Like [`connect_servers`], and each server that does not start is tried
/// again in the background as `retry` says, every failure logged (`warn`)
/// with its cause and the next wait; once it starts its tools are offered
/// (which moves [`Toolhost::tool_list_changes`]). Returns the problems of
/// the first attempt. For `toolhost serve`.
pub async fn connect_servers_retrying(host: &Toolhost, retry: Retry) -> Vec<String> {
    connect(host, |_| true, Some(retry)).await
}

async fn connect(host: &Toolhost, wanted: impl Fn(&str) -> bool, retry: Option<Retry>) -> Vec<String> {
    let servers: Vec<Arc<Upstream>> = host
        .mcp_servers()
        .iter()
        .filter(|(name, _)| wanted(name))
        .map(|(name, settings)| Upstream::new(host.clone(), name.clone(), settings.clone()))
        .collect();
    let results = futures::future::join_all(servers.iter().map(|s| s.clone().refresh())).await;
    let mut problems = Vec::new();
    for (server, result) in servers.into_iter().zip(results) {
        match result {
            Ok(not_offered) => problems.extend(not_offered),
            Err(unavailable) => {
                problems.push(unavailable);
                if let Some(retry) = retry {
                    tokio::spawn(server.keep_starting(retry));
                }
            }
        }
    }
    problems
}

/// One upstream server: its settings, and its connection while it runs.
pub struct Upstream {
    host: Toolhost,
    name: String,
    settings: McpServerSettings,
    service: Mutex<Option<Arc<Service>>>,
    /// Itself, for the notification handler of each new connection.
    me: std::sync::Weak<Upstream>,
}

impl Upstream {
    fn new(host: Toolhost, name: String, settings: McpServerSettings) -> Arc<Self> {
        Arc::new_cyclic(|me| Self { host, name, settings, service: Mutex::new(None), me: me.clone() })
    }

    /// Lists the server's tools (starting it if need be) and offers them:
    /// the tools that were not offered, or why the server cannot be
    /// reached (then it offers nothing).
    async fn refresh(self: Arc<Self>) -> Result<Vec<String>, String> {
        let listed = async {
            let service = self.running().await?;
            tokio::time::timeout(self.settings.startup_timeout(), service.peer().list_all_tools())
                .await
                .map_err(|_| format!("it did not list its tools within {:?}", self.settings.startup_timeout()))?
                .map_err(|e| format!("listing its tools failed: {e}"))
        }
        .await;
        match listed {
            Ok(tools) => {
                let listing: Vec<Value> = tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
                Ok(self.host.offer_upstream_tools(&self.name, &listing, self.clone()))
            }
            Err(e) => {
                self.host.withdraw_upstream_tools(&self.name);
                Err(format!("MCP server {} is not available, its tools are not offered: {e}", self.name))
            }
        }
    }

    /// Tries the server again after each wait of `retry` until it starts
    /// (its tools are then offered) or the retries run out.
    async fn keep_starting(self: Arc<Self>, retry: Retry) {
        let mut wait = retry.first;
        for attempt in 1..=retry.attempts {
            tokio::time::sleep(wait).await;
            match self.clone().refresh().await {
                Ok(not_offered) => {
                    tracing::info!("MCP server {} started (retry {attempt}); its tools are offered", self.name);
                    not_offered.iter().for_each(|problem| tracing::warn!("{problem}"));
                    return;
                }
                Err(unavailable) if attempt < retry.attempts => {
                    wait = (wait * 2).min(retry.longest);
                    tracing::warn!(
                        "{unavailable} (retry {attempt} of {}; the next in {} s)",
                        retry.attempts,
                        wait.as_secs_f64()
                    );
                }
                Err(unavailable) => tracing::warn!(
                    "{unavailable} (retry {attempt} of {}, the last: restart toolhost serve to try again)",
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
        *slot = None;
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
            for key in toolhost::capability::INHERITED_ENV {
                if let Some(value) = std::env::var_os(key) {
                    cmd.env(key, value);
                }
            }
            cmd.envs(&self.settings.env);
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
                let name = axum::http::HeaderName::try_from(key.as_str())
                    .map_err(|e| format!("header `{key}` is not a valid header name: {e}"))?;
                let value = axum::http::HeaderValue::try_from(value.as_str())
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
            let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
            match service.peer().call_tool(params).await {
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
        let Some(upstream) = self.upstream.upgrade() else { return };
        // Off the connection's task: listing waits for that task to read
        // the answer.
        tokio::spawn(async move {
            match upstream.clone().refresh().await {
                Ok(problems) => problems.iter().for_each(|problem| tracing::warn!("{problem}")),
                Err(unavailable) => tracing::warn!("{unavailable}"),
            }
        });
    }
}
