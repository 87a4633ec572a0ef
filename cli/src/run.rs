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
        Some(name) => Some(open_session(host.settings(), name).await?),
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
        prompt::ask(&origins, req, &remember_target)
    });
    // The results are printed as they come (a JSON list, as one would be
    // pretty-printed), so a long batch holds only the calls in flight.
    let mut printer = ListPrinter::default();
    let mut code = exit::OK;
    let mut failed = None;
    host.run_batch_each(calls, answer, |result| {
        code = code.max(exit_code(&result));
        if failed.is_none() {
            failed = printer.item(&result).err();
        }
    })
    .await;
    if let Some(e) = failed {
        return Err(e);
    }
    printer.finish();
    Ok(code)
}

fn exit_code(result: &BatchResult) -> u8 {
    match result {
        BatchResult::Finished { response, .. } => match response.state {
            ResultState::Error | ResultState::Interrupted => exit::ERROR,
            ResultState::Denied => exit::DENIED,
            _ => exit::OK,
        },
        BatchResult::External { .. } | BatchResult::NotStarted { .. } => exit::EXTERNAL,
    }
}

/// Prints a JSON list one item at a time, in the layout
/// `serde_json::to_string_pretty` gives the whole list.
#[derive(Default)]
struct ListPrinter {
    started: bool,
}

impl ListPrinter {
    fn item(&mut self, item: &impl serde::Serialize) -> Result<()> {
        let text = serde_json::to_string_pretty(item)?;
        // JSON strings hold no raw newline, so every line is structure.
        let indented = text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n");
        let lead = if self.started { ",\n" } else { "[\n" };
        self.started = true;
        crate::out::print(format_args!("{lead}{indented}"));
        Ok(())
    }

    fn finish(self) {
        crate::out::print(format_args!("{}", if self.started { "\n]\n" } else { "[]\n" }));
    }
}
