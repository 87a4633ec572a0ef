//! `AskUser`: asks the user one to four multiple-choice questions
//! (AgentScope's AskUser, spec §8).
//!
//! An *external* tool: the host never calls [`Tool::call`]. After the
//! permission check it stops with a "requires external execution" event; the
//! driver (CLI, MCP client, Rust caller) shows the questions, and resumes the
//! call with a result whose metadata follows [`result_metadata_schema`]
//! (`{"answers": [{"question", "selected", "other"}]}`).
//!
//! Validation the JSON Schema cannot express (AgentScope's pydantic
//! validators, plus one rule of its description) lives in
//! [`Tool::check_permissions`], the last tool code the host runs before it
//! hands the call out, and refuses the call with a DENY naming every
//! problem:
//!
//! - option labels must be unique within a question;
//! - question texts must be unique within the call;
//! - a `preview` is allowed only on single-select questions.
//!
//! Because AskUser is read-only, the permission engine would allow it on its
//! read-only fast path without ever consulting `check_permissions`; so
//! [`Tool::check_read_only`] answers `false` for invalid input, which sends
//! the call on to `check_permissions` and its DENY. (In explore mode the
//! engine denies non-read-only calls itself, before the tool's check, so an
//! invalid call is refused there too, with the engine's explore message.)

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{Value, json};
use toolhost_sdk::{Context, Decision, Output, Tool, ToolError, ToolSpec, export_tool};

/// The AskUser tool.
pub struct AskUser;

/// The input (`AskUserParams`).
#[derive(Debug, Clone, Deserialize)]
pub struct Input {
    /// One to four questions.
    pub questions: Vec<Question>,
}

/// One question.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// The question, ending with a question mark.
    pub question: String,
    /// A short tag shown as a chip (at most 12 characters).
    pub header: String,
    /// What the user should look at before answering, shown above the options.
    #[serde(default)]
    pub context: Option<String>,
    /// Two to four choices.
    pub options: Vec<AnswerOption>,
    /// Whether several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

/// One choice of a question.
#[derive(Debug, Clone, Deserialize)]
pub struct AnswerOption {
    /// The text of the choice (what the answer's `selected` holds).
    pub label: String,
    /// What choosing it means.
    pub description: String,
    /// Material to show when the option is focused (single-select only).
    #[serde(default)]
    pub preview: Option<String>,
}

const DESCRIPTION: &str = "Asks the user one to four multiple-choice questions and waits for the answers. \
Use it when you need the user's decision or preference to go on: an ambiguous request, a choice between \
approaches, a missing requirement. Rules: 1-4 questions per call, each with a short `header` (at most 12 \
characters) and 2-4 options; do not add an \"Other\" option, the user can always answer in their own words. \
If you recommend an option, put it first and append \"(Recommended)\" to its label. Set `multi_select` only \
when the choices are not mutually exclusive. Use an option's `preview` (code, a layout, a config snippet) \
only in single-select questions. Put anything the user should read before answering in `context`. Option \
labels must be unique within a question and question texts unique within the call. The answer lists, per \
question, the labels chosen and any free-text reply.";

/// The input JSON Schema: `$defs` `_Question` and `_Option`, as AgentScope
/// exports it (titles removed).
pub fn input_schema() -> Value {
    json!({
        "$defs": {
            "_Option": {
                "type": "object",
                "properties": {
                    "label": {
                        "type": "string",
                        "description": "The text of the choice, short (1-5 words); this is what the answer reports."
                    },
                    "description": {
                        "type": "string",
                        "description": "What choosing this option means, or its trade-offs."
                    },
                    "preview": {
                        "anyOf": [{"type": "string"}, {"type": "null"}],
                        "default": null,
                        "description": "Optional material shown when the option is focused (code, a mock-up, a config). Single-select questions only."
                    }
                },
                "required": ["label", "description"]
            },
            "_Question": {
                "type": "object",
                "properties": {
                    "question": {
                        "type": "string",
                        "description": "The complete question, ending with a question mark."
                    },
                    "header": {
                        "type": "string",
                        "maxLength": 12,
                        "description": "A very short tag for the question (at most 12 characters), e.g. \"Auth method\"."
                    },
                    "context": {
                        "anyOf": [{"type": "string"}, {"type": "null"}],
                        "default": null,
                        "description": "What the user should look at before answering, shown above the options."
                    },
                    "options": {
                        "type": "array",
                        "items": {"$ref": "#/$defs/_Option"},
                        "minItems": 2,
                        "maxItems": 4,
                        "description": "Two to four choices. Do not add an \"Other\" choice: free text is always offered."
                    },
                    "multi_select": {
                        "type": "boolean",
                        "default": false,
                        "description": "Let the user choose several options (for choices that are not mutually exclusive)."
                    }
                },
                "required": ["question", "header", "options"]
            }
        },
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {"$ref": "#/$defs/_Question"},
                "minItems": 1,
                "maxItems": 4,
                "description": "One to four questions to ask the user."
            }
        },
        "required": ["questions"]
    })
}

