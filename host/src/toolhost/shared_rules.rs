//! Remembered rules shared by the processes of a deployment: "allow and
//! remember" writes to a [`RuleStore`] instead of the settings file, and a
//! decision that a rule remembered or forgotten elsewhere could change
//! reads the store's version, so such a rule holds (or stops holding) on
//! every process for its next decision; the other decisions cost no store
//! command.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::RememberError;
use super::permissions::Permissions;
use crate::coordination::{RememberedRule, RuleStore};
use crate::permission::{Behavior, Decision, Rule, RuleSet, Source};
use crate::sync::MutexExt;

/// The store and what this process read from it last.
#[derive(Debug)]
pub(crate) struct SharedRules {
    store: Arc<dyn RuleStore>,
    /// This process in the records it writes.
    replica: String,
    /// The version read last, its rules, and the rules in force merged
    /// with them.
    seen: Mutex<Option<Seen>>,
}

/// One version of the remembered rules as this process read it.
#[derive(Debug)]
struct Seen {
    version: u64,
    rules: Vec<Rule>,
    /// Their texts, as a decision names the rule that made it.
    texts: HashSet<String>,
    /// Whether every one of them allows (all that "allow and remember"
    /// writes): only then can a decision they did not make stand without
    /// reading the version again.
    only_allow: bool,
    /// The rules in force it was merged with, and the merge.
    merged: Option<(Arc<RuleSet>, Arc<RuleSet>)>,
}

/// The rules a decision was made with.
pub(crate) struct DecisionRules {
    pub(crate) rules: Arc<RuleSet>,
    /// Whether they include the shared store's as of now (not as last seen).
    current: bool,
}

impl Permissions {
    /// The rules for a decision, without a store command: those in force
    /// here plus the remembered ones as this process last read them. The
    /// decision made with them stands only if [`Permissions::confirm_rules`]
    /// says so.
    pub(crate) fn rules_as_last_seen(&self) -> DecisionRules {
        let base = self.rules();
        let Some(shared) = self.shared_rules.as_ref() else {
            return DecisionRules { rules: base, current: true };
        };
        let rules = match shared.seen.lock_unpoisoned().as_mut() {
            Some(seen) => seen.merged_with(&base),
            None => base,
        };
        DecisionRules { rules, current: false }
    }

    /// Whether `decision`, made with `used`, could be different under the
    /// remembered rules as of now; then the rules as of now (`None`: it
    /// stands). Remembered rules only allow, so more of them can only turn
    /// an ask (or the deny `dont_ask` makes of one) into an allow, and fewer
    /// can only undo an allow one of them made: an allow by anything else
    /// stands without a store command, and every other decision is made
    /// again when the version moved. A store that does not answer leaves
    /// the decision as it is, with the rules in force here: asking too
    /// often, never allowing too much.
    pub(crate) async fn confirm_rules(&self, used: &DecisionRules, decision: &Decision) -> Option<Arc<RuleSet>> {
        if used.current {
            return None;
        }
        let shared = self.shared_rules.as_ref()?;
        if decision.behavior == Behavior::Allow && !shared.made(decision) {
            return None;
        }
        let base = self.rules();
        let current = match shared.current(&base).await {
            Ok(current) => current,
            Err(e) => {
                tracing::warn!("deciding without the remembered rules: {e}");
                base
            }
        };
        (!Arc::ptr_eq(&current, &used.rules)).then_some(current)
    }

    /// Remembers `rule`: in the shared store when there is one, else as
    /// [`Permissions::remember_rule`] does.
    pub(crate) async fn remember(&self, rule: Rule) -> Result<(), RememberError> {
        let Some(shared) = self.shared_rules.as_ref() else { return self.remember_rule(rule) };
        let record = RememberedRule {
            rule: rule.to_string(),
            behavior: rule.behavior,
            by: shared.replica.clone(),
            at: crate::audit::record::rfc3339(std::time::SystemTime::now()),
        };
        shared.store.remember_rule(record).await.map_err(|e| RememberError::Shared {
            rule: rule.to_string(),
            behavior: rule.behavior.to_string(),
            cause: e.to_string(),
        })?;
        *shared.seen.lock_unpoisoned() = None;
        Ok(())
    }
}

impl SharedRules {
    /// Remembered rules kept in `store`, this process named `replica` in
    /// the records it writes.
    pub(crate) fn new(store: Arc<dyn RuleStore>, replica: String) -> Self {
        Self { store, replica, seen: Mutex::new(None) }
    }

    /// Whether a remembered rule may have made `decision` (or a rule that
    /// does not allow was ever remembered, when any decision may be its).
    fn made(&self, decision: &Decision) -> bool {
        let seen = self.seen.lock_unpoisoned();
        let Some(seen) = seen.as_ref() else { return true };
        !seen.only_allow
            || (decision.source == Source::AllowRule
                && decision.rule.as_ref().is_some_and(|made| seen.texts.contains(made)))
    }

    /// `base` with the remembered rules as of the store's version now: read
    /// again only when the version moved.
    async fn current(&self, base: &Arc<RuleSet>) -> Result<Arc<RuleSet>, crate::state::StateError> {
        let version = self.store.rules_version().await?;
        {
            let mut seen = self.seen.lock_unpoisoned();
            if let Some(seen) = seen.as_mut().filter(|seen| seen.version == version) {
                return Ok(seen.merged_with(base));
            }
        }
        let (version, records) = self.store.remembered_rules().await?;
        let rules: Vec<Rule> = records
            .iter()
            .filter_map(|r| match Rule::parse(&r.rule, r.behavior) {
                Ok(rule) => Some(rule),
                Err(e) => {
                    tracing::warn!("a remembered rule in the shared store does not parse and is skipped: {e}");
                    None
                }
            })
            .collect();
        let only_allow = rules.iter().all(|r| r.behavior == Behavior::Allow);
        let texts = rules.iter().map(Rule::to_string).collect();
        let mut seen = Seen { version, rules, texts, only_allow, merged: None };
        let merged = seen.merged_with(base);
        *self.seen.lock_unpoisoned() = Some(seen);
        Ok(merged)
    }
}

impl Seen {
    /// `base` with these remembered rules (the merge kept for the next
    /// decision with the same `base`).
    fn merged_with(&mut self, base: &Arc<RuleSet>) -> Arc<RuleSet> {
        if self.rules.is_empty() {
            return base.clone();
        }
        if let Some((with, merged)) = &self.merged
            && Arc::ptr_eq(with, base)
        {
            return merged.clone();
        }
        let mut rules = RuleSet::clone(base);
        for rule in &self.rules {
            rules.add(rule.clone());
        }
        let merged = Arc::new(rules);
        self.merged = Some((base.clone(), merged.clone()));
        merged
    }
}
