//! The permissions service ([`Permissions`]): what a call may do. The rules in force
//! (configured, remembered here, remembered by the other processes of a
//! deployment: `shared_rules.rs`), the permission engine over them, and
//! the grants each tool and middleware gets. It loads nothing and runs no
//! call: the pipeline hands it a decision instance and gets a decision.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use super::RememberError;
use super::shared_rules::SharedRules;
use crate::backend::Backend;
use crate::capability::{Declared, Grants, Phase, PhaseGrants, Policy as GrantPolicy};
use crate::catalog::tool::{Origin, ToolInfo};
use crate::execution::callable::CallableTool;
use crate::execution::loaded::LoadedTool;
use crate::permission::{self, Decision, Mode, PolicyTool as _, Rule, RuleSet};
use crate::protected::ProtectedPaths;
use crate::settings::Settings;
use crate::sync::{MutexExt, RwLockExt};
use crate::telemetry::trace;

/// The permission side of a host: decides calls, remembers rules, and says
/// which grants a tool or middleware gets. A [`crate::Toolhost`] holds one
/// ([`crate::Toolhost::permissions`]).
///
/// Nothing a guest says widens what it gets here: a plugin's grants are the
/// intersection of what it declares with what `[grants.NAME]` allows, a
/// middleware gets only what `[grants.NAME]` gives it, and a call allowed
/// because the tool said it only reads runs with read-only grants.
pub struct Permissions {
    pub(super) settings: Arc<Settings>,
    /// Replaced (not mutated) when a rule is remembered, so a decision takes
    /// a cheap snapshot.
    rules: RwLock<Arc<RuleSet>>,
    /// Remembered rules shared with the other processes of a deployment
    /// ([`crate::ToolhostBuilder::rule_store`]).
    pub(super) shared_rules: Option<SharedRules>,
    /// Where "allow and remember" saves rules without a shared store.
    settings_path: Option<PathBuf>,
    /// The working directories, and as the permission context shows them
    /// (given and symlink-resolved), computed once: they do not change.
    working_dirs: Vec<PathBuf>,
    context_dirs: Vec<String>,
    /// The active backend: what relative paths and `~` mean where a call
    /// runs.
    backend: Arc<dyn Backend>,
    /// toolhost's own files, denied to every call that names them.
    protected: Arc<ProtectedPaths>,
    /// Each configured tool's settings as JSON, converted once.
    tool_configs: BTreeMap<String, serde_json::Value>,
    /// Each middleware's grants in every phase, computed on its first call
    /// (resolving the roots touches the filesystem).
    middleware_grants: Mutex<BTreeMap<String, Arc<PhaseGrants>>>,
}

/// What a [`Permissions`] is made of, as [`crate::ToolhostBuilder::build`]
/// resolved it from the settings.
pub(super) struct PermissionsParts {
    pub(super) settings: Arc<Settings>,
    pub(super) rules: RuleSet,
    pub(super) shared_rules: Option<SharedRules>,
    pub(super) settings_path: Option<PathBuf>,
    pub(super) working_dirs: Vec<PathBuf>,
    pub(super) backend: Arc<dyn Backend>,
    pub(super) protected: Arc<ProtectedPaths>,
}

impl Permissions {
    pub(super) fn new(parts: PermissionsParts) -> Self {
        let settings = parts.settings;
        let tool_configs = settings.tools.keys().map(|name| (name.clone(), settings.tool_config(name))).collect();
        Permissions {
            rules: RwLock::new(Arc::new(parts.rules)),
            shared_rules: parts.shared_rules,
            settings_path: parts.settings_path,
            context_dirs: context_dirs(&parts.working_dirs),
            working_dirs: parts.working_dirs,
            backend: parts.backend,
            protected: parts.protected,
            tool_configs,
            middleware_grants: Mutex::default(),
            settings,
        }
    }

    /// The configured mode.
    pub fn mode(&self) -> Mode {
        self.settings.permissions.mode
    }

    /// The rules in force (configured plus remembered here).
    pub fn rules(&self) -> Arc<RuleSet> {
        self.rules.read_unpoisoned().clone()
    }

