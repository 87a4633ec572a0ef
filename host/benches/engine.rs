//! The permission engine's own cost per decision: 60 realistic rules (40
//! allow, 15 deny, 5 ask), a tool whose checks are trivial and native, four
//! situations (a deny rule hits, an allow rule hits after the tool passes
//! through, the mode's fallback asks with suggestions, the read-only fast
//! path). Beside it, AgentScope 2.0.11's `PermissionEngine.check_permission`
//! over the same rules and situations (`bench/agentscope_engine.py`), when
//! `AGENTSCOPE_PYTHON` names a Python with agentscope installed.
//!
//! Run: `AGENTSCOPE_PYTHON=/tmp/as-venv/bin/python cargo bench -p toolhost --bench engine`

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use toolhost::permission::{Behavior, Context, PolicyTool, Rule, RuleSet, ToolVerdict, evaluate};

/// The same tool as the Python peer's `Trivial`.
struct Trivial;

fn command(input: &str) -> &str {
    input.split("\"command\":\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or("")
}

impl PolicyTool for Trivial {
    fn name(&self) -> &str {
        "Trivial"
    }
    async fn check_read_only(&mut self, input: &str) -> anyhow::Result<bool> {
        Ok(command(input).starts_with("status"))
    }
    async fn check_permissions(&mut self, _input: &str, _ctx: &Context) -> anyhow::Result<ToolVerdict> {
        Ok(ToolVerdict::passthrough())
    }
    async fn match_rule(
        &mut self,
        _b: Behavior,
        contents: &[String],
        input: &str,
        _ctx: &Context,
    ) -> anyhow::Result<Option<usize>> {
        let c = command(input);
        Ok(contents.iter().position(|rule| {
            let prefix = rule.strip_suffix(":*").unwrap_or(rule);
            c == prefix || c.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(' '))
        }))
    }
    async fn suggestions(&mut self, input: &str, _ctx: &Context) -> anyhow::Result<Vec<Rule>> {
        let first = command(input).split(' ').next().unwrap_or("");
        Ok(vec![Rule { tool: "Trivial".into(), content: Some(format!("{first}:*")), behavior: Behavior::Allow }])
    }
}

fn rules() -> RuleSet {
    let allow: Vec<String> = (0..40).map(|i| format!("Trivial(cmd{i}:*)")).collect();
    let deny: Vec<String> = (0..15).map(|i| format!("Trivial(danger{i}:*)")).collect();
    let ask: Vec<String> = (0..5).map(|i| format!("Trivial(careful{i}:*)")).collect();
    RuleSet::from_strings(&allow, &deny, &ask).expect("rules")
}

fn main() {
    let n: usize = std::env::var("ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("tokio");
    let rules = rules();
    let ctx = Context::default();
    let mut tool = Trivial;
    let cases = [
        ("deny rule", "danger14 now", Behavior::Deny),
        ("allow rule", "cmd39 run", Behavior::Allow),
        ("fallback ask", "unknown thing", Behavior::Ask),
        ("read-only", "status", Behavior::Allow),
    ];
    let peer = peer(n);
    println!("{:<14} {:>22} {:>26} {:>8}", "situation", "toolhost p50 / p99", "AgentScope p50 / p99", "ratio");
    for (name, cmd, expected) in cases {
        let input = format!("{{\"command\":\"{cmd}\"}}");
        let mut samples: Vec<Duration> = Vec::with_capacity(n);
        rt.block_on(async {
            for i in 0..n + 500 {
                let start = Instant::now();
                let d = evaluate(&mut tool, &input, &ctx, &rules).await;
                let took = start.elapsed();
                assert_eq!(d.behavior, expected, "{name}");
                if i >= 500 {
                    samples.push(took);
                }
            }
        });
        samples.sort();
        let p50 = samples[samples.len() / 2].as_secs_f64() * 1e6;
        let p99 = samples[samples.len() * 99 / 100].as_secs_f64() * 1e6;
        match peer.get(name) {
            Some((pp50, pp99)) => {
                println!("{name:<14} {p50:>9.2} / {p99:>8.2} µs {pp50:>11.2} / {pp99:>9.2} µs {:>7.0}x", pp50 / p50)
            }
            None => println!("{name:<14} {p50:>9.2} / {p99:>8.2} µs {:>26} {:>8}", "(no peer)", "-"),
        }
    }
}

/// Runs the AgentScope peer, if configured: situation → (p50, p99) in µs.
fn peer(n: usize) -> BTreeMap<String, (f64, f64)> {
    let Ok(python) = std::env::var("AGENTSCOPE_PYTHON") else {
        println!("(AgentScope peer skipped: set AGENTSCOPE_PYTHON to a python with agentscope==2.0.11)");
        return BTreeMap::new();
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/agentscope_engine.py");
    let out = std::process::Command::new(python).arg(script).arg(n.to_string()).output().expect("running the peer");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?.to_string(), (f.next()?.parse().ok()?, f.next()?.parse().ok()?)))
        })
        .collect()
}
