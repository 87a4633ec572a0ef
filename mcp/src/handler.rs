//! The MCP server handler: lists the host's tools and runs calls.

use std::sync::Arc;

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitResult, Implementation, InputRequest, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSendError};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolhost::audit::Caller;
use toolhost::{CallRequest, Toolhost};

use crate::asks::{Answer, Rounds};
use crate::call::{Asker, Driven, drive};
use crate::changes::forward;
use crate::keyring::Keyring;
use crate::logs::{Logs, Threshold};
use crate::session::SessionGuard;
use crate::tools::{error_result, mcp_tool};
use toolhost::coordination::{MemoryNonces, NonceStore};
use toolhost::state::SessionStates;

/// Serves one [`Toolhost`] to MCP clients. Cheap to clone; each clone made
/// by [`McpFront::for_new_session`] has its own agent state.
#[derive(Clone)]
pub struct McpFront {
    pub(crate) shared: Arc<Shared>,
    session: Arc<SessionGuard>,
    /// This session's `logging/setLevel`.
    log_level: Arc<Threshold>,
}

pub(crate) struct Shared {
    pub(crate) host: Toolhost,
    pub(crate) states: SessionStates,
    rounds: Rounds,
    /// Fired by [`McpFront::stop_new_work`]: no new calls, listeners end.
    pub(crate) stopping: CancellationToken,
    /// The calls running now.
    calls: TaskTracker,
    /// The server's own messages to its clients ([`McpFront::forward_reload_errors`]).
    pub(crate) logs: Logs,
    /// What the other replicas of the deployment report ([`McpFront::share_events`]).
    pub(crate) fanout: crate::fanout::Fanout,
    /// The records that let any replica take a session ([`McpFront::share_sessions`]).
    pub(crate) sessions: std::sync::OnceLock<crate::shared_sessions::SharedSessions>,
}

impl McpFront {
    /// A front for `host` whose sessions keep their agent states as
    /// `states` says, for one process: its pending questions' nonces in its
    /// memory and a key of its own to seal them.
    pub fn new(host: Toolhost, states: SessionStates) -> anyhow::Result<Self> {
        Self::for_deployment(host, states, Arc::new(MemoryNonces::default()), &Keyring::generate("process")?)
    }

    /// A front for `host` that shares with the other processes of a
    /// deployment: agent states as `states` says, the nonces of pending
    /// questions in `nonces`, and `keyring` to seal and open them, so that
    /// a question asked through one process is answered, once, through any.
    pub fn for_deployment(
        host: Toolhost,
        states: SessionStates,
        nonces: Arc<dyn NonceStore>,
        keyring: &Keyring,
    ) -> anyhow::Result<Self> {
        let policy = host.policy_digest();
        let shared = Arc::new(Shared {
            host,
            states: states.clone(),
            rounds: Rounds::new(nonces, keyring, policy)?,
            stopping: CancellationToken::new(),
            calls: TaskTracker::new(),
            logs: Logs::new(),
            fanout: crate::fanout::Fanout::new(),
            sessions: std::sync::OnceLock::new(),
        });
        Ok(Self { session: Arc::new(SessionGuard::new(states)), shared, log_level: Arc::default() })
    }

    /// Lets any replica of the deployment take this front's 2025-11-25
    /// sessions over HTTP: their `initialize` parameters are kept in `store`
    /// for `idle` without use (renewed while used), a replica that never saw
    /// a session restores it from there, their streams' events are kept
    /// there sealed with `keyring` (a stream cut on one replica resumes on
    /// another), and a `DELETE` through any replica ends a session on all
    /// ([`McpFront::share_events`] carries that).
    /// The states should outlive this process's workers
    /// ([`SessionStates::across_processes`]). Set before serving.
    pub fn share_sessions<S>(&self, store: Arc<S>, keyring: &Keyring, idle: std::time::Duration)
    where
        S: toolhost::coordination::RecordStore + toolhost::coordination::EventLog,
    {
        let ids = self.request_ids_of_host();
        let events = Arc::new(crate::http::event_log::SharedEvents::new(store.clone(), keyring, idle, ids));
        let _ = self.shared.sessions.set(crate::shared_sessions::SharedSessions::new(store, events, idle));
    }

