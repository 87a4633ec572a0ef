//! Remembered rules shared by the processes of a deployment: "allow and
//! remember" writes to a [`RuleStore`] instead of the settings file, and
//! each decision reads the store's version first, so a rule remembered (or
//! forgotten) through one process holds (or stops holding) on every other
//! for its next decision.

use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::Toolhost;
use crate::coordination::{RememberedRule, RuleStore};
use crate::permission::{Rule, RuleSet};
use crate::sync::MutexExt;

/// The store and what this process read from it last.
#[derive(Debug)]
pub(crate) struct SharedRules {
    store: Arc<dyn RuleStore>,
    /// This process in the records it writes.
    replica: String,
    /// The version read last and its rules.
    seen: Mutex<Option<(u64, Arc<Vec<Rule>>)>>,
}

impl Toolhost {
    /// From now on, "allow and remember" keeps its rules in `store` (not in
    /// the settings file), and every decision applies the rules remembered
    /// there by any process; `replica` names this process in the records.
    /// Once per host.
    pub fn share_remembered_rules(&self, store: Arc<dyn RuleStore>, replica: String) -> Result<()> {
        let shared = SharedRules { store, replica, seen: Mutex::new(None) };
        self.inner
            .shared_rules
            .set(shared)
            .map_err(|_| anyhow::anyhow!("this host already shares its remembered rules through a store"))
    }

    /// The rules for the next decision: those in force here, plus those
    /// remembered in the shared store as of now. A store that does not
    /// answer leaves only the rules in force here (asking too often, never
    /// allowing too much).
    pub(crate) async fn rules_for_decision(&self) -> Arc<RuleSet> {
        let base = self.rules();
        let Some(shared) = self.inner.shared_rules.get() else { return base };
        let remembered = match shared.current().await {
            Ok(remembered) => remembered,
            Err(e) => {
                tracing::warn!("deciding without the remembered rules: {e}");
                return base;
            }
        };
        if remembered.is_empty() {
            return base;
        }
        let mut rules = RuleSet::clone(&base);
        for rule in remembered.iter() {
            rules.add(rule.clone());
        }
        Arc::new(rules)
    }

    /// Remembers `rule`: in the shared store when there is one, else as
    /// [`Toolhost::remember_rule`] does.
    pub(crate) async fn remember(&self, rule: Rule) -> Result<()> {
        let Some(shared) = self.inner.shared_rules.get() else { return self.remember_rule(rule) };
        let record = RememberedRule {
            rule: rule.to_string(),
            behavior: rule.behavior,
            by: shared.replica.clone(),
            at: crate::audit::record::rfc3339(std::time::SystemTime::now()),
        };
        shared.store.remember_rule(record).await.map_err(|e| {
            anyhow::anyhow!(
                "could not remember the rule `{rule}` in the shared store: {e}; it was allowed this once. To keep it, \
                 add it under [permissions] in the settings every process reads: {} = [\"{rule}\"]",
                rule.behavior
            )
        })?;
        *shared.seen.lock_unpoisoned() = None;
        Ok(())
    }
}

impl SharedRules {
    /// The remembered rules as of the store's version now: read again only
    /// when the version moved.
    async fn current(&self) -> Result<Arc<Vec<Rule>>, crate::state::StateError> {
        let version = self.store.rules_version().await?;
        if let Some((seen, rules)) = self.seen.lock_unpoisoned().as_ref()
            && *seen == version
        {
            return Ok(rules.clone());
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
        let rules = Arc::new(rules);
        *self.seen.lock_unpoisoned() = Some((version, rules.clone()));
        Ok(rules)
    }
}
