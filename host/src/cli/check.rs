//! `toolhost check`: the permission engine without execution.

use std::io::{BufRead, Write};

use anyhow::{Context as _, Result, bail};
use tokio::sync::mpsc;
use toolhost::Toolhost;
use toolhost::permission::check::{answer_line, decision_json};

use super::args::{CheckArgs, Global};
use super::exit;

pub async fn check(global: &Global, args: CheckArgs) -> Result<u8> {
    let host = global.host().await?;
    if args.batch {
        return batch(&host).await;
    }
    let (Some(tool), Some(input)) = (args.tool, args.input) else {
        bail!("give a tool and an input (toolhost check Bash '{{\"command\":\"ls\"}}'), or --batch with JSON Lines on stdin");
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
        println!("decided by: {}{}", decision.source.as_str(), decision.rule.as_ref().map(|r| format!(" ({r})")).unwrap_or_default());
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
async fn batch(host: &Toolhost) -> Result<u8> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = answer_line(&line, async |req| {
            let (tx, _rx) = mpsc::channel(1);
            let instance = host.instantiate(&req.tool, None, tx).await?;
            let ctx = host.permission_context(&req.tool, host.mode());
            Ok((instance, ctx, host.rules()))
        })
        .await;
        writeln!(out, "{answer}")?;
    }
    out.flush()?;
    Ok(exit::OK)
}
