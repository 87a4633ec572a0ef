//! AskUser's questions and the shape of the user's answers, shared by the
//! front ends that put them to a person (the terminal, MCP elicitation).
//!
//! AskUser is an external tool: the host validates its input against the
//! schema and hands it to the front end, which asks and completes the call
//! with [`answers_result`]. The questions are the model's text: a front end
//! shows them escaped (see [`crate::escape`]).

use serde::Deserialize;
use serde_json::json;

use crate::ExternalResult;

/// AskUser's input: the questions to ask, in order.
#[derive(Debug, Clone, Deserialize)]
pub struct Questions {
    /// The questions.
    pub questions: Vec<Question>,
}

impl Questions {
    /// The questions of AskUser's (validated) input.
    pub fn from_input(input: &serde_json::Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(input)
    }
}

/// One question and its choices.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// The question.
    pub question: String,
    /// A short label for it.
    pub header: String,
    /// Background shown under the question.
    #[serde(default)]
    pub context: Option<String>,
    /// The choices offered (the user may also give an answer of their own).
    pub options: Vec<QuestionOption>,
    /// Several choices may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

/// One choice of a [`Question`].
#[derive(Debug, Clone, Deserialize)]
pub struct QuestionOption {
    /// What the choice is called (what an answer selects).
    pub label: String,
    /// What it means.
    pub description: String,
    /// A preview of what choosing it gives (single-select questions).
    #[serde(default)]
    pub preview: Option<String>,
}

/// One answer, in the shape of AgentScope's `AskUserAnswer`.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The question answered.
    pub question: String,
    /// The labels picked.
    pub selected: Vec<String>,
    /// The user's own answer, if any.
    pub other: Option<String>,
}

/// AskUser's result: the answers as text for the model and as metadata
/// (`answers`: question, selected, other).
pub fn answers_result(answers: &[Answer]) -> ExternalResult {
    let text = answers
        .iter()
        .map(|a| {
            let mut parts = a.selected.clone();
            if let Some(other) = &a.other {
                parts.push(format!("Other: {other}"));
            }
            format!("- {}: {}", a.question, parts.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n");
    let answers: Vec<_> =
        answers.iter().map(|a| json!({"question": a.question, "selected": a.selected, "other": a.other})).collect();
    let mut metadata = serde_json::Map::new();
    metadata.insert("answers".into(), answers.into());
    ExternalResult { output: format!("The user answered:\n{text}"), state: None, metadata }
}
