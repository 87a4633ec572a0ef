//! One `tools/call`: drives the library's call stream, turning chunks into
//! progress notifications, asks into elicitations, and the response into
//! an MCP result; the client's cancel drops the stream, which kills the
//! call.

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ElicitRequestParams, ElicitResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use toolhost::response::ResultState;
use toolhost::{CallEvent, CallRequest, ExternalCall, PermissionRequest, Toolhost};

use crate::asks::{self, Answer, Pending};
use crate::tools::{chunk_text, error_result, mcp_result};

/// How asks are put to the user in this call.
pub(crate) enum Asker<'a> {
    /// 2025-11-25 and earlier: `elicitation/create` on the client, while the
    /// call waits.
    Elicit,
    /// 2026-07-28: answers from earlier rounds; a new ask ends this round.
    Rounds(&'a [Answer]),
    /// The client cannot elicit: asks are denied with a tool error.
    Nobody,
}

/// How a driven call ended.
pub(crate) enum Driven {
    /// The result for the client.
    Done(CallToolResult),
    /// A new question for the next round (2026-07-28).
    NeedsInput(Pending, ElicitRequestParams),
}

const CANCELLED: &str = "The call was cancelled by the client.";

/// Progress messages longer than this are cut (the full text is in the
/// result).
const MAX_PROGRESS_MESSAGE: usize = 16 * 1024;

/// Runs `request` to its end (or to the next round's question).
pub(crate) async fn drive(
    host: &Toolhost,
    request: CallRequest,
    ctx: &RequestContext<RoleServer>,
    asker: Asker<'_>,
) -> Driven {
    let progress = ctx.meta.get_progress_token();
    let mut sent = 0u32;
    let mut refusal: Option<String> = None;
    let mut warnings: Vec<String> = Vec::new();
    let mut stream = host.call(request);
    loop {
        let event = tokio::select! {
            // Dropping the stream aborts the call's task: its instance is
            // dropped and its process group killed.
            () = ctx.ct.cancelled() => return Driven::Done(error_result(CANCELLED)),
            event = stream.next() => event,
        };
        let Some(event) = event else {
            return Driven::Done(error_result("The call ended without a response (is the server stopping?)."));
        };
        match event {
            CallEvent::Chunk(chunk) => {
                if let Some(token) = &progress {
                    sent += 1;
                    // Shown to a person by the client: escaped (the result
                    // carries the exact text).
                    let mut message = toolhost::escape::block(&chunk_text(&chunk.content)).into_owned();
                    if message.len() > MAX_PROGRESS_MESSAGE {
                        let mut cut = MAX_PROGRESS_MESSAGE;
                        while !message.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        message.truncate(cut);
                    }
                    let note = ProgressNotificationParam::new(token.clone(), f64::from(sent)).with_message(message);
                    let _ = ctx.peer.notify_progress(note).await;
                }
            }
            CallEvent::RememberFailed { message, .. } => warnings.push(message),
            CallEvent::PermissionRequest(req) => match &asker {
                Asker::Elicit => {
                    let form = asks::permission_form(host, &req);
                    match elicit(ctx, form).await {
                        Elicited::Answered(result) => {
                            let answer = asks::permission_answer(&result, &req.decision);
                            req.answer(answer);
                        }
                        Elicited::Cancelled => return Driven::Done(error_result(CANCELLED)),
                        Elicited::NotAsked(why) => {
                            refusal = Some(format!("Permission denied: {}: {why}", req.tool));
                            req.deny();
                        }
                    }
                }
                Asker::Rounds(answers) => match answers.iter().find_map(|a| a.permission_for(&req)) {
                    Some(answer) => req.answer(answer),
                    None => return ask_next_round(host, &req),
                },
                Asker::Nobody => {
                    refusal = Some(asks::not_asked(&req));
                    req.deny();
                }
            },
            CallEvent::ExternalExecution(ext) => return external(host, ext, ctx, &asker).await,
            CallEvent::Finished(response) => {
                let mut result = match (response.state, refusal.take()) {
                    (ResultState::Denied, Some(text)) => error_result(text),
                    _ => mcp_result(&response),
                };
                for warning in warnings {
                    result.content.push(rmcp::model::ContentBlock::text(format!("warning: {warning}")));
                }
                return Driven::Done(result);
            }
        }
    }
}

