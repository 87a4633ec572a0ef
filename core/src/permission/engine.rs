//! The evaluation algorithm (spec §4.2–§4.4).

use serde::{Deserialize, Serialize};

use super::{Behavior, Context, Mode, Rule, RuleSet};

/// A tool's own judgement of a call: the answer of `check-permissions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolVerdict {
    /// Allow, deny, ask, or passthrough (no opinion).
    pub behavior: Behavior,
    /// A message for the user (and, on deny, for the model).
    pub message: String,
    /// Why, for the explanation.
    pub reason: Option<String>,
    /// Only meaningful for `Ask`: a safety ask that no allow rule may
    /// silence. Bypass mode skips it; dont_ask turns it into a deny.
    pub bypass_immune: bool,
}

impl ToolVerdict {
    /// A verdict with the given behaviour and message, no reason, not immune.
    pub fn new(behavior: Behavior, message: impl Into<String>) -> ToolVerdict {
        ToolVerdict { behavior, message: message.into(), reason: None, bypass_immune: false }
    }

    /// "No opinion": let the rules and the mode decide.
    pub fn passthrough() -> ToolVerdict {
        ToolVerdict::new(Behavior::Passthrough, "")
    }

    /// Sets the reason.
    pub fn with_reason(mut self, reason: impl Into<String>) -> ToolVerdict {
        self.reason = Some(reason.into());
        self
    }

    /// Marks the verdict bypass-immune (a safety ask).
    pub fn immune(mut self) -> ToolVerdict {
        self.bypass_immune = true;
        self
    }

    /// Whether this is a safety ask: `Ask` and bypass-immune.
    pub fn is_safety_ask(&self) -> bool {
        self.behavior == Behavior::Ask && self.bypass_immune
    }
}

/// The step of the algorithm that produced a [`Decision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The input names one of toolhost's own files (before step 1; every
    /// mode, whatever the rules).
    ProtectedPath,
    /// A deny rule matched (step 1).
    DenyRule,
    /// An ask rule matched (step 2).
    AskRule,
    /// The read-only fast path (step 3).
    ReadOnly,
    /// The tool's own check allowed the call (step 4).
    ToolAllow,
    /// The tool's own check denied the call, or failed (step 4).
    ToolDeny,
    /// The tool's own check asked with `bypass_immune` (step 4).
    ToolSafetyAsk,
    /// An allow rule matched (step 5).
    AllowRule,
    /// Nothing decided; the mode did (step 6).
    ModeFallback,
}

impl Source {
    /// The wire spelling (`deny_rule`, `mode_fallback`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::ProtectedPath => "protected_path",
            Source::DenyRule => "deny_rule",
            Source::AskRule => "ask_rule",
            Source::ReadOnly => "read_only",
            Source::ToolAllow => "tool_allow",
            Source::ToolDeny => "tool_deny",
            Source::ToolSafetyAsk => "tool_safety_ask",
            Source::AllowRule => "allow_rule",
            Source::ModeFallback => "mode_fallback",
        }
    }
}

/// The engine's answer for one call, explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Allow, deny or ask; never `Passthrough`.
    pub behavior: Behavior,
    /// The reference message (spec §4.2); on deny it is the tool result the
    /// model sees.
    pub message: String,
    /// Why, for the explanation.
    pub reason: Option<String>,
    /// Only for `Ask`: a safety ask (always `false` for allow and deny).
    pub bypass_immune: bool,
    /// The step that decided.
    pub source: Source,
    /// The text of the rule that matched (`Bash(git:*)`), when a rule decided.
    pub rule: Option<String>,
    /// What `check_read_only` answered; `false` when it was not consulted (a
    /// deny or ask rule decided first) or when it failed.
    pub read_only: bool,
    /// The tool's own verdict when `check_permissions` was consulted (even
    /// when a later step decided), else `None`.
    pub tool_check: Option<ToolVerdict>,
    /// Rules to offer the user: only on ask decisions, and on the denies that
    /// dont_ask mode converts from asks. Every rule is an allow rule for this
    /// tool.
    pub suggested_rules: Vec<Rule>,
}

