//! Hostile upstream MCP servers (`mcp_fixture --hostile MODE --count FILE`),
//! spoken to over stdio by toolhost as a `[mcp_servers.NAME]`: plain rmcp
//! servers that break the protocol's good manners on purpose. Each appends
//! one line per event to FILE, which the tests read as the canary:
//! `start` when the process starts, `list` for each `tools/list` page it
//! answers, `storm N MS` after sending N list_changed notifications in MS
//! milliseconds.
//!
//! - `endless-pages`: every `tools/list` page holds 500 tools and a
//!   `nextCursor`, for ever.
//! - `empty-pages`: every page holds no tool and a `nextCursor`.
//! - `storm`: the tool `storm` sends `{"notifications": N}` list_changed
//!   notifications as fast as it can; from then on the list also holds
//!   `after_storm`.
//! - `failing-list`: every `tools/list` fails with an error whose message
//!   is [`toolhost_e2e::shown::HOSTILE`].

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Result, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};

/// Tools on each page of `endless-pages`.
const PAGE_TOOLS: usize = 500;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    EndlessPages,
    EmptyPages,
    Storm,
    FailingList,
}

#[derive(Clone)]
struct Hostile {
    mode: Mode,
    count: Arc<PathBuf>,
    stormed: Arc<AtomicBool>,
}

impl Hostile {
    fn note(&self, line: &str) {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&*self.count).expect("count file");
        writeln!(file, "{line}").expect("writing the count file");
    }
}

fn schema() -> Arc<serde_json::Map<String, serde_json::Value>> {
    let serde_json::Value::Object(schema) = serde_json::json!({"type": "object", "properties": {}}) else {
        unreachable!()
    };
    Arc::new(schema)
}

impl ServerHandler for Hostile {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.note("list");
        let page: u64 = request.and_then(|r| r.cursor).and_then(|c| c.parse().ok()).unwrap_or(0);
        let mut tools = Vec::new();
        match self.mode {
            Mode::EndlessPages => {
                for i in 0..PAGE_TOOLS {
                    let description = format!("Tool {i} of page {page}, one of endlessly many. {}", "x".repeat(200));
                    tools.push(Tool::new(format!("p{page}_{i}"), description, schema()));
                }
            }
            Mode::EmptyPages => {}
            Mode::FailingList => {
                return Err(ErrorData::internal_error(format!("cannot list{}", toolhost_e2e::shown::HOSTILE), None));
            }
            Mode::Storm => {
                tools.push(Tool::new("storm", "Sends list_changed notifications.", schema()));
                if self.stormed.load(Ordering::SeqCst) {
                    tools.push(Tool::new("after_storm", "Listed once the storm is over.", schema()));
                }
                return Ok(ListToolsResult::with_all_items(tools));
            }
        }
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = Some((page + 1).to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let n = params.arguments.as_ref().and_then(|a| a.get("notifications")).and_then(|n| n.as_u64()).unwrap_or(1000);
        let start = Instant::now();
        for i in 0..n {
            // The last change comes after the storm: the list then holds `after_storm`.
            if i + 1 == n {
                self.stormed.store(true, Ordering::SeqCst);
            }
            let _ = ctx.peer.notify_tool_list_changed().await;
        }
        self.note(&format!("storm {n} {}", start.elapsed().as_millis()));
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("sent {n}"))]).into())
    }
}

/// Serves `mode` over stdio, noting events in `count`.
pub async fn serve(mode: &str, count: PathBuf) -> Result<()> {
    let mode = match mode {
        "endless-pages" => Mode::EndlessPages,
        "empty-pages" => Mode::EmptyPages,
        "storm" => Mode::Storm,
        "failing-list" => Mode::FailingList,
        other => bail!("unknown hostile mode {other}"),
    };
    let server = Hostile { mode, count: Arc::new(count), stormed: Arc::default() };
    server.note("start");
    server.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}
