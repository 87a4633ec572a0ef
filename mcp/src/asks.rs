//! The engine's asks (and AskUser's questions) as MCP elicitation forms,
//! and the sealed, single-use request state of 2026-07-28's multi-round-trip
//! requests.
//!
//! A form is read by a person, and everything in it but toolhost's own
//! words is someone else's text (the model's input and questions, a
//! plugin's check message, a rule it suggests): the message, the field
//! titles and the choices' titles and values go through the one escaper
//! ([`toolhost::escape`]), as the terminal prompt does, so a bidi control,
//! a terminal escape or an invisible character shows as an escape.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema};
use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use toolhost::ask_user::{self, Questions, answers_result};
use toolhost::escape::line;
use toolhost::permission::Decision;
use toolhost::question::{PermissionQuestion, can_remember};
use toolhost::{ExternalResult, PermissionAnswer, PermissionRequest, Toolhost};

use crate::keyring::Keyring;
use toolhost::coordination::NonceStore;

/// The key of a permission ask in an `InputRequired` result.
pub(crate) const PERMISSION: &str = "permission";
/// The key of AskUser's questions in an `InputRequired` result.
pub(crate) const ASK_USER: &str = "ask_user";

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_AND_REMEMBER: &str = "allow_and_remember";
const DENY: &str = "deny";

/// How long a sealed request state can be answered.
const STATE_TTL: Duration = Duration::from_secs(600);

/// The form for a permission ask on `host`: allow once, allow and
/// remember (when there are rules to remember), deny.
pub(crate) fn permission_form(host: &Toolhost, req: &PermissionRequest) -> ElicitRequestParams {
    let question = PermissionQuestion::new(host, &req.tool, &req.input, &req.decision);
    let mut message = question.headline;
    for line in
        question.details.iter().map(String::as_str).chain(question.note.map(|n| format!("note: {n}")).as_deref())
    {
        message.push('\n');
        message.push_str(line);
    }
    let (mut values, mut titles) = (vec![ALLOW_ONCE.to_string()], vec!["Allow once".to_string()]);
    if !question.rules.is_empty() {
        values.push(ALLOW_AND_REMEMBER.into());
        titles.push(format!("Allow and remember {}", question.rules.join(", ")));
    }
    values.push(DENY.into());
    titles.push("Deny".into());
    let choice = EnumSchema::builder(values).enum_titles(titles).map(|b| b.build());
    let schema = choice
        .ok()
        .and_then(|c| ElicitationSchema::builder().required_enum_schema("decision", c).build().ok())
        .unwrap_or_else(|| ElicitationSchema::builder().required_string("decision").build_unchecked());
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema }
}

/// The answer a client's elicitation result gives to `decision`: only an
/// accepted form with a known choice allows; the rules remembered are the
/// engine's suggestions, never anything the client sent.
pub(crate) fn permission_answer(result: &ElicitResult, decision: &Decision) -> PermissionAnswer {
    if result.action != ElicitationAction::Accept {
        return PermissionAnswer::Deny;
    }
    match result.content.as_ref().and_then(|c| c.get("decision")).and_then(Value::as_str) {
        Some(ALLOW_ONCE) => PermissionAnswer::AllowOnce,
        Some(ALLOW_AND_REMEMBER) if can_remember(decision) => {
            PermissionAnswer::AllowAndRemember(decision.suggested_rules.clone())
        }
        _ => PermissionAnswer::Deny,
    }
}

/// The tool error for an ask when the client cannot elicit: names the rule
/// that would allow the call, so the model can tell the user.
pub(crate) fn not_asked(req: &PermissionRequest) -> String {
    toolhost::refusal::nobody_asked(
        &req.tool,
        &req.decision,
        "toolhost could not ask the user: this MCP client does not support elicitation",
        " to the server's settings",
    )
}

/// The form for AskUser's questions (its validated input): one choice per
/// question (several for multi-select), plus an optional free answer. The
/// model's text is shown escaped, the choices' values too: an answer names
/// an option by its escaped label ([`ask_user_result`] maps it back).
pub(crate) fn ask_user_form(input: &Value) -> Option<ElicitRequestParams> {
    let q = Questions::from_input(input).ok()?;
    let mut schema = ElicitationSchema::builder();
    let mut message = String::from("The agent asks:");
    for (i, question) in q.questions.iter().enumerate() {
        message.push_str(&format!("\n[{}] {}", line(&question.header), line(&question.question)));
        let values: Vec<String> = question.options.iter().map(|o| line(&o.label).into_owned()).collect();
        let titles: Vec<String> =
            question.options.iter().map(|o| format!("{} — {}", line(&o.label), line(&o.description))).collect();
        let builder =
            EnumSchema::builder(values).title(line(&question.header).into_owned()).enum_titles(titles).ok()?;
        let choice = if question.multi_select { builder.multiselect().build() } else { builder.build() };
        schema = schema.optional_enum_schema(format!("q{i}"), choice).optional_string(format!("q{i}_other"));
    }
    let requested_schema = schema.build().ok()?;
    Some(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema })
}