    /// Adds a rule for the rest of this host's life and, with a settings
    /// path, saves it there (creating the file when missing). When saving
    /// fails the rule still holds in this host, and the error names the
    /// rule, the file, the cause and how to add the rule by hand.
    pub fn remember_rule(&self, rule: Rule) -> Result<(), RememberError> {
        {
            let mut rules = self.rules.write_unpoisoned();
            let mut updated = RuleSet::clone(&rules);
            updated.add(rule.clone());
            *rules = Arc::new(updated);
        }
        let Some(path) = &self.settings_path else { return Ok(()) };
        permission::settings::remember_rule(path, &rule).map_err(|e| RememberError::Save {
            rule: rule.to_string(),
            behavior: rule.behavior.to_string(),
            path: path.clone(),
            cause: format!("{e:#}"),
        })
    }

    /// The file "allow and remember" saves rules to, if any.
    pub fn settings_path(&self) -> Option<&Path> {
        self.settings_path.as_deref()
    }

    /// toolhost's own files: every call that names one is denied and the
    /// local backend refuses them to every tool.
    pub fn protected_paths(&self) -> &ProtectedPaths {
        &self.protected
    }

    /// A tool's own settings (`[tools.NAME]`) as JSON; `{}` when none.
    pub fn tool_config(&self, tool: &str) -> serde_json::Value {
        self.tool_configs.get(tool).cloned().unwrap_or_else(|| serde_json::json!({}))
    }

    /// The permission context for `tool` in `mode`: the working directories
    /// (given and symlink-resolved), the active backend's cwd and home (what
    /// relative paths and `~` mean where the call would run) and the tool's
    /// settings.
    pub fn permission_context(&self, tool: &str, mode: Mode) -> permission::Context {
        permission::Context {
            mode,
            working_dirs: self.context_dirs.clone(),
            cwd: self.backend.cwd(),
            home: self.backend.home(),
            tool_config: self.tool_config(tool),
            protected: self.protected.clone(),
        }
    }

    /// The permission engine ([`permission::evaluate`]) for `input_text` on
    /// `instance` (a decision instance) with `mode`, the rules in force and
    /// the tool's context; the decision is noted for the audit log and the
    /// call's trace.
    pub(crate) async fn evaluate(&self, instance: &mut CallableTool, mode: Mode, input_text: &str) -> Decision {
        let ctx = self.permission_context(instance.name(), mode);
        let used = self.rules_as_last_seen();
        let mut decision = permission::evaluate(instance, input_text, &ctx, &used.rules).await;
        if let Some(current) = self.confirm_rules(&used, &decision).await {
            decision = permission::evaluate(instance, input_text, &ctx, &current).await;
        }
        crate::audit::note(|a| a.decision(&decision));
        trace::note(|t| {
            t.note(|n| {
                n.decision.get_or_insert_with(|| (decision.behavior, decision.source, decision.rule.clone()));
            })
        });
        decision
    }

    /// The grants a tool gets: built-ins their declared needs over the
    /// working directories and read roots; plugins only what
    /// `[grants.NAME]` allows. A built-in's `[grants.NAME]` table
    /// contributes only its `env`.
    pub fn grants_for(&self, info: &ToolInfo) -> Grants {
        let configured = self.settings.grants.get(&info.name).cloned().unwrap_or_default();
        let policy = match info.origin {
            Origin::Builtin => GrantPolicy { env: configured.env, ..GrantPolicy::builtin() },
            Origin::File(_) | Origin::Native => configured,
            // Runs outside toolhost: nothing of a call's grants reaches it.
            Origin::Mcp(_) => GrantPolicy::default(),
        };
        let read_roots = match info.origin {
            Origin::Builtin => self.settings.read_roots.clone(),
            Origin::File(_) | Origin::Native | Origin::Mcp(_) => Vec::new(),
        };
        let builtin = info.origin == Origin::Builtin;
        Grants::intersect(&info.name, &info.capabilities, &policy, &self.working_dirs, &read_roots, builtin)
    }

    /// The grants `loaded` uses in `phase`, computed once per loaded tool.
    pub(crate) fn phase_grants(&self, loaded: &LoadedTool, phase: Phase) -> Arc<Grants> {
        loaded.grants.get_or_init(|| PhaseGrants::new(self.grants_for(&loaded.info))).get(phase)
    }

    /// The grants of a middleware component: exactly what `[grants.NAME]`
    /// (or `--grant NAME=...`) gives it, nothing by default.
    pub fn middleware_grants(&self, name: &str) -> Grants {
        let policy = self.settings.grants.get(name).cloned().unwrap_or_default();
        let declared = Declared {
            fs_read: policy.fs_read.clone(),
            fs_write: policy.fs_write.clone(),
            process_exec: policy.process_exec,
            network: false,
            state: policy.state,
        };
        Grants::intersect(name, &declared, &policy, &self.working_dirs, &[], false)
    }

