//! Permission rules: the textual syntax and the rule store.

use std::collections::HashMap;
use std::fmt;

use super::Behavior;

/// One permission rule: `Tool` (every call of the tool) or `Tool(content)`
/// (the calls the tool's `match-rule` says the content covers).
///
/// AgentScope has no textual syntax (spec §1.4); toolhost writes rules as
/// text in settings, on the command line and in `check` requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The exact name of the tool the rule is for (`Bash`, `mcp__srv__tool`).
    pub tool: String,
    /// Tool-specific content (`git:*`, `src/**`). `None` (written `Tool`) and
    /// `Some("")` (written `Tool()`) both match every call of the tool.
    pub content: Option<String>,
    /// What the rule does when it matches.
    pub behavior: Behavior,
}

impl Rule {
    /// A tool-level rule (`Tool`), matching every call of the tool.
    pub fn tool_level(tool: impl Into<String>, behavior: Behavior) -> Rule {
        Rule { tool: tool.into(), content: None, behavior }
    }

    /// A rule with content (`Tool(content)`).
    pub fn with_content(tool: impl Into<String>, content: impl Into<String>, behavior: Behavior) -> Rule {
        Rule { tool: tool.into(), content: Some(content.into()), behavior }
    }

    /// Parses `Tool` or `Tool(content)`.
    ///
    /// The content is everything between the first `(` and the final `)`, so
    /// it may itself contain parentheses (`Bash(echo $(date))`). `Tool()` has
    /// empty content and, like `Tool`, matches every call (spec §4.1).
    /// Whitespace around the whole rule is ignored; whitespace inside the
    /// content is kept. The tool name is made of ASCII letters, digits, `_`
    /// and `-` (MCP names such as `mcp__server__tool` may also contain `.`).
    ///
    /// The error says where the text is wrong (column and caret) and how to
    /// write it.
    pub fn parse(text: &str, behavior: Behavior) -> Result<Rule, RuleSyntaxError> {
        let err = |column: usize, kind: RuleSyntaxErrorKind| RuleSyntaxError {
            text: text.to_owned(),
            behavior,
            column,
            kind,
        };
        // Work on char indices so columns are what a reader counts.
        let chars: Vec<char> = text.chars().collect();
        let start = chars.iter().position(|c| !c.is_whitespace()).ok_or_else(|| err(1, RuleSyntaxErrorKind::Empty))?;
        let end = chars.iter().rposition(|c| !c.is_whitespace()).map_or(start, |i| i + 1);
        let body = &chars[start..end];

        let open = body.iter().position(|&c| c == '(');
        let name_chars = &body[..open.unwrap_or(body.len())];
        if name_chars.is_empty() {
            return Err(err(start + 1, RuleSyntaxErrorKind::EmptyToolName));
        }
        let name: String = name_chars.iter().collect();
        let mcp = name.starts_with("mcp__");
        if let Some(bad) =
            name_chars.iter().position(|&c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || (mcp && c == '.')))
        {
            let ch = name_chars[bad];
            let kind = if ch == ')' {
                RuleSyntaxErrorKind::UnopenedParen
            } else {
                RuleSyntaxErrorKind::InvalidToolNameChar(ch)
            };
            return Err(err(start + bad + 1, kind));
        }
        let Some(open) = open else {
            return Ok(Rule::tool_level(name, behavior));
        };
        let Some(close) = body.iter().rposition(|&c| c == ')').filter(|&c| c > open) else {
            return Err(err(
                start + body.len() + 1,
                RuleSyntaxErrorKind::MissingCloseParen { open_column: start + open + 1 },
            ));
        };
        if close + 1 != body.len() {
            return Err(err(start + close + 2, RuleSyntaxErrorKind::TrailingText { close_column: start + close + 1 }));
        }
        let content: String = body[open + 1..close].iter().collect();
        Ok(Rule::with_content(name, content, behavior))
    }

    /// Whether the rule matches every call without asking the tool: no
    /// content, or empty content.
    pub fn is_tool_level(&self) -> bool {
        self.content.as_deref().is_none_or(str::is_empty)
    }

    /// Whether the rule is exactly what its text shows: no control or
    /// bidirectional character anywhere ([`crate::escape::is_disguising`]),
    /// and its text parses back to this same rule. A rule a tool suggests
    /// must pass this before a person is asked to remember it.
    pub fn reads_as_written(&self) -> bool {
        let plain = |s: &str| !s.chars().any(crate::escape::is_disguising);
        plain(&self.tool)
            && self.content.as_deref().is_none_or(plain)
            && Rule::parse(&self.to_string(), self.behavior).is_ok_and(|back| back == *self)
    }

    /// Whether two rules say the same thing: same tool, same behaviour, and
    /// the same content, counting `Tool` and `Tool()` as equal.
    pub fn equivalent(&self, other: &Rule) -> bool {
        self.tool == other.tool
            && self.behavior == other.behavior
            && (self.is_tool_level() && other.is_tool_level() || self.content == other.content)
    }
}

impl fmt::Display for Rule {
    /// `Tool` or `Tool(content)`; `Tool()` for empty content. The output
    /// parses back to the same rule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.content {
            None => f.write_str(&self.tool),
            Some(content) => write!(f, "{}({})", self.tool, content),
        }
    }
}