/// What the engine needs from a tool; the runtime implements it over a wasm
/// instance (the WIT `tool` interface), tests over fakes.
///
/// An `Err` from any method (a trap, a timeout, a bad answer) makes the
/// engine fail closed: the call is denied with a message naming the cause.
#[allow(async_fn_in_trait)]
pub trait PolicyTool {
    /// The tool's name, as rules name it.
    fn name(&self) -> &str;
    /// Whether this input only reads (WIT `check-read-only`).
    async fn check_read_only(&mut self, input: &str) -> anyhow::Result<bool>;
    /// The tool's own judgement (WIT `check-permissions`).
    async fn check_permissions(&mut self, input: &str, ctx: &Context) -> anyhow::Result<ToolVerdict>;
    /// The index of the first of `contents` (all non-empty, all from the
    /// `behavior` list) that matches `input` (WIT `match-rule`).
    async fn match_rule(
        &mut self,
        behavior: Behavior,
        contents: &[String],
        input: &str,
        ctx: &Context,
    ) -> anyhow::Result<Option<usize>>;
    /// Rules to offer the user for this call (WIT `generate-suggestions`).
    async fn suggestions(&mut self, input: &str, ctx: &Context) -> anyhow::Result<Vec<Rule>>;
}

/// A tool method that failed; the engine denies the call.
struct Failure {
    source: Source,
    /// The WIT function that failed, for the reason.
    function: &'static str,
    cause: anyhow::Error,
}

impl Failure {
    fn new(source: Source, function: &'static str, cause: anyhow::Error) -> Failure {
        Failure { source, function, cause }
    }
}

/// Decides whether `tool` may run with `input` (JSON text), following spec
/// §4.3 for `ctx.mode`:
///
/// 0. an input that names one of toolhost's own files → deny, in every
///    mode ([`crate::protected::ProtectedPaths::named_in_input`]);
/// 1. deny rules → deny;
/// 2. ask rules → ask (dont_ask: deny);
/// 3. read-only → allow; explore stops here with a deny;
/// 4. the tool's check: allow or deny are final, a safety ask is final
///    (dont_ask: deny; bypass: ignored), other asks and passthrough continue;
/// 5. allow rules → allow;
/// 6. the mode's fallback (ask; deny in explore and dont_ask; allow in
///    bypass).
///
/// Rules without content match without asking the tool; the content rules of
/// one list go to one `match_rule` call. Suggestions are asked for only on
/// ask paths and filtered to allow rules for this tool.
///
/// Never fails: an error from the tool denies the call (fail closed), with
/// `source` the step that failed (`tool_deny` for `check_permissions`).
pub async fn evaluate<T: PolicyTool>(tool: &mut T, input: &str, ctx: &Context, rules: &RuleSet) -> Decision {
    let name = tool.name().to_owned();
    let mut read_only = false;
    let mut tool_check = None;
    match decide(tool, &name, input, ctx, rules, &mut read_only, &mut tool_check).await {
        Ok(mut d) => {
            d.read_only = read_only;
            d.tool_check = tool_check;
            if d.behavior != Behavior::Ask {
                d.bypass_immune = false;
            }
            d
        }
        Err(f) => Decision {
            behavior: Behavior::Deny,
            message: format!(
                "Permission denied for {name}: its permission check failed in `{}`: {:#}",
                f.function, f.cause
            ),
            reason: Some(format!("Failed closed: the tool's `{}` returned an error", f.function)),
            bypass_immune: false,
            source: f.source,
            rule: None,
            read_only,
            tool_check,
            suggested_rules: Vec::new(),
        },
    }
}

fn decision(behavior: Behavior, message: String, reason: Option<String>, source: Source) -> Decision {
    Decision {
        behavior,
        message,
        reason,
        bypass_immune: false,
        source,
        rule: None,
        read_only: false,
        tool_check: None,
        suggested_rules: Vec::new(),
    }
}

/// The reference reason of a rule decision: `Rule: {content}`, with `None`
/// for a rule without content (spec §4.2).
fn rule_reason(rule: &Rule) -> String {
    format!("Rule: {}", rule.content.as_deref().unwrap_or("None"))
}

