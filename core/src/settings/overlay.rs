//! Settings given on top of a settings file: what a front end's flags (or
//! an embedder's arguments) say, laid over what `toolhost.toml` says.
//! Scalars given here win over the file's; rules, plugins, roots and
//! grants add to it. Every front end builds one [`Overlay`] and calls
//! [`Overlay::apply`], so `--allow` in the CLI and `allow` given by an
//! embedder mean the same thing.

use std::path::{Path, PathBuf};

use super::{BackendSettings, Settings};
use crate::permission::Mode;

/// Settings laid over a settings file ([`Overlay::apply`]). Every field is
/// empty by default: an empty overlay changes nothing. Relative paths are
/// resolved against the directory [`Overlay::apply`] is given (a front
/// end's current directory), never against the settings file's.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    /// More working directories (`--workdir`); given ones make the first
    /// the tools' working directory.
    pub working_dirs: Vec<PathBuf>,
    /// More read-only roots for the built-in tools (`--read-root`).
    pub read_roots: Vec<PathBuf>,
    /// The permission mode (`--mode`).
    pub mode: Option<Mode>,
    /// More allow rules (`--allow`).
    pub allow: Vec<String>,
    /// More deny rules (`--deny`).
    pub deny: Vec<String>,
    /// More ask rules (`--ask`).
    pub ask: Vec<String>,
    /// More plugin component files (`--plugin`).
    pub plugins: Vec<PathBuf>,
    /// More plugin directories (`--plugins`).
    pub plugin_dirs: Vec<PathBuf>,
    /// More grants, each `NAME=CAPABILITY` (`--grant`, e.g. `WordCount=fs-read`).
    pub grants: Vec<String>,
    /// More middleware component files (`--middleware`).
    pub middleware: Vec<PathBuf>,
    /// More attachments, each `TOOL=NAME[,NAME]` (`--attach`).
    pub attach: Vec<String>,
    /// `[limits] timeout_ms`.
    pub timeout_ms: Option<u64>,
    /// `[limits] max_memory_bytes`.
    pub max_memory_bytes: Option<u64>,
    /// `[limits] max_output_bytes`.
    pub max_output_bytes: Option<u64>,
    /// `[limits] max_state_value_bytes`.
    pub max_state_value_bytes: Option<u64>,
    /// `[limits] max_state_bytes`.
    pub max_state_bytes: Option<u64>,
    /// `[limits] max_state_keys`.
    pub max_state_keys: Option<u64>,
    /// `[limits] max_log_bytes`.
    pub max_log_bytes: Option<u64>,
    /// `[limits] max_component_bytes`.
    pub max_component_bytes: Option<u64>,
    /// Leave the built-in tools out (`--no-builtins`); `false` keeps the
    /// file's choice.
    pub no_builtins: bool,
    /// Refuse components not pinned in the lock file (`--locked`); `false`
    /// keeps the file's choice.
    pub locked: bool,
    /// The compile cache directory (`--cache-dir`).
    pub cache_dir: Option<PathBuf>,
    /// The most the compile cache may hold (`--cache-max-bytes`).
    pub cache_max_bytes: Option<u64>,
    /// More registries spoken to over plain HTTP (`--insecure-registry`).
    pub insecure_registries: Vec<String>,
    /// The lock file (`--lock-file`).
    pub lock_file: Option<PathBuf>,
    /// The audit log (`--audit`).
    pub audit: Option<PathBuf>,
    /// The backend kind (`--backend`). A kind other than the file's drops
    /// the file's options, which belong to the kind it names.
    pub backend: Option<String>,
    /// Options of a backend kind's own table, each `(KIND, KEY, VALUE)`
    /// for `[backend.KIND] KEY = VALUE` (`--sandbox` is `local`,
    /// `sandbox`); set after [`Self::backend`], the table's other keys kept.
    pub backend_options: Vec<(String, String, toml::Value)>,
    /// Where agent state lives, `local` or `redis` (`--state-store`).
    pub state_store: Option<String>,
    /// `[state.redis] url` (`--redis-url`).
    pub redis_url: Option<String>,
    /// `[state.redis] key_prefix` (`--redis-key-prefix`).
    pub redis_key_prefix: Option<String>,
    /// `[state] keyring_file` (`--state-keyring`).
    pub state_keyring: Option<PathBuf>,
}

