//! The wire format of a check batch (`toolhost check --batch`): one JSON
//! request per input line, one JSON answer per output line. Pure: no I/O,
//! no threads (the work queue is the host's `toolhost::check_batch::BatchChecker`).
//!
//! A request names a tool and its input, and may override any part of the
//! context and the rules:
//!
//! ```json
//! {"id": 1, "tool": "Bash", "input": {"command": "git push"}, "mode": "default",
//!  "rules": {"allow": ["Bash(git:*)"], "deny": [], "ask": []}}
//! ```
//!
//! Every key but `tool` and `input` is optional. A key that is present
//! replaces the configured value (from `toolhost.toml` and the command line)
//! wholesale: `rules` replaces all three configured lists, `working_dirs` the
//! configured directories, so a request can be evaluated on its own.
//!
//! The answer is [`decision_json`] or, when the request cannot be evaluated,
//! [`error_json`]. One request goes: [`CheckRequest::parse`] the line,
//! instantiate the tool it names, build the [`Context`] and [`RuleSet`] with
//! [`CheckRequest::context`] and [`CheckRequest::rule_set`], [`evaluate`],
//! print [`decision_json`]; [`answer_line`] does all of that given a way to
//! instantiate tools. The batch itself keeps an instance per tool and writes
//! each answer straight into its output buffer with [`write_answer`] (the
//! same bytes as [`answer_request`]'s JSON text, without building a
//! [`Value`] first).

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

use crate::permission::{Context, Decision, Mode, PolicyTool, Rule, RuleSet, RuleSyntaxError, ToolVerdict, evaluate};

/// The `rules` object of a request: rule texts per behaviour.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RulesJson {
    /// Allow rules, e.g. `"Bash(git:*)"`.
    pub allow: Vec<String>,
    /// Deny rules.
    pub deny: Vec<String>,
    /// Ask rules.
    pub ask: Vec<String>,
}

/// One line of a check batch's input.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// Echoed in the answer; any JSON value (`null` when absent).
    #[serde(default)]
    pub id: Value,
    /// The tool's name.
    pub tool: String,
    /// The tool's input: a JSON object.
    pub input: Value,
    /// Overrides the mode.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Overrides the working directories (absolute paths).
    #[serde(default)]
    pub working_dirs: Option<Vec<String>>,
    /// Overrides the directory relative paths are resolved against (absolute).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Overrides what `~` means (absolute).
    #[serde(default)]
    pub home: Option<String>,
    /// Replaces the configured rules.
    #[serde(default)]
    pub rules: Option<RulesJson>,
    /// Replaces the tool's configuration (a JSON object).
    #[serde(default)]
    pub tool_config: Option<Value>,
}