async fn decide<T: PolicyTool>(
    tool: &mut T,
    name: &str,
    input: &str,
    ctx: &Context,
    rules: &RuleSet,
    read_only: &mut bool,
    tool_check: &mut Option<ToolVerdict>,
) -> Result<Decision, Failure> {
    // 0. toolhost's own files.
    if let Some(d) = protected_path(name, input, ctx) {
        return Ok(d);
    }

    // 1. Deny rules.
    if let Some(rule) = first_match(tool, Behavior::Deny, rules, input, ctx)
        .await
        .map_err(|e| Failure::new(Source::DenyRule, "match-rule", e))?
    {
        let mut d = decision(
            Behavior::Deny,
            format!("Permission to use {name} has been denied"),
            Some(rule_reason(rule)),
            Source::DenyRule,
        );
        d.rule = Some(rule.to_string());
        return Ok(d);
    }

    // 2. Ask rules.
    if let Some(rule) = first_match(tool, Behavior::Ask, rules, input, ctx)
        .await
        .map_err(|e| Failure::new(Source::AskRule, "match-rule", e))?
    {
        let mut d = decision(
            Behavior::Ask,
            format!("Permission required for {name}"),
            Some(rule_reason(rule)),
            Source::AskRule,
        );
        d.rule = Some(rule.to_string());
        d.suggested_rules = suggest(tool, name, input, ctx, Source::AskRule).await?;
        return Ok(dont_ask_converts(d, name, ctx.mode));
    }

    // 3. Read-only fast path.
    *read_only = tool.check_read_only(input).await.map_err(|e| Failure::new(Source::ReadOnly, "check-read-only", e))?;
    if *read_only {
        return Ok(decision(
            Behavior::Allow,
            format!("Permission granted for {name} (read-only invocation)"),
            Some("Read-only operations are auto-allowed".into()),
            Source::ReadOnly,
        ));
    }

    // Explore: neither the tool's check nor the allow rules are consulted.
    if ctx.mode == Mode::Explore {
        return Ok(decision(
            Behavior::Deny,
            format!("Permission denied for {name} (explore mode is read-only)"),
            Some("Explore mode does not allow modifications".into()),
            Source::ModeFallback,
        ));
    }

    // 4. The tool's own check.
    let verdict =
        tool.check_permissions(input, ctx).await.map_err(|e| Failure::new(Source::ToolDeny, "check-permissions", e))?;
    *tool_check = Some(verdict.clone());
    match verdict.behavior {
        Behavior::Allow | Behavior::Deny => {
            let (source, default_message) = if verdict.behavior == Behavior::Allow {
                (Source::ToolAllow, format!("Permission granted for {name}"))
            } else {
                (Source::ToolDeny, format!("Permission denied for {name}"))
            };
            let message = if verdict.message.is_empty() { default_message } else { verdict.message };
            return Ok(decision(verdict.behavior, message, verdict.reason, source));
        }
        Behavior::Ask if verdict.bypass_immune && ctx.mode != Mode::Bypass => {
            let message =
                if verdict.message.is_empty() { format!("Permission required for {name}") } else { verdict.message };
            let mut d = decision(Behavior::Ask, message, verdict.reason, Source::ToolSafetyAsk);
            d.bypass_immune = true;
            d.suggested_rules = suggest(tool, name, input, ctx, Source::ToolSafetyAsk).await?;
            return Ok(dont_ask_converts(d, name, ctx.mode));
        }
        // A non-immune ask, a safety ask in bypass, or passthrough: the
        // verdict is discarded and the rules and mode decide.
        Behavior::Ask | Behavior::Passthrough => {}
    }

    // 5. Allow rules.
    if let Some(rule) = first_match(tool, Behavior::Allow, rules, input, ctx)
        .await
        .map_err(|e| Failure::new(Source::AllowRule, "match-rule", e))?
    {
        let mut d = decision(Behavior::Allow, format!("Permission granted for {name}"), None, Source::AllowRule);
        d.rule = Some(rule.to_string());
        return Ok(d);
    }

    // 6. The mode's fallback.
    Ok(match ctx.mode {
        Mode::Default | Mode::AcceptEdits => {
            let mut d = decision(
                Behavior::Ask,
                format!("Permission required for {name}"),
                Some(format!("Mode: {}", ctx.mode)),
                Source::ModeFallback,
            );
            d.suggested_rules = suggest(tool, name, input, ctx, Source::ModeFallback).await?;
            d
        }
        Mode::Bypass => decision(
            Behavior::Allow,
            format!("Permission granted for {name} (bypass mode)"),
            Some("Bypass mode allows all operations".into()),
            Source::ModeFallback,
        ),
        Mode::DontAsk => decision(
            Behavior::Deny,
            format!("Permission denied for {name} (dont_ask mode - user not available)"),
            Some("User is not available to answer permission prompts".into()),
            Source::ModeFallback,
        ),
        // Handled before step 4; kept for exhaustiveness.
        Mode::Explore => decision(
            Behavior::Deny,
            format!("Permission denied for {name} (explore mode is read-only)"),
            Some("Explore mode does not allow modifications".into()),
            Source::ModeFallback,
        ),
    })
}