    /// [`Permissions::middleware_grants`] shaped for `phase`, computed once per
    /// middleware name.
    pub(crate) fn middleware_phase_grants(&self, name: &str, phase: Phase) -> Arc<Grants> {
        let mut cache = self.middleware_grants.lock_unpoisoned();
        if let Some(grants) = cache.get(name) {
            return grants.get(phase);
        }
        let grants = Arc::new(PhaseGrants::new(self.middleware_grants(name)));
        cache.insert(name.to_string(), grants.clone());
        grants.get(phase)
    }

    /// Of `names`, those some configured rule is for although no tool of
    /// the name is registered (worth a warning).
    pub fn rules_for_unknown_tools(&self, is_registered: impl Fn(&str) -> bool) -> Vec<String> {
        let rules = self.rules.read_unpoisoned();
        rules.tools_named().filter(|t| !is_registered(t)).map(str::to_string).collect()
    }
}

/// The working directories as a permission context lists them: each as
/// given, then its symlink-resolved form when that differs.
fn context_dirs(working_dirs: &[PathBuf]) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for dir in working_dirs {
        let given = dir.display().to_string();
        if !dirs.contains(&given) {
            dirs.push(given);
        }
        if let Ok(real) = dir.canonicalize() {
            let real = real.display().to_string();
            if !dirs.contains(&real) {
                dirs.push(real);
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::local::LocalBackend;
    use crate::capability::Declared;
    use crate::permission::Behavior;

    /// The service alone, over `workdir`, with `settings` (no host around it).
    fn permissions(workdir: &Path, settings: Settings) -> Permissions {
        let rules = settings.permissions.rule_set().expect("rules parse");
        Permissions::new(PermissionsParts {
            settings: Arc::new(settings),
            rules,
            shared_rules: None,
            settings_path: None,
            working_dirs: vec![workdir.to_path_buf()],
            backend: Arc::new(LocalBackend::new(workdir.to_path_buf(), workdir.to_path_buf())),
            protected: Arc::new(ProtectedPaths::default()),
        })
    }

    fn plugin(name: &str, declared: Declared) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            concurrency_safe: false,
            read_only: false,
            external: false,
            state_injected: false,
            mcp_origin: None,
            result_metadata_schema: None,
            capabilities: declared,
            origin: Origin::File(PathBuf::from("/plugins/p.wasm")),
            wit_version: "0.1.0".into(),
            sha256: String::new(),
        }
    }

    #[test]
    fn a_plugin_gets_only_what_its_grants_table_allows_of_what_it_declares() {
        let dir = tempfile::tempdir().unwrap();
        let asks_all = Declared {
            fs_read: vec!["$WORKDIRS".into()],
            fs_write: vec!["$WORKDIRS".into()],
            process_exec: true,
            network: true,
            state: true,
        };
        let silent = permissions(dir.path(), Settings::default());
        let none = silent.grants_for(&plugin("Greedy", asks_all.clone()));
        assert!(none.fs.roots().is_empty() && !none.process_exec && !none.state, "{none:?}");

        let settings: Settings =
            toml::from_str("[grants.Greedy]\nfs_read = [\"$WORKDIRS\"]\nstate = true\n").expect("settings parse");
        let granted = permissions(dir.path(), settings).grants_for(&plugin("Greedy", asks_all));
        assert!(!granted.process_exec && granted.state, "{granted:?}");
        assert!(granted.fs.write_roots().is_empty(), "read was granted, not write: {granted:?}");
        assert!(!granted.fs.roots().is_empty(), "the working directory is readable: {granted:?}");
    }

    #[test]
    fn a_remembered_rule_holds_in_this_service_and_is_named_among_unknown_tools() {
        let dir = tempfile::tempdir().unwrap();
        let service = permissions(dir.path(), Settings::default());
        assert!(service.rules().iter().next().is_none());
        let rule = Rule::parse("Lookup", Behavior::Allow).unwrap();
        service.remember_rule(rule).expect("no settings file to save to: nothing fails");
        assert_eq!(service.rules().rules("Lookup", Behavior::Allow).len(), 1);
        assert_eq!(service.rules_for_unknown_tools(|name| name != "Lookup"), ["Lookup"]);
        assert!(service.rules_for_unknown_tools(|_| true).is_empty());
        // Nothing is shared between two services: each is its own.
        assert!(permissions(dir.path(), Settings::default()).rules().iter().next().is_none());
    }
}
