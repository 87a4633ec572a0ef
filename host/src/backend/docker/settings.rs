//! `[backend.docker]`: the Docker backend's options, with hardened defaults.

use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::Deserialize;

/// The options of `[backend] kind = "docker"`, from the `[backend.docker]`
/// table. Every default is the hardened one: no network, 2 GiB of memory
/// without swap, 512 processes, a 256 MiB `/tmp`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DockerSettings {
    /// The image the container runs (must exist on the engine; it is never
    /// pulled). Its root filesystem is mounted read-only.
    pub image: String,
    /// `none` (only loopback, the default) or the name of an existing
    /// network the container joins.
    #[serde(default = "default_network")]
    pub network: String,
    /// Memory limit in bytes (swap included): an out-of-memory kill ends the
    /// container's commands, not the host.
    #[serde(default = "default_memory")]
    pub max_memory_bytes: u64,
    /// CPU limit in cores (e.g. 1.5); unlimited when absent.
    #[serde(default)]
    pub cpus: Option<f64>,
    /// The most processes the container may have at once (a fork bomb stops here).
    #[serde(default = "default_pids")]
    pub max_processes: u32,
    /// `uid:gid` commands run as. Default: the owner of the first working
    /// directory, so files written through the bind keep the user's owner.
    #[serde(default)]
    pub user: Option<String>,
    /// Host directories bound read-only at the same path (besides the
    /// working directories, which are bound read-write). A directory with
    /// another filesystem mounted below it is refused: before API 1.44 a
    /// read-only bind is not recursive.
    #[serde(default)]
    pub mounts_ro: Vec<PathBuf>,
    /// Host directories bound read-write at the same path.
    #[serde(default)]
    pub mounts_rw: Vec<PathBuf>,
    /// Environment for every command: `NAME=value`, or `NAME` alone to pass
    /// toolhost's own value of `NAME` (skipped when unset).
    #[serde(default)]
    pub env: Vec<String>,
    /// Size of the container's private `/tmp` (a tmpfs) in bytes.
    #[serde(default = "default_tmp")]
    pub tmp_bytes: u64,
}

fn default_network() -> String {
    "none".into()
}
fn default_memory() -> u64 {
    2 << 30
}
fn default_pids() -> u32 {
    512
}
fn default_tmp() -> u64 {
    256 << 20
}

impl DockerSettings {
    /// Reads the `[backend.docker]` table; the error names the key at fault.
    pub fn from_table(table: &toml::Table) -> Result<Self> {
        if !table.contains_key("image") {
            bail!(
                "[backend.docker] image is missing: name an image the engine has (`docker images`), e.g. \
                 image = \"debian:bookworm\"; toolhost never pulls one"
            );
        }
        let settings: Self = table.clone().try_into().map_err(|e| anyhow::anyhow!("[backend.docker]: {e}"))?;
        for path in settings.mounts_ro.iter().chain(&settings.mounts_rw) {
            if !path.is_absolute() {
                bail!(
                    "[backend.docker] mount {} is not an absolute path; it is bound at the same path",
                    path.display()
                );
            }
        }
        if settings.cpus.is_some_and(|c| c.is_nan() || c <= 0.0) {
            bail!("[backend.docker] cpus must be a positive number of cores (e.g. 1.5)");
        }
        if settings.max_processes == 0 || settings.max_memory_bytes < (16 << 20) {
            bail!("[backend.docker] max_processes must be at least 1 and max_memory_bytes at least 16 MiB");
        }
        Ok(settings)
    }

    /// The environment added to every command, `NAME` entries resolved.
    pub fn command_env(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter_map(|e| match e.split_once('=') {
                Some((k, v)) => Some((k.to_string(), v.to_string())),
                None => std::env::var(e).ok().map(|v| (e.clone(), v)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DockerSettings> {
        DockerSettings::from_table(&toml::from_str(text).unwrap())
    }

    #[test]
    fn defaults_are_the_hardened_ones_and_bad_keys_are_named() {
        let s = parse("image = \"busybox\"\n").unwrap();
        assert_eq!((s.network.as_str(), s.max_processes, s.max_memory_bytes), ("none", 512, 2 << 30));
        assert!(parse("").unwrap_err().to_string().contains("image is missing"));
        assert!(format!("{:#}", parse("image = \"b\"\nnetwrk = \"x\"\n").unwrap_err()).contains("netwrk"));
        assert!(parse("image = \"b\"\nmounts_ro = [\"rel\"]\n").unwrap_err().to_string().contains("absolute"));
        assert!(parse("image = \"b\"\ncpus = 0.0\n").is_err());
    }

    #[test]
    fn env_passes_values_and_names() {
        let s = parse("image = \"b\"\nenv = [\"A=1\", \"TOOLHOST_SURELY_UNSET_VAR\"]\n").unwrap();
        assert_eq!(s.command_env(), vec![("A".to_string(), "1".to_string())]);
    }
}