    /// This replica's request ids made the deployment's, when sessions are
    /// shared (`http/crossing.rs`).
    pub(crate) fn request_ids(&self) -> Option<crate::http::crossing::RequestIds> {
        self.shared.sessions.get()?;
        self.request_ids_of_host()
    }

    fn request_ids_of_host(&self) -> Option<crate::http::crossing::RequestIds> {
        Some(crate::http::crossing::RequestIds { replica: self.shared.host.replica_id()?.to_string() })
    }

    /// Forwards `answer`, posted here in the session with SHA-256 `session`,
    /// to the replica `owner` whose worker asked.
    pub(crate) async fn forward_answer(
        &self,
        owner: String,
        session: String,
        answer: &rmcp::model::ClientJsonRpcMessage,
    ) {
        let Some(sessions) = self.shared.sessions.get() else { return };
        self.shared.fanout.forward_answer(&sessions.events.sealer, owner, session, answer).await;
    }

    /// The shared log of the sessions' events, when sessions are shared.
    pub(crate) fn event_store(&self) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        Some(self.shared.sessions.get()?.events.clone())
    }

    /// rmcp's session store over the shared records, when they are shared.
    pub(crate) fn session_store(
        &self,
    ) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::SessionStore>> {
        self.shared.sessions.get()?;
        Some(Arc::new(crate::shared_sessions::RestorableSessions(self.shared.clone())))
    }

    /// The same host for a new MCP session, with a state of its own (the
    /// state ends when the last clone of the returned front is dropped).
    pub fn for_new_session(&self) -> Self {
        let guard = SessionGuard::new(self.shared.states.clone());
        Self { shared: self.shared.clone(), session: Arc::new(guard), log_level: Arc::default() }
    }

    /// Sends every reload error of `errors` (a watching host's
    /// [`toolhost::reload::Watcher::reload_errors`]) to the connected clients
    /// as a log message (`notifications/message`, level `error`, logger
    /// `toolhost.reload`, the file, name and error as data), until the
    /// server stops. Clients of 2026-07-28, where logging is deprecated, get
    /// none (see `toolhost status`).
    pub fn forward_reload_errors(
        &self,
        mut errors: tokio::sync::broadcast::Receiver<toolhost::reload::FileStatus>,
    ) -> tokio::task::JoinHandle<()> {
        let shared = self.shared.clone();
        tokio::spawn(async move {
            loop {
                let status = tokio::select! {
                    () = shared.stopping.cancelled() => return,
                    status = errors.recv() => status,
                };
                match status {
                    Ok(status) => {
                        if shared.fanout.first_report(&status)
                            && let Some(message) = crate::logs::reload_error(&status)
                        {
                            shared.logs.send(message);
                            shared.fanout.publish_reload_error(&status).await;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!("{missed} reload errors came faster than they could be sent to MCP clients");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        })
    }

    /// The first step of a graceful stop: calls that arrive from now on are
    /// refused, and `subscriptions/listen` streams end (their final result
    /// is sent). Running calls go on.
    pub fn stop_new_work(&self) {
        self.shared.stopping.cancel();
        self.shared.calls.close();
    }

    /// Waits until no call runs, at most `grace`; returns whether they all
    /// finished (the rest are cancelled by the transport afterwards).
    pub async fn drain(&self, grace: std::time::Duration) -> bool {
        self.shared.calls.close();
        tokio::time::timeout(grace, self.shared.calls.wait()).await.is_ok()
    }

    /// Whether this process can take calls now; `Err` names what it waits
    /// for: `stopping` (a graceful stop began), `loading` (plugins still
    /// loading in the background) or `state-store` (the shared state store
    /// does not answer).
    pub async fn readiness(&self) -> Result<(), &'static str> {
        if self.shared.stopping.is_cancelled() {
            return Err("stopping");
        }
        if !self.shared.host.pending_loads().is_empty() {
            return Err("loading");
        }
        self.shared.states.store().check().await.map_err(|_| "state-store")
    }

    /// The host served.
    pub fn host(&self) -> &Toolhost {
        &self.shared.host
    }
}

/// Whether the request speaks 2026-07-28 (or later): sessionless, no
/// server-to-client requests.
fn is_2026(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version().is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Who makes a request, for the audit log: the transport, the protocol
/// version, and a digest of the HTTP session's id (never the id: whoever
/// reads it could act in the session).
/// The `Mcp-Session-Id` of a 2025-11-25 HTTP request (none over stdio).
fn session_id(ctx: &RequestContext<RoleServer>) -> Option<&str> {
    let http = ctx.extensions.get::<axum::http::request::Parts>()?;
    http.headers.get("mcp-session-id")?.to_str().ok()
}

fn caller(ctx: &RequestContext<RoleServer>) -> Caller {
    let http = ctx.extensions.get::<axum::http::request::Parts>();
    let session = session_id(ctx).map(|id| {
        let digest = Sha256::digest(id.as_bytes());
        format!("sha256:{}", hex::encode(&digest[..8]))
    });
    Caller {
        front: (if http.is_some() { "mcp-http" } else { "mcp-stdio" }).to_string(),
        protocol: ctx.protocol_version().map(|v| v.as_str().to_string()),
        session,
    }
}

/// Whether the client declared form elicitation (for this request in
/// 2026-07-28, at `initialize` before).
fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities().and_then(|c| c.elicitation).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

impl ServerHandler for McpFront {
    // `logging` is deprecated from 2026-07-28 (SEP-2577); 2025-11-25 clients
    // still get the server's own messages (`logs.rs`).
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_logging().enable_tools().enable_tool_list_changed().build(),
        )
        .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "toolhost runs each tool as a sandboxed WebAssembly component; the user's permission rules decide \
                 every call. A denied call's text says which rule would allow it.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Only `basic` and the session's active tool groups are offered.
        let state = self.session_state(&ctx);
        let infos = self
            .shared
            .host
            .available(Some(&state))
            .await
            .map_err(|e| ErrorData::internal_error(format!("listing the tools failed: {e}"), None))?;
        Ok(ListToolsResult::with_all_items(infos.iter().map(mcp_tool).collect()))
    }

    /// 2025-11-25 and earlier: once the client is initialised, each change
    /// of the tool set is a `notifications/tools/list_changed` to it (a
    /// plugin that finished loading in the background too), until the
    /// session ends or the server stops; so is every plugin file whose
    /// background load failed, as an `error` log message (logger
    /// `toolhost.load`).
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let changes = self.shared.host.tool_list_changes();
        let remote = self.shared.fanout.remote_changes();
        let until = self.session.ended.clone();
        let stopping = self.shared.stopping.clone();
        let peer = context.peer;
        tokio::spawn(crate::logs::forward_to(
            self.shared.logs.subscribe(),
            self.log_level.clone(),
            [until.clone(), stopping.clone()],
            peer.clone(),
        ));
        tokio::spawn(crate::logs::forward_load_failures(
            self.shared.host.clone(),
            self.log_level.clone(),
            [until.clone(), stopping.clone()],
            peer.clone(),
        ));
        tokio::spawn(async move {
            forward(changes, vec![remote], [&until, &stopping], || {
                let peer = peer.clone();
                async move { peer.notify_tool_list_changed().await.is_ok() }
            })
            .await;
        });
    }

    /// 2025-11-25 and earlier: the lowest level of the log messages this
    /// session is sent (see `logs.rs`).
    #[allow(deprecated)] // logging is deprecated from 2026-07-28 (SEP-2577)
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.set(&request.level);
        Ok(())
    }

    /// 2026-07-28: a `subscriptions/listen` for tool-list changes is
    /// accepted (nothing else is served).
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        (requested.tools_list_changed == Some(true)).then(|| SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// Forwards each change of what this client is offered to this
    /// subscription until the client closes it or the server stops: the
    /// host's tool set, and the groups `reset_tools` turns on and off in the
    /// agent state 2026-07-28 requests share.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink().clone();
        let closed = context.request_context().ct.clone();
        let groups = self.shared.states.state(self.shared.states.sessionless_key()).group_changes();
        let others = vec![groups, self.shared.fanout.remote_changes()];
        forward(self.shared.host.tool_list_changes(), others, [&closed, &self.shared.stopping], || {
            let sink = sink.clone();
            async move {
                match sink.notify_tool_list_changed().await {
                    Ok(()) => true,
                    Err(SubscriptionSendError::SubscriptionClosed) => false,
                    Err(e) => {
                        tracing::warn!("sending tools/list_changed failed: {e}");
                        false
                    }
                }
            }
        })
        .await;
        Ok(())
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let host = &self.shared.host;
        if self.shared.stopping.is_cancelled() {
            return Ok(error_result("toolhost is stopping and takes no new calls; call again once it is back.").into());
        }
        // Counted until it returns: a graceful stop waits for it.
        let _running = self.shared.calls.token();
        let tool = params.name.to_string();
        // A plugin loading in the background may be the one: the call
        // waits for it (at most its timeout) in the library.
        if !host.is_registered(&tool) && host.pending_loads().is_empty() {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool '{tool}'; tools/list names the tools this server has"),
                None,
            ));
        }
        let args = Value::Object(params.arguments.clone().unwrap_or_default());
        let modern = is_2026(&ctx);
        let elicits = can_elicit(&ctx);
        let answers = match (&params.request_state, modern) {
            (Some(sealed), true) => match self.answers_of_round(sealed, &tool, &args, &params).await {
                Ok(answers) => answers,
                Err(text) => return Ok(error_result(text).into()),
            },
            _ => Vec::new(),
        };
        let asker = match (modern, elicits) {
            (_, false) => Asker::Nobody,
            (true, true) => Asker::Rounds(&answers),
            (false, true) => Asker::Elicit,
        };
        let state = Arc::new(self.session_state(&ctx));
        let group_changes = state.group_changes();
        let mut request = CallRequest::new(&tool, args.to_string()).session(state).caller(caller(&ctx));
        if let Some(parent) = crate::trace_context::from_request(&ctx) {
            request = request.trace_parent(parent);
        }
        let driven = drive(host, request, &ctx, asker).await;
        // `reset_tools` changed what this session is offered: tell its
        // client. (2026-07-28 forbids this mid-request message; its
        // `subscriptions/listen` streams follow the sessionless state's
        // `group_changes` instead, see `listen`.)
        if group_changes.has_changed().unwrap_or(false)
            && !modern
            && let Err(e) = ctx.peer.notify_tool_list_changed().await
        {
            tracing::warn!("telling the client its tool list changed failed: {e}");
        }
        match driven {
            Driven::Done(result) => Ok(result.into()),
            Driven::NeedsInput(pending, form) => {
                let key = pending.key();
                let sealed = match self.shared.rounds.seal(&tool, &args, answers, pending).await {
                    Ok(sealed) => sealed,
                    Err(text) => return Ok(error_result(text).into()),
                };
                let request = InputRequest::Elicitation(rmcp::model::ElicitRequest::new(form));
                let requests = InputRequests::from([(key.to_string(), request)]);
                Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
            }
        }
    }
}

