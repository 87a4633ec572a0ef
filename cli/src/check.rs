//! `toolhost check`: the permission engine without execution.

use anyhow::{Context as _, Result, bail};
use toolhost::Toolhost;
use toolhost::check_batch::{BatchChecker, BatchError, decision_json};

use super::args::{CheckArgs, Global};
use super::exit;
use super::shown::line;
use crate::out::outln;

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
        outln!("{}", decision_json(&serde_json::Value::Null, &decision));
    } else {
        outln!("{}: {}", decision.behavior.as_str().to_uppercase(), line(&decision.message));
        if let Some(reason) = &decision.reason {
            outln!("reason: {}", line(reason));
        }
        outln!(
            "decided by: {}{}",
            decision.source.as_str(),
            decision.rule.as_ref().map(|r| format!(" ({})", line(&r.to_string()))).unwrap_or_default()
        );
        if decision.bypass_immune {
            outln!("safety check: no allow rule can allow this; only bypass mode skips it");
        }
        if !decision.suggested_rules.is_empty() {
            let rules: Vec<String> = decision.suggested_rules.iter().map(|r| r.to_string()).collect();
            outln!("suggested rules: {}", line(&rules.join(", ")));
        }
    }
    Ok(match decision.behavior {
        toolhost::permission::Behavior::Deny => exit::DENIED,
        _ => exit::OK,
    })
}

/// One JSON line out per line in, in order; a bad line gets an error line
/// (the engine is [`toolhost::check_batch`]).
async fn batch(host: &Toolhost) -> Result<u8> {
    match BatchChecker::new(host).run(std::io::stdin(), crate::out::stdout()).await {
        Ok(()) => Ok(exit::OK),
        Err(BatchError::Read(e)) => Err(anyhow::Error::from(e).context("reading stdin")),
        Err(BatchError::Failed(e)) => Err(e),
    }
}
