//! `toolhost run`: a batch of calls, as an agent runs one model turn.

use std::sync::{Arc, Mutex};
use toolhost::sync::MutexExt;

use anyhow::{Result, bail};
use serde::Deserialize;
use toolhost::batch::{Answerer, BatchResult};
use toolhost::response::ResultState;
use toolhost::{CallRequest, PermissionAnswer};

use super::args::{Global, RunArgs};
use super::call::{open_session, read_json_arg};
use super::{exit, prompt};
use crate::out::outln;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallSpec {
    id: Option<String>,
    tool: String,
    #[serde(default = "empty_object")]
    input: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::json!({})
}

pub async fn run(global: &Global, args: RunArgs) -> Result<u8> {
    let specs: Vec<CallSpec> = read_json_arg(&args.calls, "calls")?;
    if specs.is_empty() {
        bail!("the batch is empty: give a JSON list of {{\"tool\": ..., \"input\": {{...}}}} objects");
    }
    let host = global.host().await?;
    let session = match &args.session {
        Some(name) => Some(open_session(host.settings(), name)?),
        None => None,
    };
    let calls: Vec<CallRequest> = specs
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut req = CallRequest::new(s.tool, s.input.to_string()).id(s.id.unwrap_or_else(|| (i + 1).to_string()));
            if let Some(state) = &session {
                req = req.session(state.clone());
            }
            req
        })
        .collect();
    // Prompts from parallel calls are asked one at a time.
    let asking = Arc::new(Mutex::new(()));
    let interactive = prompt::interactive();
    let remember_target = prompt::remember_target(&host);
    let origins = host.clone();
    let answer: Answerer = Arc::new(move |req| {
        if !interactive {
            eprintln!("{}", prompt::not_asked(&req.tool, &req.decision));
            return PermissionAnswer::Deny;
        }
        let _turn = asking.lock_unpoisoned();
        let documented = prompt::rules_have_documented_meaning(&origins, &req.tool);
        prompt::ask(&req.tool, &req.input, &req.decision, &remember_target, documented)
    });
    let results = host.run_batch(calls, answer).await;
    if let Some(state) = session {
        state.save()?;
    }
    outln!("{}", serde_json::to_string_pretty(&results)?);
    let code = results.iter().fold(exit::OK, |code, r| match r {
        BatchResult::Finished { response, .. } => match response.state {
            ResultState::Error | ResultState::Interrupted => code.max(exit::ERROR),
            ResultState::Denied => code.max(exit::DENIED),
            _ => code,
        },
        BatchResult::External { .. } | BatchResult::NotStarted { .. } => code.max(exit::EXTERNAL),
    });
    Ok(code)
}