/// A request line that cannot be evaluated. `id` is the request's id when
/// the line was a JSON object carrying one, else `null`, so the answer can
/// still be matched to its line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CheckRequestError {
    /// The request's id, as far as it could be read.
    pub id: Value,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl CheckRequest {
    /// Parses and validates one JSON line: `tool` must be non-empty, `input`
    /// and `tool_config` JSON objects, `working_dirs`, `cwd` and `home`
    /// absolute paths.
    pub fn parse(line: &str) -> Result<CheckRequest, CheckRequestError> {
        // Fast path: an object straight into the struct (serde would also
        // take an array for a struct, hence the `{` test). Anything it
        // rejects (bad JSON, unknown or duplicate keys, wrong types) goes the
        // slow way below, which gives the same verdict with the message and
        // the id.
        if line.trim_start().starts_with('{')
            && let Ok(req) = serde_json::from_str::<CheckRequest>(line)
        {
            return req.validate();
        }
        let raw: Value = serde_json::from_str(line).map_err(|e| CheckRequestError {
            id: Value::Null,
            message: format!(
                "the request is not valid JSON ({e}); write one JSON object per line, \
                 e.g. {{\"id\": 1, \"tool\": \"Bash\", \"input\": {{\"command\": \"ls\"}}}}"
            ),
        })?;
        let id = raw.get("id").cloned().unwrap_or(Value::Null);
        let fail = |message: String| CheckRequestError { id: id.clone(), message };
        if !raw.is_object() {
            return Err(fail("the request must be a JSON object with at least `tool` and `input`".into()));
        }
        let req: CheckRequest = serde_json::from_value(raw).map_err(|e| {
            fail(format!(
                "invalid request: {e}; the keys are id, tool, input, mode, working_dirs, cwd, \
                 home, rules ({{allow, deny, ask}}: lists of rule texts) and tool_config"
            ))
        })?;
        req.validate()
    }

    /// The checks of [`CheckRequest::parse`] beyond the JSON shape.
    fn validate(self) -> Result<CheckRequest, CheckRequestError> {
        let req = self;
        let fail = |message: String| CheckRequestError { id: req.id.clone(), message };
        if req.tool.trim().is_empty() {
            return Err(fail("`tool` is empty: give the name of a loaded tool".into()));
        }
        if !req.input.is_object() {
            return Err(fail(format!(
                "`input` must be a JSON object (the tool's arguments), not {}",
                json_kind(&req.input)
            )));
        }
        if let Some(cfg) = &req.tool_config
            && !cfg.is_object()
        {
            return Err(fail(format!("`tool_config` must be a JSON object, not {}", json_kind(cfg))));
        }
        for dir in req.working_dirs.iter().flatten() {
            if !Path::new(dir).is_absolute() {
                return Err(fail(format!(
                    "working directory `{dir}` is not an absolute path; give it in full, e.g. `/home/me/project`"
                )));
            }
        }
        for (key, value) in [("cwd", &req.cwd), ("home", &req.home)] {
            if let Some(path) = value
                && !Path::new(path).is_absolute()
            {
                return Err(fail(format!("`{key}` `{path}` is not an absolute path; give it in full")));
            }
        }
        Ok(req)
    }

    /// The tool input as JSON text, as the tool receives it.
    pub fn input_text(&self) -> String {
        self.input.to_string()
    }

    /// `base` with the request's overrides applied.
    pub fn context(&self, base: &Context) -> Context {
        Context {
            mode: self.mode.unwrap_or(base.mode),
            working_dirs: self.working_dirs.clone().unwrap_or_else(|| base.working_dirs.clone()),
            cwd: self.cwd.clone().unwrap_or_else(|| base.cwd.clone()),
            home: self.home.clone().unwrap_or_else(|| base.home.clone()),
            tool_config: self.tool_config.clone().unwrap_or_else(|| base.tool_config.clone()),
            protected: base.protected.clone(),
        }
    }

    /// `base` with the request's overrides applied, borrowed when the
    /// request overrides nothing (the common case in a batch).
    fn context_for<'a>(&self, base: &'a Context) -> Cow<'a, Context> {
        if self.mode.is_none()
            && self.working_dirs.is_none()
            && self.cwd.is_none()
            && self.home.is_none()
            && self.tool_config.is_none()
        {
            Cow::Borrowed(base)
        } else {
            Cow::Owned(self.context(base))
        }
    }

    /// The request's rules when it has a `rules` key, else `base`.
    pub fn rule_set(&self, base: &RuleSet) -> Result<RuleSet, RuleSyntaxError> {
        match &self.rules {
            Some(r) => RuleSet::from_strings(&r.allow, &r.deny, &r.ask),
            None => Ok(base.clone()),
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The answer line for a decision, with exactly these keys in this order:
/// `id`, `behavior`, `bypass_immune`, `source`, `rule`, `message`, `reason`,
/// `read_only`, `tool_check` (`{behavior, bypass_immune, message}` or
/// `null`), `suggested_rules` (rule texts).
pub fn decision_json(id: &Value, d: &Decision) -> Value {
    serde_json::to_value(DecisionLine::new(id, d))
        .unwrap_or_else(|e| error_json(id, &format!("could not write the answer: {e}")))
}

/// The answer line for a request that could not be evaluated:
/// `{"id": …, "error": "…"}`.
pub fn error_json(id: &Value, msg: &str) -> Value {
    json!({ "id": id, "error": msg })
}

/// [`decision_json`] serialized straight into `out` (no intermediate
/// [`Value`]): the same bytes as `decision_json(id, d).to_string()`, without
/// a line end.
pub fn write_decision(out: &mut Vec<u8>, id: &Value, d: &Decision) {
    write_json(out, &DecisionLine::new(id, d), id);
}

/// [`error_json`] serialized straight into `out`: the same bytes as
/// `error_json(id, msg).to_string()`, without a line end.
pub fn write_error(out: &mut Vec<u8>, id: &Value, msg: &str) {
    write_json(out, &ErrorLine { id, error: msg }, id);
}

/// Serializes `line` into `out`. Serializing into memory fails only if a
/// `Serialize` impl does, which none of these do; should it happen anyway,
/// the partial output is dropped and the answer becomes an error line (which
/// cannot fail: strings and a [`Value`]).
fn write_json(out: &mut Vec<u8>, line: &impl Serialize, id: &Value) {
    let start = out.len();
    if let Err(e) = serde_json::to_writer(&mut *out, line) {
        out.truncate(start);
        let message = format!("could not write the answer: {e}");
        let _ = serde_json::to_writer(&mut *out, &ErrorLine { id, error: &message });
    }
}

/// An answer line: its fields in the documented order (docs/permissions.md),
/// for both [`decision_json`] and [`write_decision`].
#[derive(Serialize)]
struct DecisionLine<'a> {
    id: &'a Value,
    behavior: &'static str,
    bypass_immune: bool,
    source: &'static str,
    rule: Option<&'a str>,
    message: &'a str,
    reason: Option<&'a str>,
    read_only: bool,
    tool_check: Option<VerdictLine<'a>>,
    suggested_rules: RuleTexts<'a>,
}

impl<'a> DecisionLine<'a> {
    fn new(id: &'a Value, d: &'a Decision) -> Self {
        DecisionLine {
            id,
            behavior: d.behavior.as_str(),
            bypass_immune: d.bypass_immune,
            source: d.source.as_str(),
            rule: d.rule.as_deref(),
            message: &d.message,
            reason: d.reason.as_deref(),
            read_only: d.read_only,
            tool_check: d.tool_check.as_ref().map(VerdictLine),
            suggested_rules: RuleTexts(&d.suggested_rules),
        }
    }
}

/// `tool_check` of an answer line: `{behavior, bypass_immune, message}`.
struct VerdictLine<'a>(&'a ToolVerdict);

