//! `toolhost check`: the permission engine without execution.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::Write;
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result, bail};
use futures::FutureExt as _;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use toolhost::Toolhost;
use toolhost::function::CallableTool;
use toolhost::permission::check::{CheckRequest, answer_request, decision_json, error_json};
use toolhost::permission::{Context, RuleSet};

use super::args::{CheckArgs, Global};
use super::exit;

pub async fn check(global: &Global, args: CheckArgs) -> Result<u8> {
    let host = global.host().await?;
    if args.batch {
        return batch(&host).await;
    }
    let (Some(tool), Some(input)) = (args.tool, args.input) else {
        bail!(
            "give a tool and an input (toolhost check Bash '{{\"command\":\"ls\"}}'), or --batch with JSON Lines on stdin"
        );
    };
    let input: serde_json::Value = serde_json::from_str(&input).context("the input is not valid JSON")?;
    let ctx = host.permission_context(&tool, host.mode());
    let decision = host.check(&tool, &input, &ctx, &host.rules()).await?;
    if args.json {
        println!("{}", decision_json(&serde_json::Value::Null, &decision));
    } else {
        println!("{}: {}", decision.behavior.as_str().to_uppercase(), decision.message);
        if let Some(reason) = &decision.reason {
            println!("reason: {reason}");
        }
        println!(
            "decided by: {}{}",
            decision.source.as_str(),
            decision.rule.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
        );
        if decision.bypass_immune {
            println!("safety check: no allow rule can allow this; only bypass mode skips it");
        }
        if !decision.suggested_rules.is_empty() {
            let rules: Vec<String> = decision.suggested_rules.iter().map(|r| r.to_string()).collect();
            println!("suggested rules: {}", rules.join(", "));
        }
    }
    Ok(match decision.behavior {
        toolhost::permission::Behavior::Deny => exit::DENIED,
        _ => exit::OK,
    })
}

/// One JSON line out per line in, in order; a bad line gets an error line.
///
/// Lines are answered concurrently by one worker per available core, each
/// keeping one instance per tool for the whole batch. A worker takes the
/// lines already read, up to [`CHUNK`] at a time (one line when a driver
/// writes one request and waits). The answers are written in input order and
/// flushed whenever the next ones are not ready yet, so an interactive driver
/// gets each answer at once.
async fn batch(host: &Toolhost) -> Result<u8> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
    let shared = Arc::new(Batch {
        host: host.clone(),
        mode: host.mode(),
        rules: host.rules(),
        limits: host.settings().limits,
        contexts: Mutex::new(HashMap::new()),
    });
    let (free_tx, mut free_rx) = mpsc::channel::<Worker>(workers);
    for _ in 0..workers {
        free_tx.try_send(Worker::default()).expect("the channel has room for every worker");
    }
    let (answers_tx, answers_rx) = mpsc::channel::<JoinHandle<Vec<Value>>>(2 * workers);
    let writer = tokio::spawn(write_answers(answers_rx));

    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut read_error = None;
    let mut eof = false;
    while !eof && read_error.is_none() {
        // Wait for one line, then take the ones already buffered.
        let mut chunk = Vec::new();
        match lines.next_line().await {
            Ok(Some(line)) => chunk.push(line),
            Ok(None) => break,
            Err(e) => read_error = Some(e),
        }
        while read_error.is_none() && chunk.len() < CHUNK {
            // `next_line` is cancel safe: a line not complete yet stays buffered.
            match lines.next_line().now_or_never() {
                Some(Ok(Some(line))) => chunk.push(line),
                Some(Ok(None)) => {
                    eof = true;
                    break;
                }
                Some(Err(e)) => read_error = Some(e),
                None => break,
            }
        }
        chunk.retain(|line| !line.trim().is_empty());
        if chunk.is_empty() {
            continue;
        }
        let Some(mut worker) = free_rx.recv().await else { break };
        let (shared, free_tx) = (shared.clone(), free_tx.clone());
        let answers = tokio::spawn(async move {
            let mut answers = Vec::with_capacity(chunk.len());
            for line in &chunk {
                answers.push(worker.answer(&shared, line).await);
            }
            let _ = free_tx.send(worker).await;
            answers
        });
        if answers_tx.send(answers).await.is_err() {
            break; // the writer stopped: its error is reported below
        }
    }
    drop(answers_tx);
    // The answers to the lines read so far are written even after a read error.
    writer.await.context("the answer writer failed")??;
    match read_error {
        Some(e) => Err(anyhow::Error::from(e).context("reading stdin")),
        None => Ok(exit::OK),
    }
}

/// The most lines one worker takes at a time.
const CHUNK: usize = 32;

/// What every worker of a batch shares: the configuration read once.
struct Batch {
    host: Toolhost,
    mode: toolhost::permission::Mode,
    rules: Arc<RuleSet>,
    limits: toolhost::runtime::Limits,
    /// The base context per tool, built (working directories canonicalized)
    /// once per batch.
    contexts: Mutex<HashMap<String, Arc<Context>>>,
}

impl Batch {
    fn context(&self, tool: &str) -> Arc<Context> {
        let mut contexts = self.contexts.lock().unwrap_or_else(|p| p.into_inner());
        contexts
            .entry(tool.to_string())
            .or_insert_with(|| Arc::new(self.host.permission_context(tool, self.mode)))
            .clone()
    }
}

/// One lane of a batch: an instance per tool, reused line after line.
///
/// Reuse is safe here, unlike for calls: a check runs no tool code with any
/// capability (checks get no grants in use, no output, no processes), and the
/// permission methods are pure functions of the input, context and rule
/// texts passed with each request, so an earlier request cannot change a
/// later answer. The one-fresh-instance-per-call rule is about `call`, which
/// this never reaches. An instance that trapped or timed out cannot be
/// entered again: it is dropped and the next line for that tool gets a fresh
/// one.
#[derive(Default)]
struct Worker {
    tools: HashMap<String, CallableTool>,
}

impl Worker {
    async fn answer(&mut self, batch: &Batch, line: &str) -> Value {
        let req = match CheckRequest::parse(line) {
            Ok(req) => req,
            Err(e) => return error_json(&e.id, &e.message),
        };
        let tool = match self.tools.entry(req.tool.clone()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let (tx, _rx) = mpsc::channel(1);
                match batch.host.instantiate(&req.tool, None, tx).await {
                    Ok(tool) => e.insert(tool),
                    Err(err) => return error_json(&req.id, &format!("{err:#}")),
                }
            }
        };
        // Each request gets the full deadline.
        tool.rearm(&batch.limits);
        let ctx = batch.context(&req.tool);
        let answer = answer_request(&req, tool, &ctx, &batch.rules).await;
        if tool.failed() {
            self.tools.remove(&req.tool);
        }
        answer
    }
}

/// Writes the answers in order, flushing whenever the next one is not ready.
async fn write_answers(mut answers: mpsc::Receiver<JoinHandle<Vec<Value>>>) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let mut next = answers.recv().await;
    while let Some(handle) = next {
        for answer in handle.await.context("a check panicked")? {
            writeln!(out, "{answer}")?;
        }
        next = answers.try_recv().ok();
        if next.as_ref().is_none_or(|h| !h.is_finished()) {
            out.flush()?;
            if next.is_none() {
                next = answers.recv().await;
            }
        }
    }
    out.flush()?;
    Ok(())
}