/// AskUser's result from the user's answers to [`ask_user_form`], in the
/// shape the terminal gives (`answers`: question, selected, other).
pub(crate) fn ask_user_result(input: &Value, result: &ElicitResult) -> Option<ExternalResult> {
    if result.action != ElicitationAction::Accept {
        return None;
    }
    let q = Questions::from_input(input).ok()?;
    let content = result.content.clone().unwrap_or_default();
    let answers: Vec<ask_user::Answer> = q
        .questions
        .iter()
        .enumerate()
        .map(|(i, question)| {
            // Only labels the question offered count as selected; the
            // form offered each as its escaped text.
            let picked: Vec<String> = match content.get(format!("q{i}")) {
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
                _ => Vec::new(),
            };
            let selected = picked
                .iter()
                .filter_map(|p| question.options.iter().find(|o| line(&o.label) == p.as_str()))
                .map(|o| o.label.clone())
                .collect();
            let other = content.get(format!("q{i}_other")).and_then(Value::as_str).filter(|s| !s.is_empty());
            ask_user::Answer { question: question.question.clone(), selected, other: other.map(str::to_string) }
        })
        .collect();
    Some(answers_result(&answers))
}

/// The hex SHA-256 of a JSON value's text: binds an answer to one input.
pub(crate) fn digest(value: &Value) -> String {
    hex::encode(Sha256::digest(value.to_string().as_bytes()))
}

/// An answer the user gave in an earlier round of one call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Answer {
    /// A permission ask about `tool` with the input of this digest.
    Permission { tool: String, input: String, choice: String },
    /// AskUser's questions with this input digest.
    AskUser { input: String, result: ExternalResult },
}

impl Answer {
    /// The permission answer for `req`, if this answer is about it.
    pub(crate) fn permission_for(&self, req: &PermissionRequest) -> Option<PermissionAnswer> {
        match self {
            Answer::Permission { tool, input, choice } if *tool == req.tool && *input == digest(&req.input) => {
                let result = ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "decision": choice }));
                Some(permission_answer(&result, &req.decision))
            }
            _ => None,
        }
    }
}

/// What a round asked, sealed into its request state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Pending {
    /// A permission ask about `tool` with the input of this digest.
    Permission { tool: String, input: String },
    /// AskUser's questions (the input, to rebuild the answer).
    AskUser { input: Value },
}

impl Pending {
    /// The answer the client's response to this round gives.
    pub(crate) fn answer(&self, response: &ElicitResult) -> Answer {
        match self {
            Pending::Permission { tool, input } => {
                let choice = if response.action == ElicitationAction::Accept {
                    response.content.as_ref().and_then(|c| c.get("decision")).and_then(Value::as_str).unwrap_or(DENY)
                } else {
                    DENY
                };
                Answer::Permission { tool: tool.clone(), input: input.clone(), choice: choice.to_string() }
            }
            Pending::AskUser { input } => Answer::AskUser {
                input: digest(input),
                result: ask_user_result(input, response).unwrap_or_else(|| ExternalResult {
                    output: "The user declined to answer.".into(),
                    state: Some(toolhost::response::ResultState::Error),
                    metadata: Default::default(),
                }),
            },
        }
    }

    /// The key of this round's input request.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Pending::Permission { .. } => PERMISSION,
            Pending::AskUser { .. } => ASK_USER,
        }
    }
}

/// The request state of one round: the answers so far, what this round
/// asks, the nonce that makes it single-use, and the digest of the
/// permission policy it was asked under.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RoundState {
    nonce: String,
    policy: String,
    pub(crate) answers: Vec<Answer>,
    pub(crate) pending: Pending,
}

/// Seals round states (HMAC-SHA256 with the keyring's first key, bound to
/// the tool and its arguments) and issues each live round's nonce into the
/// [`NonceStore`], consumed atomically on its answer. Any process with the
/// same keyring, nonce store and policy takes the answer, once.
pub(crate) struct Rounds {
    codec: RequestStateCodec,
    nonces: Arc<dyn NonceStore>,
    /// The digest of the permission policy from the settings.
    policy: String,
}

impl Rounds {
    /// A sealer with `keyring`, its states bound to `policy`.
    pub(crate) fn new(nonces: Arc<dyn NonceStore>, keyring: &Keyring, policy: String) -> anyhow::Result<Self> {
        let keys = keyring.keys().iter().map(|(id, key)| (id.clone(), key.clone()));
        let codec = RequestStateCodec::new_with_keyring(keyring.sealing_id(), keys)
            .map_err(|e| anyhow::anyhow!("the request state keyring: {e}"))?;
        Ok(Self { codec, nonces, policy })
    }

