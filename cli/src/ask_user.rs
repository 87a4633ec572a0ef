//! AskUser on a terminal: shows the questions and options (plus an "Other"
//! free-text choice), collects the answers and completes the external call.

use std::io::{BufRead, Write};

use anyhow::{Context as _, Result, bail};
use toolhost::ExternalResult;
use toolhost::ask_user::{Answer, Question, Questions, answers_result};

use super::shown::{block, line};

/// Asks every question on the terminal (`input` is AskUser's validated
/// input) and returns the result for `complete_external`.
pub fn ask(input: &serde_json::Value, mut read: impl BufRead, mut write: impl Write) -> Result<ExternalResult> {
    let params = Questions::from_input(input).context("AskUser input")?;
    let mut answers = Vec::new();
    for q in &params.questions {
        // The questions are the model's text: shown with control characters escaped.
        writeln!(write, "\n[{}] {}", line(&q.header), line(&q.question))?;
        if let Some(context) = &q.context {
            writeln!(write, "  {}", block(context).replace('\n', "\n  "))?;
        }
        for (i, o) in q.options.iter().enumerate() {
            writeln!(write, "  {}. {} — {}", i + 1, line(&o.label), line(&o.description))?;
            if let (Some(preview), false) = (&o.preview, q.multi_select) {
                writeln!(write, "     {}", block(preview).replace('\n', "\n     "))?;
            }
        }
        let other = q.options.len() + 1;
        writeln!(write, "  {other}. Other (type your own answer)")?;
        answers.push(pick(q, other, &mut read, &mut write)?);
    }
    Ok(answers_result(&answers))
}

fn pick(q: &Question, other: usize, read: &mut impl BufRead, write: &mut impl Write) -> Result<Answer> {
    loop {
        if q.multi_select {
            write!(write, "Choose one or more (e.g. 1,3): ")?;
        } else {
            write!(write, "Choose one: ")?;
        }
        write.flush()?;
        let mut line = String::new();
        if read.read_line(&mut line)? == 0 {
            bail!("no answer: the input ended");
        }
        let choices: Result<Vec<usize>, _> = line.split(',').map(|c| c.trim().parse::<usize>()).collect();
        let valid = match &choices {
            Ok(c) => !c.is_empty() && c.iter().all(|n| (1..=other).contains(n)) && (q.multi_select || c.len() == 1),
            Err(_) => false,
        };
        if !valid {
            writeln!(
                write,
                "Please answer with {} between 1 and {other}.",
                if q.multi_select { "numbers" } else { "one number" }
            )?;
            continue;
        }
        let choices = choices.unwrap_or_default();
        let selected: Vec<String> =
            choices.iter().filter(|n| **n < other).map(|n| q.options[n - 1].label.clone()).collect();
        let other_text = if choices.contains(&other) {
            write!(write, "Your answer: ")?;
            write.flush()?;
            let mut text = String::new();
            read.read_line(&mut text)?;
            Some(text.trim().to_string())
        } else {
            None
        };
        return Ok(Answer { question: q.question.clone(), selected, other: other_text });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_become_text_and_metadata() {
        let input = json!({"questions": [
            {"question": "Which db?", "header": "DB", "options": [
                {"label": "Postgres (Recommended)", "description": "relational"},
                {"label": "Redis", "description": "cache"}]},
            {"question": "Which extras?", "header": "Extras", "multi_select": true, "options": [
                {"label": "Auth", "description": "login"},
                {"label": "Search", "description": "full text"}]}
        ]});
        let typed = "7\n1\n1,3\nmetrics\n";
        let mut shown = Vec::new();
        let r = ask(&input, typed.as_bytes(), &mut shown).unwrap();
        let shown = String::from_utf8(shown).unwrap();
        assert!(shown.contains("3. Other (type your own answer)") && shown.contains("Please answer"), "{shown}");
        assert_eq!(
            r.output,
            "The user answered:\n- Which db?: Postgres (Recommended)\n- Which extras?: Auth, Other: metrics"
        );
        assert_eq!(
            serde_json::Value::Object(r.metadata),
            json!({"answers": [
                {"question": "Which db?", "selected": ["Postgres (Recommended)"], "other": null},
                {"question": "Which extras?", "selected": ["Auth"], "other": "metrics"}]})
        );
    }
}