impl Serialize for VerdictLine<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut s = serializer.serialize_struct("ToolCheck", 3)?;
        s.serialize_field("behavior", self.0.behavior.as_str())?;
        s.serialize_field("bypass_immune", &self.0.bypass_immune)?;
        s.serialize_field("message", &self.0.message)?;
        s.end()
    }
}

/// Rules as a list of their texts (`Bash(git:*)`).
struct RuleTexts<'a>(&'a [Rule]);

impl Serialize for RuleTexts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(RuleText))
    }
}

/// One rule as its text.
struct RuleText<'a>(&'a Rule);

impl Serialize for RuleText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self.0)
    }
}

/// The fields of [`error_json`], in its order.
#[derive(Serialize)]
struct ErrorLine<'a> {
    id: &'a Value,
    error: &'a str,
}

/// Answers one request line end to end.
///
/// `resolve` gets the parsed request and returns the tool (a fresh instance
/// of the tool it names) with the configured context and rules for it; an
/// error (unknown tool, failed instantiation) becomes an [`error_json`]
/// line, as do malformed lines and malformed rules.
pub async fn answer_line<T, F>(line: &str, resolve: F) -> Value
where
    T: PolicyTool,
    F: AsyncFnOnce(&CheckRequest) -> anyhow::Result<(T, Context, RuleSet)>,
{
    let req = match CheckRequest::parse(line) {
        Ok(req) => req,
        Err(e) => return error_json(&e.id, &e.message),
    };
    let (mut tool, base_ctx, base_rules) = match resolve(&req).await {
        Ok(found) => found,
        Err(e) => return error_json(&req.id, &format!("{e:#}")),
    };
    answer_request(&req, &mut tool, &base_ctx, &base_rules).await
}