/// Why an [`Overlay`] cannot be applied: the value at fault and the form
/// it should have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverlayError {
    /// A grant that is not `NAME=CAPABILITY` with a known capability.
    #[error("grant '{grant}': {why}")]
    Grant {
        /// The grant as given.
        grant: String,
        /// What is wrong and the form it should have.
        why: String,
    },
    /// An attachment that is not `TOOL=NAME[,NAME]`.
    #[error("{0}")]
    Attach(String),
    /// A state store other than `local` or `redis`.
    #[error("{0}")]
    StateStore(String),
}

impl Overlay {
    /// Lays this overlay over `settings`, relative paths resolved against
    /// `cwd`. Nothing is changed when an entry is at fault.
    pub fn apply(&self, settings: &mut Settings, cwd: &Path) -> Result<(), OverlayError> {
        let mut s = settings.clone();
        let abs = |p: &PathBuf| if p.is_absolute() { p.clone() } else { cwd.join(p) };
        s.permissions.working_dirs.extend(self.working_dirs.iter().map(|d| abs(d).display().to_string()));
        s.read_roots.extend(self.read_roots.iter().map(abs));
        if let Some(mode) = self.mode {
            s.permissions.mode = mode;
        }
        s.permissions.allow.extend(self.allow.iter().cloned());
        s.permissions.deny.extend(self.deny.iter().cloned());
        s.permissions.ask.extend(self.ask.iter().cloned());
        s.plugins.extend(self.plugins.iter().cloned());
        s.plugin_dirs.extend(self.plugin_dirs.iter().cloned());
        for grant in &self.grants {
            let (name, cap) = grant.split_once('=').ok_or_else(|| OverlayError::Grant {
                grant: grant.clone(),
                why: "it must look like NAME=CAPABILITY, e.g. WordCount=fs-read".into(),
            })?;
            s.grants
                .entry(name.to_string())
                .or_default()
                .add_grant(cap)
                .map_err(|why| OverlayError::Grant { grant: grant.clone(), why })?;
        }
        s.middleware.files.extend(self.middleware.iter().map(abs));
        for spec in &self.attach {
            s.middleware.add_attach(spec).map_err(OverlayError::Attach)?;
        }
        let limits = [
            (self.timeout_ms, &mut s.limits.timeout_ms),
            (self.max_memory_bytes, &mut s.limits.max_memory_bytes),
            (self.max_output_bytes, &mut s.limits.max_output_bytes),
            (self.max_state_value_bytes, &mut s.limits.max_state_value_bytes),
            (self.max_state_bytes, &mut s.limits.max_state_bytes),
            (self.max_state_keys, &mut s.limits.max_state_keys),
            (self.max_log_bytes, &mut s.limits.max_log_bytes),
            (self.max_component_bytes, &mut s.limits.max_component_bytes),
        ];
        for (given, limit) in limits {
            if let Some(value) = given {
                *limit = value;
            }
        }
        if self.no_builtins {
            s.builtins = false;
        }
        if self.locked {
            s.locked = true;
        }
        if let Some(dir) = &self.cache_dir {
            s.cache_dir = Some(dir.clone());
        }
        if let Some(bytes) = self.cache_max_bytes {
            s.cache_max_bytes = Some(bytes);
        }
        s.registry.insecure.extend(self.insecure_registries.iter().cloned());
        if let Some(file) = &self.lock_file {
            s.lock_file = Some(abs(file));
        }
        if let Some(file) = &self.audit {
            s.audit.path = Some(abs(file));
        }
        if let Some(kind) = &self.backend
            && *kind != s.backend.kind
        {
            s.backend = BackendSettings { kind: kind.clone(), options: Default::default() };
        }
        for (kind, key, value) in &self.backend_options {
            s.backend.set_option(kind, key, value.clone());
        }
        if let Some(kind) = &self.state_store {
            s.state.store = kind.parse().map_err(OverlayError::StateStore)?;
        }
        if let Some(url) = &self.redis_url {
            s.state.redis.url = Some(url.clone());
        }
        if let Some(prefix) = &self.redis_key_prefix {
            s.state.redis.key_prefix = Some(prefix.clone());
        }
        if let Some(file) = &self.state_keyring {
            s.state.keyring_file = Some(abs(file));
        }
        *settings = s;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Settings {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn an_empty_overlay_changes_nothing() {
        let text = "[permissions]\nallow = [\"Read\"]\nmode = \"explore\"\n[limits]\ntimeout_ms = 5\n";
        let mut s = file(text);
        Overlay::default().apply(&mut s, Path::new("/cwd")).unwrap();
        assert_eq!(format!("{s:?}"), format!("{:?}", file(text)));
    }

    #[test]
    fn scalars_win_lists_add_up_and_paths_resolve_against_the_directory_given() {
        let mut s = file("[permissions]\nallow = [\"Read\"]\nmode = \"explore\"\n[limits]\ntimeout_ms = 5\n");
        let overlay = Overlay {
            mode: Some(Mode::Default),
            allow: vec!["Glob".into()],
            timeout_ms: Some(7),
            working_dirs: vec!["sub".into(), "/abs".into()],
            audit: Some("audit.jsonl".into()),
            ..Default::default()
        };
        overlay.apply(&mut s, Path::new("/cwd")).unwrap();
        assert_eq!(s.permissions.mode, Mode::Default);
        assert_eq!(s.permissions.allow, ["Read", "Glob"]);
        assert_eq!(s.limits.timeout_ms, 7);
        assert_eq!(s.permissions.working_dirs, ["/cwd/sub", "/abs"]);
        assert_eq!(s.audit.path.as_deref(), Some(Path::new("/cwd/audit.jsonl")));
    }

    #[test]
    fn another_backend_kind_drops_the_files_options_and_options_keep_the_tables_other_keys() {
        let text = "[backend]\nkind = \"local\"\n[backend.local]\nsandbox = \"on\"\nnetwork = false\n";
        let mut s = file(text);
        let sandbox = ("local".to_string(), "sandbox".to_string(), toml::Value::from("off"));
        Overlay { backend_options: vec![sandbox], ..Default::default() }.apply(&mut s, Path::new("/")).unwrap();
        let local = s.backend.options["local"].as_table().unwrap();
        assert_eq!(local["sandbox"].as_str(), Some("off"));
        assert_eq!(local["network"].as_bool(), Some(false));

        let mut s = file(text);
        Overlay { backend: Some("docker".into()), ..Default::default() }.apply(&mut s, Path::new("/")).unwrap();
        assert_eq!(s.backend.kind, "docker");
        assert!(s.backend.options.is_empty(), "{:?}", s.backend.options);
    }

    #[test]
    fn an_entry_at_fault_names_itself_and_changes_nothing() {
        let mut s = file("[permissions]\nallow = [\"Read\"]\n");
        let overlay = Overlay { allow: vec!["Glob".into()], grants: vec!["WordCount".into()], ..Default::default() };
        let err = overlay.apply(&mut s, Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("'WordCount'") && err.to_string().contains("NAME=CAPABILITY"), "{err}");
        assert_eq!(s.permissions.allow, ["Read"]);
        let overlay = Overlay { grants: vec!["WordCount=fly".into()], ..Default::default() };
        assert!(matches!(overlay.apply(&mut s, Path::new("/")), Err(OverlayError::Grant { .. })));
        let overlay = Overlay { attach: vec!["Bash".into()], ..Default::default() };
        assert!(matches!(overlay.apply(&mut s, Path::new("/")), Err(OverlayError::Attach(_))));
        let overlay = Overlay { state_store: Some("etcd".into()), ..Default::default() };
        assert!(matches!(overlay.apply(&mut s, Path::new("/")), Err(OverlayError::StateStore(_))));
    }
}