    /// Seals a round that asks `pending`, after `answers`; fails (and the
    /// call runs nothing) when the nonce store cannot take another question.
    pub(crate) async fn seal(
        &self,
        tool: &str,
        args: &Value,
        answers: Vec<Answer>,
        pending: Pending,
    ) -> Result<String, String> {
        let nonce = hex::encode(random_bytes::<16>().map_err(|e| e.to_string())?);
        self.nonces.issue(&nonce, STATE_TTL).await.map_err(|e| format!("the question could not be asked: {e}"))?;
        let state = RoundState { nonce, policy: self.policy.clone(), answers, pending };
        let payload = serde_json::to_vec(&state).map_err(|e| e.to_string())?;
        let ad = associated_data(tool, args);
        Ok(self.codec.seal_with(&payload, &SealOptions::new().associated_data(&ad).ttl(STATE_TTL)))
    }

    /// Opens a round's state for a retry of `tool` with `args` and consumes
    /// its nonce: a state that was tampered with, belongs to another call,
    /// was asked under another policy, expired or was already used is
    /// refused, and so is one whose nonce the store cannot consume now.
    pub(crate) async fn open(&self, sealed: &str, tool: &str, args: &Value) -> Result<RoundState, String> {
        let ad = associated_data(tool, args);
        let payload = self.codec.open_with(sealed, &ad).map_err(|e| format!("the request state is not valid: {e}"))?;
        let state: RoundState =
            serde_json::from_slice(&payload).map_err(|e| format!("the request state is not valid: {e}"))?;
        if state.policy != self.policy {
            return Err(
                "the server's permission policy changed since this question was asked; call the tool again".to_string()
            );
        }
        match self.nonces.consume(&state.nonce).await {
            Ok(true) => Ok(state),
            Ok(false) => Err("this request state was already answered or has expired; call the tool again".into()),
            Err(e) => Err(format!("{e}; the answer was not used: call the tool again")),
        }
    }
}

fn associated_data(tool: &str, args: &Value) -> Vec<u8> {
    format!("toolhost-mcp/v1\0{tool}\0{}", digest(args)).into_bytes()
}

fn random_bytes<const N: usize>() -> anyhow::Result<[u8; N]> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    fn rounds(nonces: &Arc<toolhost::coordination::MemoryNonces>, ring: &Keyring, policy: &str) -> Rounds {
        Rounds::new(nonces.clone(), ring, policy.to_string()).unwrap()
    }

    #[tokio::test]
    async fn a_round_state_opens_once_and_only_for_its_call() {
        let nonces = Arc::new(toolhost::coordination::MemoryNonces::default());
        let rounds = rounds(&nonces, &Keyring::generate("k").unwrap(), "p");
        let args = json!({"command": "ls"});
        let pending = Pending::Permission { tool: "Bash".into(), input: digest(&args) };
        let sealed = rounds.seal("Bash", &args, vec![], pending.clone()).await.unwrap();
        assert!(rounds.open(&sealed, "Bash", &json!({"command": "rm -rf /"})).await.is_err(), "other arguments");
        assert!(rounds.open(&sealed, "Write", &args).await.is_err(), "another tool");
        let mut tampered = sealed.clone();
        tampered.insert(tampered.len() / 2, 'A');
        assert!(rounds.open(&tampered, "Bash", &args).await.is_err(), "tampered");
        assert!(rounds.open(&sealed, "Bash", &args).await.is_ok(), "the first answer");
        let again = rounds.open(&sealed, "Bash", &args).await.unwrap_err();
        assert!(again.contains("already answered"), "{again}");
    }

    /// Two processes with one keyring and one nonce store: a state sealed by
    /// one opens once on the other; another keyring or another policy
    /// refuses it, and a rotated keyring still opens it.
    #[tokio::test]
    async fn a_state_sealed_by_one_process_opens_on_another_with_the_same_keys_and_policy() {
        let nonces = Arc::new(toolhost::coordination::MemoryNonces::default());
        let old = Keyring::parse(&Keyring::new_line("old").unwrap()).unwrap();
        let (a, b) = (rounds(&nonces, &old, "p"), rounds(&nonces, &old, "p"));
        let args = json!({"command": "ls"});
        let pending = Pending::Permission { tool: "Bash".into(), input: digest(&args) };
        let sealed = a.seal("Bash", &args, vec![], pending.clone()).await.unwrap();

        let stranger = rounds(&nonces, &Keyring::generate("old").unwrap(), "p");
        assert!(stranger.open(&sealed, "Bash", &args).await.unwrap_err().contains("not valid"));
        let changed = rounds(&nonces, &old, "q").open(&sealed, "Bash", &args).await.unwrap_err();
        assert!(changed.contains("policy changed"), "{changed}");
        let new_line = Keyring::new_line("new").unwrap();
        let old_line = format!("old {}", base64::engine::general_purpose::STANDARD.encode(&old.keys()[0].1));
        let rotated = Keyring::parse(&format!("{new_line}\n{old_line}")).unwrap();
        assert!(
            rounds(&nonces, &rotated, "p").open(&sealed, "Bash", &args).await.is_ok(),
            "opened by the rotated ring"
        );
        assert!(b.open(&sealed, "Bash", &args).await.unwrap_err().contains("already answered"), "once in all");
    }
}