/// What is wrong with a rule's text; see [`RuleSyntaxError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleSyntaxErrorKind {
    /// The text is empty or only whitespace.
    Empty,
    /// Nothing before the `(`.
    EmptyToolName,
    /// A character that cannot be part of a tool name.
    InvalidToolNameChar(char),
    /// A `)` in the tool name, with no `(` before it.
    UnopenedParen,
    /// `(` without a `)` after it.
    MissingCloseParen {
        /// Where the unclosed `(` is (1-based).
        open_column: usize,
    },
    /// Text after the final `)`.
    TrailingText {
        /// Where the final `)` is (1-based).
        close_column: usize,
    },
}

/// A rule whose text is not `Tool` or `Tool(content)`.
///
/// Displays as one line saying what is wrong and how to fix it, then the
/// rule text and a caret under the offending column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSyntaxError {
    /// The rule text as given.
    pub text: String,
    /// The list the rule was meant for.
    pub behavior: Behavior,
    /// 1-based column (in characters) of the problem.
    pub column: usize,
    /// What is wrong.
    pub kind: RuleSyntaxErrorKind,
}

impl fmt::Display for RuleSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let col = self.column;
        write!(f, "invalid {} rule `{}`: ", self.behavior, self.text)?;
        match &self.kind {
            RuleSyntaxErrorKind::Empty => {
                write!(f, "the rule is empty; write `Tool` or `Tool(content)`, e.g. `Bash(npm run:*)`")?
            }
            RuleSyntaxErrorKind::EmptyToolName => {
                write!(f, "no tool name before `(` at column {col}; write `Tool(content)`, e.g. `Edit(src/**)`")?
            }
            RuleSyntaxErrorKind::InvalidToolNameChar(c) => write!(
                f,
                "{c:?} at column {col} cannot appear in a tool name (letters, digits, `_` and `-` only); \
                 put the content in parentheses: `Tool(content)`"
            )?,
            RuleSyntaxErrorKind::UnopenedParen => {
                write!(f, "`)` at column {col} closes nothing; write `Tool(content)`")?
            }
            RuleSyntaxErrorKind::MissingCloseParen { open_column } => {
                write!(f, "missing `)` at column {col} to close the `(` at column {open_column}; add `)` at the end")?
            }
            RuleSyntaxErrorKind::TrailingText { close_column } => write!(
                f,
                "unexpected text at column {col} after the final `)` at column {close_column}; \
                 a rule ends with `)`, so move that text inside the parentheses or remove it"
            )?,
        }
        // The caret line: control characters are shown as one visible
        // character each so the caret stays under the right column.
        let shown: String = self.text.chars().map(|c| if c.is_control() { '\u{2400}' } else { c }).collect();
        write!(f, "\n  {shown}\n  {}^", " ".repeat(col.saturating_sub(1)))
    }
}

impl std::error::Error for RuleSyntaxError {}

/// The rules of one tool, per behaviour, in insertion order.
#[derive(Debug, Clone, Default, PartialEq)]
struct ToolRules {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
}

/// The user's allow, deny and ask rules, keyed by tool name (spec §4.1).
///
/// Insertion order is kept within each list (the first matching rule wins)
/// and there is no deduplication, as in the reference.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleSet {
    by_tool: HashMap<String, ToolRules>,
    /// Tool names in the order they were first seen.
    order: Vec<String>,
}

impl RuleSet {
    /// An empty rule set.
    pub fn new() -> RuleSet {
        RuleSet::default()
    }

    /// Appends a rule to the list of its behaviour. A `Passthrough` rule is
    /// silently dropped (spec §4.1).
    pub fn add(&mut self, rule: Rule) {
        if rule.behavior == Behavior::Passthrough {
            return;
        }
        if !self.by_tool.contains_key(&rule.tool) {
            self.order.push(rule.tool.clone());
        }
        let lists = self.by_tool.entry(rule.tool.clone()).or_default();
        match rule.behavior {
            Behavior::Allow => lists.allow.push(rule),
            Behavior::Deny => lists.deny.push(rule),
            Behavior::Ask => lists.ask.push(rule),
            Behavior::Passthrough => {}
        }
    }

    /// Parses three lists of rule texts (see [`Rule::parse`]); the first
    /// malformed rule is the error.
    pub fn from_strings(allow: &[String], deny: &[String], ask: &[String]) -> Result<RuleSet, RuleSyntaxError> {
        let mut set = RuleSet::new();
        for (texts, behavior) in [(allow, Behavior::Allow), (deny, Behavior::Deny), (ask, Behavior::Ask)] {
            for text in texts {
                set.add(Rule::parse(text, behavior)?);
            }
        }
        Ok(set)
    }

    /// The rules of `behavior` for the tool named `tool`, in insertion
    /// order; empty for an unknown tool or `Passthrough`.
    pub fn rules(&self, tool: &str, behavior: Behavior) -> &[Rule] {
        let Some(lists) = self.by_tool.get(tool) else {
            return &[];
        };
        match behavior {
            Behavior::Allow => &lists.allow,
            Behavior::Deny => &lists.deny,
            Behavior::Ask => &lists.ask,
            Behavior::Passthrough => &[],
        }
    }

    /// Every tool name some rule is for, in first-seen order; compare with
    /// the loaded tools to warn about rules for unknown tools.
    pub fn tools_named(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }

    /// Every rule, tool by tool (first-seen order), allow then deny then ask.
    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.order
            .iter()
            .filter_map(|t| self.by_tool.get(t))
            .flat_map(|l| l.allow.iter().chain(l.deny.iter()).chain(l.ask.iter()))
    }

    /// Whether the set holds no rule.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Whether an equivalent rule (see [`Rule::equivalent`]) is already in
    /// the set.
    pub fn contains(&self, rule: &Rule) -> bool {
        self.rules(&rule.tool, rule.behavior).iter().any(|r| r.equivalent(rule))
    }
}
