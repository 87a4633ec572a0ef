//! `toolhost call` and `toolhost resume`.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use toolhost::response::{ContentBlock, ResultState, ToolResponse};
use toolhost::settings::Settings;
use toolhost::state::{AgentState, FileStore, MemoryStore, StateKey, StateStore};
use toolhost::{CallEvent, CallRequest, ExternalCall, ExternalResult, PermissionAnswer};

use super::args::{CallArgs, Global, ResumeArgs};
use super::{ask_user, exit, prompt, shown};
use crate::out::outln;

pub async fn call(global: &Global, args: CallArgs) -> Result<u8> {
    // Only the upstream MCP server the tool belongs to is started.
    let host = global.host_with(|server| is_server_of(server, &args.tool)).await?;
    let input = match args.input.as_deref() {
        None => "{}".to_string(),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).context("reading the input from stdin")?;
            s
        }
        Some(text) => text.to_string(),
    };
    let session = match &args.session {
        Some(name) => Some(open_session(host.settings(), name).await?),
        None => None,
    };
    let mut request = CallRequest::new(&args.tool, input);
    if let Some(state) = &session {
        request = request.session(state.clone());
    }
    let remember_target = prompt::remember_target(&host);
    let mut stream = host.call(request);
    let mut stdout = crate::out::stdout();
    // Output on a terminal is shown with its control characters escaped;
    // piped, it is passed on byte for byte.
    let terminal = stdout.is_terminal();
    let mut code = exit::ERROR;
    let mut refusal: Option<String> = None;
    while let Some(event) = stream.next().await {
        match event {
            CallEvent::Chunk(chunk) => {
                if args.json {
                    writeln!(stdout, "{}", serde_json::json!({"type": "chunk", "chunk": chunk}))?;
                } else {
                    for block in &chunk.content {
                        match block {
                            ContentBlock::Text { text } if terminal => write!(stdout, "{}", shown::block(text))?,
                            ContentBlock::Text { text } => write!(stdout, "{text}")?,
                            ContentBlock::Data { media_type, data, name, .. } => writeln!(
                                stdout,
                                "[{}, {} bytes{}]",
                                shown::line(media_type),
                                data.len(),
                                name.as_deref().map(|n| format!(", {}", shown::line(n))).unwrap_or_default()
                            )?,
                        }
                    }
                }
                stdout.flush()?;
            }
            CallEvent::RememberFailed { message, .. } => eprintln!("warning: {}", shown::line(&message)),
            CallEvent::PermissionRequest(req) => {
                let answer = if prompt::interactive() {
                    prompt::ask(&host, &req, &remember_target)
                } else {
                    refusal = Some(prompt::not_asked(&req.tool, &req.decision));
                    PermissionAnswer::Deny
                };
                req.answer(answer);
            }
            CallEvent::ExternalExecution(ext) if ext.tool == "AskUser" && prompt::interactive() => {
                let stdin = std::io::stdin();
                let result = ask_user::ask(&ext.input, stdin.lock(), std::io::stderr())?;
                let response = host.complete_external(&ext, result)?;
                if args.json {
                    writeln!(stdout, "{}", serde_json::json!({"type": "response", "response": response}))?;
                } else {
                    writeln!(stdout, "{}", shown::block(&response.text()))?;
                }
                code = exit::OK;
            }
            CallEvent::ExternalExecution(ext) => {
                writeln!(stdout, "{}", serde_json::to_string(&ext)?)?;
                eprintln!(
                    "{} requires external execution: carry it out, then run `toolhost resume --event EVENT.json --result RESULT.json`",
                    ext.tool
                );
                code = exit::EXTERNAL;
            }
            CallEvent::Finished(response) => {
                if args.json {
                    writeln!(stdout, "{}", serde_json::json!({"type": "response", "response": response}))?;
                } else if response.state == ResultState::Denied {
                    // The denial text is the response's content; make sure it is seen.
                    let text = refusal.take().unwrap_or_else(|| response.text());
                    eprintln!("{}", shown::block(&text));
                } else if !response.text().ends_with('\n') && !response.content.is_empty() {
                    writeln!(stdout)?;
                }
                code = match response.state {
                    ResultState::Success | ResultState::Running => exit::OK,
                    ResultState::Denied => exit::DENIED,
                    ResultState::Error | ResultState::Interrupted => exit::ERROR,
                };
            }
        }
    }
    Ok(code)
}

/// The session `name`: in the shared store when `[state] store = "redis"`,
/// else in `<state_dir>/<name>.json`, held for this process (a second
/// process is refused; see [`FileStore`]).
pub async fn open_session(settings: &Settings, name: &str) -> Result<Arc<AgentState>> {
    let shared = crate::state_store::shared(settings, false).await?;
    open_session_in(settings, shared.map(|s| s as Arc<dyn StateStore>), name).await
}

/// [`open_session`] with the shared store already reached (`None`: local).
pub async fn open_session_in(
    settings: &Settings,
    shared: Option<Arc<dyn StateStore>>,
    name: &str,
) -> Result<Arc<AgentState>> {
    let key = StateKey::named(name)?;
    let store = shared.unwrap_or_else(|| file_sessions(settings));
    Ok(Arc::new(AgentState::open(store, key).await?))
}

/// The session `name` as it is now, to read only: in the shared store, or
/// a copy in memory of its file, so that a process holding the file does
/// not refuse it and nothing is saved.
pub async fn peek_session(settings: &Settings, name: &str) -> Result<Arc<AgentState>> {
    let key = StateKey::named(name)?;
    if let Some(shared) = crate::state_store::shared(settings, false).await? {
        return Ok(Arc::new(AgentState::in_store(shared as Arc<dyn StateStore>, key)));
    }
    let saved = file_sessions(settings).saved(&key)?;
    Ok(Arc::new(AgentState::in_store(Arc::new(MemoryStore::with_state(key.clone(), saved)), key)))
}

/// The store of named sessions in `<state_dir>`, warning when sessions of
/// an earlier toolhost are left in the old place.
fn file_sessions(settings: &Settings) -> Arc<FileStore> {
    let dir = settings.state_dir();
    if let Some(old) = settings.old_sessions_dir() {
        eprintln!(
            "warning: sessions of an earlier toolhost are in {old}, which is no longer read (sessions now live in \
             {new}, outside the working directories); move them with: mkdir -p '{new}' && mv '{old}'/*.json '{new}'/",
            old = old.display(),
            new = dir.display()
        );
    }
    Arc::new(FileStore::new(dir))
}

pub fn read_json_arg<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading the {what} from {}", path.display()))?
    };
    serde_json::from_str(&text).with_context(|| format!("the {what} in {} is not valid", path.display()))
}

pub async fn resume(global: &Global, args: ResumeArgs) -> Result<u8> {
    let host = global.host().await?;
    let event: ExternalCall = read_json_arg(&args.event, "event")?;
    let result: ExternalResult = read_json_arg(&args.result, "result")?;
    let response: ToolResponse = host.complete_external(&event, result)?;
    if args.json {
        outln!("{}", serde_json::to_string(&response)?);
    } else {
        outln!("{}", response.text());
    }
    Ok(match response.state {
        ResultState::Success | ResultState::Running => exit::OK,
        ResultState::Denied => exit::DENIED,
        _ => exit::ERROR,
    })
}

/// Whether `tool` is named as a tool of upstream server `server`
/// (`mcp__{server}__…`).
fn is_server_of(server: &str, tool: &str) -> bool {
    tool.strip_prefix("mcp__").and_then(|rest| rest.strip_prefix(server)).is_some_and(|after| after.starts_with("__"))
}