/// Ends a 2026-07-28 round with the question `req` asks (dropping `req`
/// denies it in this round, before any of the tool's code ran).
fn ask_next_round(host: &Toolhost, req: &PermissionRequest) -> Driven {
    let pending = Pending::Permission { tool: req.tool.clone(), input: asks::digest(&req.input) };
    Driven::NeedsInput(pending, asks::permission_form(host, req))
}

/// How an elicitation ended.
enum Elicited {
    Answered(ElicitResult),
    /// The call was cancelled meanwhile.
    Cancelled,
    /// Not asked: too many questions of this client wait already (why).
    NotAsked(String),
}

/// Asks the client. A client that fails to answer declines. While the
/// question waits, the HTTP request holds a stream slot, not a connection
/// slot (`http::park`): an answer may take minutes, or never come.
async fn elicit(ctx: &RequestContext<RoleServer>, form: ElicitRequestParams) -> Elicited {
    let _parked = match crate::http::park(ctx) {
        Ok(parked) => parked,
        Err(why) => return Elicited::NotAsked(format!("toolhost could not ask the user: {why}.")),
    };
    tokio::select! {
        () = ctx.ct.cancelled() => Elicited::Cancelled,
        r = ctx.peer.create_elicitation(form) => {
            Elicited::Answered(r.unwrap_or_else(|_| ElicitResult::new(rmcp::model::ElicitationAction::Decline)))
        }
    }
}

/// An external tool's call: AskUser's questions go to the user by
/// elicitation; without it (or for other external tools, which an MCP
/// client cannot carry out) the call ends with an error carrying the
/// questions as JSON.
async fn external(host: &Toolhost, ext: ExternalCall, ctx: &RequestContext<RoleServer>, asker: &Asker<'_>) -> Driven {
    let event = serde_json::to_string(&ext).unwrap_or_default();
    let form = if ext.tool == "AskUser" { asks::ask_user_form(&ext.input) } else { None };
    let Some(form) = form else {
        return done(format!(
            "{} needs the user, and toolhost cannot reach them through this MCP client (no elicitation). \
             Ask the user these questions yourself: {event}",
            ext.tool
        ));
    };
    let result = match asker {
        Asker::Elicit => match elicit(ctx, form).await {
            Elicited::Answered(answer) => asks::ask_user_result(&ext.input, &answer),
            Elicited::Cancelled => return done(CANCELLED),
            Elicited::NotAsked(why) => return done(format!("AskUser: {why} Ask the user yourself: {}", ext.input)),
        },
        Asker::Rounds(answers) => {
            let digest = asks::digest(&ext.input);
            match answers.iter().find_map(|a| match a {
                Answer::AskUser { input, result } if *input == digest => Some(result.clone()),
                _ => None,
            }) {
                Some(result) => Some(result),
                None => return Driven::NeedsInput(Pending::AskUser { input: ext.input.clone() }, form),
            }
        }
        Asker::Nobody => {
            return done(format!(
                "AskUser needs the user, and this MCP client does not support elicitation. Ask the user these \
                 questions yourself: {}",
                ext.input
            ));
        }
    };
    Driven::Done(match result {
        Some(result) => match host.complete_external(&ext, result) {
            Ok(response) => mcp_result(&response),
            Err(e) => error_result(format!("AskUser: {e:#}")),
        },
        None => error_result("The user declined to answer the questions."),
    })
}

fn done(text: impl Into<String>) -> Driven {
    Driven::Done(error_result(text))
}