/// The denial of a call whose input names one of toolhost's own files
/// (the input is parsed only when its text could name one).
fn protected_path(name: &str, input: &str, ctx: &Context) -> Option<Decision> {
    if !ctx.protected.may_be_named_in(input, &ctx.cwd, &ctx.home) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(input).ok()?;
    let why = ctx.protected.named_in_input(&value, &ctx.cwd, &ctx.home)?;
    Some(decision(
        Behavior::Deny,
        format!("Permission denied for {name}: {why} (in every mode, whatever the rules)"),
        Some("Protected path: toolhost's own settings, state and cache are off limits to every tool".into()),
        Source::ProtectedPath,
    ))
}

/// ToDeny (spec §4.2): in dont_ask mode an ask becomes a deny that keeps
/// the suggestions; other modes return the ask unchanged.
fn dont_ask_converts(d: Decision, name: &str, mode: Mode) -> Decision {
    if mode != Mode::DontAsk {
        return d;
    }
    Decision {
        behavior: Behavior::Deny,
        message: format!("Permission denied for {name} (dont_ask mode - ASK converted to DENY, user not available)"),
        reason: Some(format!(
            "DONT_ASK mode converted ASK to DENY. Original reason: {}",
            d.reason.as_deref().unwrap_or("None")
        )),
        bypass_immune: false,
        ..d
    }
}

/// The tool's suggestions, keeping only allow rules for this tool (a tool
/// cannot get the user to allow another tool, or to add deny rules through
/// "allow and remember") that read as written (a rule with a newline or a
/// bidi override is not what the prompt shows, and could break out of the
/// settings file's text).
async fn suggest<T: PolicyTool>(
    tool: &mut T,
    name: &str,
    input: &str,
    ctx: &Context,
    source: Source,
) -> Result<Vec<Rule>, Failure> {
    let mut rules = tool.suggestions(input, ctx).await.map_err(|e| Failure::new(source, "generate-suggestions", e))?;
    rules.retain(|r| r.tool == name && r.behavior == Behavior::Allow && r.reads_as_written());
    Ok(rules)
}

/// The first rule of the `behavior` list for this tool that matches, in
/// list order. Rules without content match without asking the tool; the
/// content rules that come before the first such rule go to one
/// `match_rule` call (none when there are none).
async fn first_match<'r, T: PolicyTool>(
    tool: &mut T,
    behavior: Behavior,
    rules: &'r RuleSet,
    input: &str,
    ctx: &Context,
) -> anyhow::Result<Option<&'r Rule>> {
    let list = rules.rules(tool.name(), behavior);
    let first_tool_level = list.iter().position(Rule::is_tool_level);
    let candidates = &list[..first_tool_level.unwrap_or(list.len())];
    if !candidates.is_empty() {
        // No rule before the first tool-level one is tool-level, so every
        // candidate has non-empty content.
        let contents: Vec<String> = candidates.iter().map(|r| r.content.clone().unwrap_or_default()).collect();
        if let Some(i) = tool.match_rule(behavior, &contents, input, ctx).await? {
            return match candidates.get(i) {
                Some(rule) => Ok(Some(rule)),
                None => Err(anyhow::anyhow!(
                    "match-rule answered index {i}, but only {} rule contents were given",
                    candidates.len()
                )),
            };
        }
    }
    Ok(first_tool_level.and_then(|i| list.get(i)))
}