/// The JSON Schema of an answer's metadata (`AskUserMetadata`):
/// `{"answers": [{"question": string, "selected": [string] = [], "other":
/// string|null = null}]}`, one entry per question, `question` verbatim.
pub fn result_metadata_schema() -> Value {
    json!({
        "$defs": {
            "AskUserAnswer": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question, verbatim."},
                    "selected": {
                        "type": "array",
                        "items": {"type": "string"},
                        "default": [],
                        "description": "The labels of the options the user chose."
                    },
                    "other": {
                        "anyOf": [{"type": "string"}, {"type": "null"}],
                        "default": null,
                        "description": "The user's free-text answer, if any."
                    }
                },
                "required": ["question"]
            }
        },
        "type": "object",
        "properties": {
            "answers": {"type": "array", "items": {"$ref": "#/$defs/AskUserAnswer"}}
        },
        "required": ["answers"]
    })
}

/// Everything wrong with `input` that the JSON Schema does not catch (and,
/// as a second line of defence, what it should have: the counts and the
/// header length). Empty when the input is fine.
pub fn problems(input: &Input) -> Vec<String> {
    let mut problems = Vec::new();
    let n = input.questions.len();
    if !(1..=4).contains(&n) {
        problems.push(format!("ask between 1 and 4 questions, not {n}"));
    }
    let mut asked: Vec<&str> = Vec::new();
    for (qi, q) in input.questions.iter().enumerate() {
        let which = format!("question {} ({:?})", qi + 1, q.question);
        if let Some(first) = asked.iter().position(|a| *a == q.question) {
            problems.push(format!(
                "questions {} and {} ask the same question {:?}; question texts must be unique",
                first + 1,
                qi + 1,
                q.question
            ));
        }
        asked.push(&q.question);
        let header_len = q.header.chars().count();
        if header_len > 12 {
            problems.push(format!(
                "{which} has a header of {header_len} characters ({:?}); at most 12 are allowed",
                q.header
            ));
        }
        let k = q.options.len();
        if !(2..=4).contains(&k) {
            problems.push(format!("{which} has {k} options; give between 2 and 4"));
        }
        let mut seen = HashSet::new();
        let mut reported = HashSet::new();
        for o in &q.options {
            if !seen.insert(o.label.as_str()) && reported.insert(o.label.as_str()) {
                problems.push(format!(
                    "{which} has the option label {:?} more than once; labels must be unique within a question",
                    o.label
                ));
            }
        }
        if q.multi_select {
            for o in q.options.iter().filter(|o| o.preview.as_deref().is_some_and(|p| !p.is_empty())) {
                problems.push(format!(
                    "{which} is multi_select, but its option {:?} has a preview; previews are only for single-select questions",
                    o.label
                ));
            }
        }
    }
    problems
}

/// The DENY message for invalid input, naming every problem.
pub fn denial(problems: &[String]) -> String {
    format!("Invalid AskUser input: {}. Fix the questions and call AskUser again.", problems.join("; "))
}

impl Tool for AskUser {
    type Input = Input;

    fn spec() -> ToolSpec {
        ToolSpec::new("AskUser", DESCRIPTION)
            .schema(input_schema())
            .external(true)
            .read_only(true)
            .concurrency_safe(true)
            .state_injected(false)
            .result_metadata_schema(result_metadata_schema())
    }

    /// Read-only when valid; invalid input is reported as not read-only so
    /// that the engine goes on to [`Tool::check_permissions`], which denies it.
    fn check_read_only(input: &Input) -> bool {
        problems(input).is_empty()
    }

    fn check_permissions(input: &Input, _ctx: &Context) -> Decision {
        let problems = problems(input);
        if problems.is_empty() {
            Decision::allow("The AskUser tool is always permitted.")
        } else {
            Decision::deny(denial(&problems)).because("AskUser input failed validation")
        }
    }

    fn call(_input: Input, _out: &mut Output) -> Result<(), ToolError> {
        Err(ToolError::Unsupported(
            "AskUser is an external tool: the host shows the questions and returns the answer; it is never called directly".into(),
        ))
    }
}

export_tool!(AskUser);

#[cfg(test)]
mod tests;
