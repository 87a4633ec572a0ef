//! `toolhost check --batch`: one JSON request per input line, one JSON
//! answer per output line.
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
//! [`error_json`]. The CLI loop is: [`CheckRequest::parse`] each line,
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

use super::{Context, Decision, Mode, PolicyTool, Rule, RuleSet, ToolVerdict, evaluate};

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

/// One line of `toolhost check --batch` input.
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
    pub fn rule_set(&self, base: &RuleSet) -> Result<RuleSet, super::RuleSyntaxError> {
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
