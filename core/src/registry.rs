//! The `[registry]` and `[trust]` tables of `toolhost.toml`, and the
//! `oci://` plugin references of `plugins = [...]`: plain data, read by the
//! library's `oci` module (pulling, the content store, signatures).
//!
//! ```toml
//! plugins = ["oci://registry.example/team/word-count:1.2", "oci://registry.example/team/grep@sha256:…"]
//!
//! [registry]
//! poll_ms = 60000                  # serve --watch re-resolves tags this often
//! insecure = ["registry.lan:5000"] # plain HTTP besides loopback (said on stderr)
//!
//! [trust]
//! keys = ["keys/team.pub"]         # cosign public keys (PEM)
//! require_signature = true
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The scheme that marks a plugin entry as a registry reference.
pub const OCI_SCHEME: &str = "oci://";

/// The registry reference in a `plugins` entry (`oci://host/ns/tool:tag`
/// gives `host/ns/tool:tag`), or `None` for a file.
pub fn oci_reference(entry: &Path) -> Option<&str> {
    entry.to_str()?.strip_prefix(OCI_SCHEME)
}

/// The `[registry]` table: how toolhost talks to OCI registries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegistrySettings {
    /// How often `serve --watch` asks the registries where each tag of
    /// `plugins` points now, in milliseconds.
    pub poll_ms: u64,
    /// Registries (`host` or `host:port`) spoken to over plain HTTP besides
    /// loopback ones (as `--insecure-registry`).
    pub insecure: Vec<String>,
    /// The most one registry answer may take, body included, in
    /// milliseconds.
    pub timeout_ms: u64,
    /// The largest manifest read from a registry, in bytes (a plugin's
    /// layer is bounded by `[limits] max_component_bytes`).
    pub max_manifest_bytes: u64,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        Self { poll_ms: 60_000, insecure: Vec::new(), timeout_ms: 60_000, max_manifest_bytes: 256 * 1024 }
    }
}

/// The `[trust]` table: whose signatures a plugin may carry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrustSettings {
    /// Public keys (PEM, as `cosign generate-key-pair` writes `cosign.pub`)
    /// whose signatures are trusted; relative paths are relative to the
    /// settings file.
    pub keys: Vec<PathBuf>,
    /// Refuse every plugin pulled from a registry, and every plugin file,
    /// that no key of `keys` signed.
    pub require_signature: bool,
}

impl TrustSettings {
    /// Makes relative key paths absolute against `base`.
    pub fn resolve_relative(&mut self, base: &Path) {
        for key in &mut self.keys {
            if key.is_relative() {
                *key = base.join(&*key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_an_entry_with_the_oci_scheme() {
        assert_eq!(oci_reference(Path::new("oci://127.0.0.1:5000/ns/t:1")), Some("127.0.0.1:5000/ns/t:1"));
        assert_eq!(oci_reference(Path::new("plugins/t.wasm")), None);
        assert_eq!(oci_reference(Path::new("/abs/oci://x")), None);
    }

    #[test]
    fn a_settings_file_keeps_references_as_written_and_resolves_key_paths() {
        let text = "plugins = [\"oci://127.0.0.1:5000/ns/t:1\", \"t.wasm\"]\n\
                    [registry]\npoll_ms = 500\ninsecure = [\"registry.lan:5000\"]\n\
                    [trust]\nkeys = [\"keys/team.pub\"]\nrequire_signature = true\n";
        let s = crate::settings::Settings::parse(text, Path::new("/etc/th")).unwrap();
        assert_eq!(s.plugins, [PathBuf::from("oci://127.0.0.1:5000/ns/t:1"), PathBuf::from("/etc/th/t.wasm")]);
        assert_eq!(s.plugin_files().unwrap(), [PathBuf::from("/etc/th/t.wasm")], "references are not files");
        assert_eq!(s.registry.poll_ms, 500);
        assert_eq!(s.registry.insecure, ["registry.lan:5000"]);
        assert_eq!(s.trust.keys, [PathBuf::from("/etc/th/keys/team.pub")]);
        assert!(s.trust.require_signature);
    }
}
