//! Tools of upstream MCP servers (`[mcp_servers.NAME]`): the rmcp client
//! side of toolhost, implementing the library's seam
//! [`toolhost::execution::upstream::UpstreamServer`].
//!
//! [`connect_servers`] starts (or reaches) every configured server, lists
//! its tools and offers them through
//! [`Toolhost::offer_upstream_tools`]; a server that cannot be started is
//! reported and offers nothing (a `toolhost` command tries again when it
//! next runs; a running `serve` does not offer its tools until restarted).
//! A server that died after it was listed is started again by the next
//! call of one of its tools. Its
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
    let servers: Vec<Arc<Upstream>> = host
        .mcp_servers()
        .iter()
        .filter(|(name, _)| wanted(name))
        .map(|(name, settings)| Upstream::new(host.clone(), name.clone(), settings.clone()))
        .collect();
    let lists = futures::future::join_all(servers.iter().map(|s| s.clone().refresh())).await;
    lists.into_iter().flatten().collect()
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

    /// Lists the server's tools (starting it if need be) and offers them;
    /// the problems found. A server that cannot be reached offers nothing.
    async fn refresh(self: Arc<Self>) -> Vec<String> {
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
                self.host.offer_upstream_tools(&self.name, &listing, self.clone())
            }
            Err(e) => {
                self.host.withdraw_upstream_tools(&self.name);
                vec![format!("MCP server {} is not available, its tools are not offered: {e}", self.name)]
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
            for problem in upstream.clone().refresh().await {
                tracing::warn!("{problem}");
            }
        });
    }
}