/// Answers one parsed request with `tool` (an instance of the tool it
/// names), `base_ctx` and `base_rules` being the configured context and
/// rules that the request's keys override: a malformed `rules` key becomes
/// an [`error_json`] line, anything else a [`decision_json`] line.
///
/// `tool` is only consulted through its permission checks, so a caller may
/// keep one instance for many requests (`toolhost check --batch` does).
pub async fn answer_request<T: PolicyTool>(
    req: &CheckRequest,
    tool: &mut T,
    base_ctx: &Context,
    base_rules: &RuleSet,
) -> Value {
    match decide_request(req, tool, base_ctx, base_rules).await {
        Ok(decision) => decision_json(&req.id, &decision),
        Err(message) => error_json(&req.id, &message),
    }
}

/// [`answer_request`] written straight into `out` (the bytes of its answer's
/// JSON text, without a line end).
pub async fn write_answer<T: PolicyTool>(
    out: &mut Vec<u8>,
    req: &CheckRequest,
    tool: &mut T,
    base_ctx: &Context,
    base_rules: &RuleSet,
) {
    match decide_request(req, tool, base_ctx, base_rules).await {
        Ok(decision) => write_decision(out, &req.id, &decision),
        Err(message) => write_error(out, &req.id, &message),
    }
}

/// The decision for one parsed request, or the message of its error line (a
/// malformed `rules` key).
async fn decide_request<T: PolicyTool>(
    req: &CheckRequest,
    tool: &mut T,
    base_ctx: &Context,
    base_rules: &RuleSet,
) -> Result<Decision, String> {
    let rules = match &req.rules {
        Some(_) => Some(req.rule_set(base_rules).map_err(|e| e.to_string())?),
        None => None,
    };
    let rules = rules.as_ref().unwrap_or(base_rules);
    let ctx = req.context_for(base_ctx);
    Ok(evaluate(tool, &req.input_text(), &ctx, rules).await)
}

#[cfg(test)]
mod tests {
    use anyhow::anyhow;
    use futures::executor::block_on;
    use serde_json::json;

    use super::*;
    use crate::permission::Behavior::{Allow, Ask, Deny};
    use crate::permission::tests::{Fake, bash, cmd, ctx, fp, reader, rules, run, wd_ctx, writer};
    use crate::permission::{Mode, Source};