impl McpFront {
    /// The agent state a request uses: its MCP session's, or the one shared
    /// by sessionless (2026-07-28) requests.
    fn session_state(&self, ctx: &RequestContext<RoleServer>) -> toolhost::state::AgentState {
        let states = &self.shared.states;
        if is_2026(ctx) {
            return states.state(states.sessionless_key());
        }
        let session_id = session_id(ctx);
        if let (Some(id), Some(sessions)) = (session_id, self.shared.sessions.get()) {
            sessions.keep(id);
        }
        states.state(self.session.key(session_id))
    }

    /// The answers so far of a 2026-07-28 retry: opens its sealed state
    /// (consuming the round's nonce) and adds the client's answer to the
    /// round's question.
    async fn answers_of_round(
        &self,
        sealed: &str,
        tool: &str,
        args: &Value,
        params: &CallToolRequestParams,
    ) -> Result<Vec<Answer>, String> {
        let state = self.shared.rounds.open(sealed, tool, args).await?;
        let response = params
            .input_responses
            .as_ref()
            .and_then(|r| r.get(state.pending.key()))
            .ok_or_else(|| format!("the retry carries no answer under '{}'", state.pending.key()))?;
        let response: ElicitResult = serde_json::from_value(response.clone())
            .map_err(|e| format!("the answer is not an elicitation result: {e}"))?;
        let mut answers = state.answers;
        answers.push(state.pending.answer(&response));
        Ok(answers)
    }
}