    #[test]
    fn parses_minimal_and_full_requests() {
        let r = CheckRequest::parse(r#"{"tool":"Bash","input":{"command":"ls"}}"#).unwrap();
        assert_eq!((r.id.clone(), r.tool.as_str(), r.mode), (serde_json::Value::Null, "Bash", None));
        assert_eq!(r.input_text(), r#"{"command":"ls"}"#);
        let base = wd_ctx(Mode::Bypass);
        assert_eq!(r.context(&base), base);

        let r = CheckRequest::parse(
            r#"{"id":"a","tool":"Write","input":{},"mode":"accept-edits","working_dirs":["/w"],
                "cwd":"/c","home":"/h","rules":{"allow":["Write"]},"tool_config":{"k":1}}"#,
        )
        .unwrap();
        let c = r.context(&base);
        assert_eq!(c.mode, Mode::AcceptEdits);
        assert_eq!(c.working_dirs, ["/w"]);
        assert_eq!((c.cwd.as_str(), c.home.as_str()), ("/c", "/h"));
        assert_eq!(c.tool_config, json!({"k": 1}));
        let set = r.rule_set(&rules(&[], &["Write"], &[])).unwrap();
        assert_eq!(set.rules("Write", Allow).len(), 1);
        assert!(set.rules("Write", Deny).is_empty(), "request rules replace the configured ones");
    }

    #[test]
    fn rejects_bad_requests_with_a_fix() {
        let e = CheckRequest::parse("{nope").unwrap_err();
        assert_eq!(e.id, serde_json::Value::Null);
        assert!(e.message.contains("not valid JSON"));
        let e = CheckRequest::parse(r#"{"id":3,"tool":"Bash","input":{},"working_dirs":["rel/dir"]}"#).unwrap_err();
        assert_eq!(e.id, json!(3));
        assert!(e.message.contains("`rel/dir` is not an absolute path"), "{}", e.message);
        let e = CheckRequest::parse(r#"{"id":4,"tool":"Bash","input":{},"mood":"x"}"#).unwrap_err();
        assert!(e.message.contains("unknown field `mood`"), "{}", e.message);
        let e = CheckRequest::parse(r#"{"id":5,"tool":"Bash","input":"ls"}"#).unwrap_err();
        assert!(e.message.contains("`input` must be a JSON object"), "{}", e.message);
        let e = CheckRequest::parse(r#"{"id":6,"input":{}}"#).unwrap_err();
        assert!(e.message.contains("missing field `tool`"), "{}", e.message);
        let e = CheckRequest::parse(r#"{"id":7,"tool":"Bash","input":{},"mode":"plan"}"#).unwrap_err();
        assert!(e.message.contains("unknown permission mode `plan`"), "{}", e.message);
        let e = CheckRequest::parse(r#"{"id":8,"tool":"Bash","input":{},"cwd":"x"}"#).unwrap_err();
        assert!(e.message.contains("`cwd` `x` is not an absolute path"), "{}", e.message);
        let e = CheckRequest::parse("[1]").unwrap_err();
        assert!(e.message.contains("must be a JSON object"));
    }

    #[test]
    fn decision_line_has_exact_shape() {
        let x = run(&mut bash(), cmd("npm i"), &ctx(Mode::Default), &rules(&[], &[], &["Bash(npm:*)"]));
        assert_eq!(
            decision_json(&json!(1), &x).to_string(),
            r#"{"id":1,"behavior":"ask","bypass_immune":false,"source":"ask_rule","rule":"Bash(npm:*)","message":"Permission required for Bash","reason":"Rule: npm:*","read_only":false,"tool_check":null,"suggested_rules":["Bash(npm i:*)"]}"#
        );
        let x = run(&mut writer("Write"), fp("/home/user/.bashrc"), &ctx(Mode::Default), &RuleSet::new());
        assert_eq!(
            decision_json(&json!("w"), &x).to_string(),
            r#"{"id":"w","behavior":"ask","bypass_immune":true,"source":"tool_safety_ask","rule":null,"message":"Permission required for /home/user/.bashrc (safety check)","reason":"Path is a dangerous file (safety check)","read_only":false,"tool_check":{"behavior":"ask","bypass_immune":true,"message":"Permission required for /home/user/.bashrc (safety check)"},"suggested_rules":["Write(/home/user/**)"]}"#
        );
        let x = run(&mut reader("Read"), fp("/x"), &ctx(Mode::Default), &RuleSet::new());
        assert_eq!(
            decision_json(&json!(null), &x).to_string(),
            r#"{"id":null,"behavior":"allow","bypass_immune":false,"source":"read_only","rule":null,"message":"Permission granted for Read (read-only invocation)","reason":"Read-only operations are auto-allowed","read_only":true,"tool_check":null,"suggested_rules":[]}"#
        );
        assert_eq!(error_json(&json!(2), "no tool named `X`").to_string(), r#"{"id":2,"error":"no tool named `X`"}"#);
    }

    #[test]
    fn written_lines_are_the_json_lines_byte_for_byte() {
        let mut decisions = vec![
            run(&mut bash(), cmd("npm i"), &ctx(Mode::Default), &rules(&[], &[], &["Bash(npm:*)"])),
            run(&mut writer("Write"), fp("/home/user/.bashrc"), &ctx(Mode::Default), &RuleSet::new()),
            run(&mut reader("Read"), fp("/x"), &ctx(Mode::Default), &RuleSet::new()),
            run(&mut bash(), cmd("git push"), &ctx(Mode::DontAsk), &RuleSet::new()),
        ];
        // Text that needs escaping, and every optional part present.
        decisions.push(Decision {
            behavior: Ask,
            message: "quote \" backslash \\ newline \n tab \t nul \u{0} é 😀 \u{2028}".into(),
            reason: Some("</script> \u{1f}".into()),
            bypass_immune: true,
            source: Source::ToolSafetyAsk,
            rule: Some("Bash(echo \"$(date)\")".into()),
            read_only: false,
            tool_check: Some(ToolVerdict::new(Ask, "why\u{7f}\r\n").immune()),
            suggested_rules: vec![
                Rule::with_content("Bash", "echo \"x\\y\":*", Allow),
                Rule::with_content("Bash", "", Allow),
                Rule::tool_level("Bash", Allow),
            ],
        });
        let ids = [
            json!(null),
            json!(1),
            json!(-7),
            json!(1.5e300),
            json!(0.1),
            json!("a \"b\""),
            json!(true),
            json!([1, "x", null]),
            json!({"z": 1, "a": {"y": [], "b": 2}}),
        ];
        for d in &decisions {
            for id in &ids {
                let mut out = b"prefix ".to_vec();
                write_decision(&mut out, id, d);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    format!("prefix {}", decision_json(id, d)),
                    "{d:?} with id {id}"
                );
            }
        }
        for id in &ids {
            let mut out = Vec::new();
            write_error(&mut out, id, "no tool named `X` \"\n");
            assert_eq!(String::from_utf8(out).unwrap(), error_json(id, "no tool named `X` \"\n").to_string());
        }
    }

    #[test]
    fn written_answers_match_answer_line() {
        let lines = [
            r#"{"id":1,"tool":"Bash","input":{"command":"git push"}}"#,
            r#"{"id":2,"tool":"Bash","input":{"command":"git push"},"mode":"explore"}"#,
            r#"{"id":3,"tool":"Bash","input":{"command":"ls"},"working_dirs":["/w"],"cwd":"/w","home":"/h"}"#,
            r#"{"id":4,"tool":"Bash","input":{},"rules":{"deny":["Bash(x"]}}"#,
            r#"{"id":5,"tool":"Bash","input":{"command":"npm i"},"rules":{"ask":["Bash(npm:*)"]}}"#,
            r#"{"id":6,"tool":"Bash","input":{"command":"npm i"},"tool_config":{"b":1,"a":2}}"#,
        ];
        let base = ctx(Mode::Default);
        let base_rules = rules(&["Bash(git:*)"], &[], &[]);
        for line in lines {
            let req = CheckRequest::parse(line).unwrap();
            let expected =
                block_on(answer_line(line, async |_: &CheckRequest| Ok((bash(), base.clone(), base_rules.clone()))));
            let mut out = Vec::new();
            block_on(write_answer(&mut out, &req, &mut bash(), &base, &base_rules));
            assert_eq!(String::from_utf8(out).unwrap(), expected.to_string(), "{line}");
        }
    }

    #[test]
    fn answer_line_end_to_end() {
        let resolve = async |req: &CheckRequest| -> anyhow::Result<(Fake, Context, RuleSet)> {
            match req.tool.as_str() {
                "Bash" => Ok((bash(), ctx(Mode::Default), rules(&["Bash(git:*)"], &[], &[]))),
                other => Err(anyhow!("no tool named `{other}` is loaded; `toolhost list` shows the loaded tools")),
            }
        };
        let out = block_on(answer_line(r#"{"id":1,"tool":"Bash","input":{"command":"git push"}}"#, resolve));
        assert_eq!((out["behavior"].clone(), out["rule"].clone()), (json!("allow"), json!("Bash(git:*)")));
        let out =
            block_on(answer_line(r#"{"id":2,"tool":"Bash","input":{"command":"git push"},"mode":"explore"}"#, resolve));
        assert_eq!(out["behavior"], json!("deny"));
        let out = block_on(answer_line(r#"{"id":3,"tool":"Nope","input":{}}"#, resolve));
        assert_eq!(out["id"], json!(3));
        assert!(out["error"].as_str().unwrap().contains("no tool named `Nope`"));
        let out = block_on(answer_line(r#"{"id":4,"tool":"Bash","input":{},"rules":{"deny":["Bash(x"]}}"#, resolve));
        assert!(out["error"].as_str().unwrap().contains("invalid deny rule `Bash(x`"));
        let out = block_on(answer_line("garbage", resolve));
        assert_eq!(out["id"], json!(null));
        assert!(out.get("error").is_some());
    }
}
