//! The container of one backend: its hardened configuration, its labels,
//! and the removal of containers left behind by a host that crashed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{ListContainersOptions, RemoveContainerOptionsBuilder, WaitContainerOptions};
use futures::StreamExt as _;

use super::helper;
use super::settings::DockerSettings;
use crate::backend::BackendError;

/// The label every toolhost container carries: `<hostname>:<pid>:<start>`
/// of the owning host process (its start time tells a reused pid apart).
pub const OWNER_LABEL: &str = "dev.toolhost.owner";

/// One directory bound into the container at its own path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The path, on the host and in the container.
    pub path: PathBuf,
    /// Bound read-write.
    pub write: bool,
}

/// The directories a backend binds: the working directories read-write,
/// then the extra mounts. Paths the bind syntax cannot carry (`:` or `,`)
/// and read-only directories with a filesystem mounted below them are refused.
pub fn mounts(working_dirs: &[PathBuf], settings: &DockerSettings) -> anyhow::Result<Vec<Mount>> {
    let mut out: Vec<Mount> = Vec::new();
    let all = working_dirs
        .iter()
        .map(|p| (p, true))
        .chain(settings.mounts_rw.iter().map(|p| (p, true)))
        .chain(settings.mounts_ro.iter().map(|p| (p, false)));
    for (path, write) in all {
        let path = std::fs::canonicalize(path).map_err(|e| {
            anyhow::anyhow!(
                "the Docker backend binds {} into its container, but cannot resolve it: {e}",
                path.display()
            )
        })?;
        let text = path.to_string_lossy();
        if text.contains(':') || text.contains(',') {
            anyhow::bail!(
                "the Docker backend cannot bind {text}: the engine's bind syntax does not allow `:` or `,` in a path"
            );
        }
        if !write && let Some(sub) = submount_below(&path) {
            anyhow::bail!(
                "[backend.docker] mounts_ro {text} has another filesystem mounted at {} below it, which a read-only \
                 bind would leave writable on this engine (read-only binds are recursive only from API 1.44); bind \
                 the folders beside it instead",
                sub.display()
            );
        }
        match out.iter_mut().find(|m| m.path == path) {
            Some(m) => m.write |= write,
            None => out.push(Mount { path, write }),
        }
    }
    Ok(out)
}

/// A mount point strictly below `dir`, from `/proc/self/mountinfo`.
fn submount_below(dir: &Path) -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(p.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")))
        .find(|p| p != dir && p.starts_with(dir))
}

/// `uid:gid` of the owner of `dir`.
pub fn owner_of(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(dir).ok().map(|m| format!("{}:{}", m.uid(), m.gid()))
}

/// This process as an owner label value.
pub fn owner() -> String {
    format!("{}:{}:{}", hostname(), std::process::id(), start_time(std::process::id()).unwrap_or_default())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// The start time of `pid` (clock ticks after boot, field 22 of its stat).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(19)?.parse().ok()
}

/// Whether the host process an owner label names is gone (only ever true
/// for a host on this machine).
fn owner_is_gone(label: &str) -> bool {
    let mut parts = label.rsplitn(3, ':');
    let (Some(start), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else { return false };
    host == hostname() && start_time(pid).map(|s| s.to_string()) != Some(start.to_string())
}

/// The create request of a hardened container: network `none` (or the
/// named one), read-only root with a private `/tmp`, every capability
/// dropped, no new privileges, memory (no swap), CPU and process limits,
/// removed by the engine when it stops; the helper as its PID 1 (no engine
/// `init`: the helper reaps) on an open stdin (closed when the host goes:
/// the helper then exits and the engine removes the container).
pub fn create_body(
    settings: &DockerSettings,
    mounts: &[Mount],
    helper: &Path,
    cwd: &Path,
    user: &str,
) -> ContainerCreateBody {
    let mut binds: Vec<String> = mounts
        .iter()
        .map(|m| {
            let p = m.path.display();
            format!("{p}:{p}:{}", if m.write { "rw" } else { "ro" })
        })
        .collect();
    binds.push(format!("{}:{}:ro", helper.display(), helper::PATH_IN_CONTAINER));
    let memory = i64::try_from(settings.max_memory_bytes).unwrap_or(i64::MAX);
    let host_config = HostConfig {
        binds: Some(binds),
        network_mode: Some(settings.network.clone()),
        readonly_rootfs: Some(true),
        tmpfs: Some(HashMap::from([(
            "/tmp".to_string(),
            format!("rw,nosuid,nodev,size={},mode=1777", settings.tmp_bytes),
        )])),
        cap_drop: Some(vec!["ALL".into()]),
        security_opt: Some(vec!["no-new-privileges".into()]),
        pids_limit: Some(i64::from(settings.max_processes)),
        memory: Some(memory),
        memory_swap: Some(memory),
        nano_cpus: settings.cpus.map(|c| (c * 1e9) as i64),
        // The helper is PID 1 itself: no other process holds its stdin and
        // stdout, and none in the container can signal it (it reaps).
        init: Some(false),
        auto_remove: Some(true),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(settings.image.clone()),
        cmd: Some(vec![helper::PATH_IN_CONTAINER.to_string()]),
        entrypoint: Some(vec![]),
        user: Some(user.to_string()),
        working_dir: Some(cwd.display().to_string()),
        env: Some(vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()]),
        labels: Some(HashMap::from([(OWNER_LABEL.to_string(), owner())])),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(true),
        tty: Some(false),
        host_config: Some(host_config),
        ..Default::default()
    }
}

/// Force-removes `id` and returns once it is gone, also when the engine was
/// already removing it (a missing container is fine).
pub async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::new().force(true).build();
    // The container auto-removes: once its helper's stdin closes, the engine
    // may already be removing it and answers 409. Callers rely on it being
    // gone when this returns, so wait for the engine to finish (a container
    // already gone ends the wait with a 404).
    if let Err(bollard::errors::Error::DockerResponseServerError { status_code: 409, .. }) =
        docker.remove_container(id, Some(options)).await
    {
        let removed = WaitContainerOptions { condition: "removed".into() };
        let _ = tokio::time::timeout(REMOVAL_WAIT, docker.wait_container(id, Some(removed)).next()).await;
    }
}

/// How long [`remove`] waits for a removal the engine already started.
const REMOVAL_WAIT: Duration = Duration::from_secs(10);

/// Removes every toolhost container whose owning host process on this
/// machine is gone (a host that crashed or was killed); returns how many.
pub async fn remove_leftovers(docker: &Docker) -> Result<usize, BackendError> {
    let options = ListContainersOptions {
        all: true,
        filters: Some(HashMap::from([("label".to_string(), vec![OWNER_LABEL.to_string()])])),
        ..Default::default()
    };
    let list = docker
        .list_containers(Some(options))
        .await
        .map_err(|e| BackendError::Io(format!("cannot list the engine's containers: {e}")))?;
    let mut removed = 0;
    for c in list {
        let gone = c.labels.as_ref().and_then(|l| l.get(OWNER_LABEL)).is_some_and(|o| owner_is_gone(o));
        if let (true, Some(id)) = (gone, c.id.as_deref()) {
            tracing::info!("removing container {id} left by a toolhost that is gone");
            remove(docker, id).await;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_label_names_this_process_and_tells_a_dead_one() {
        let me = owner();
        assert!(!owner_is_gone(&me), "{me}");
        let host = hostname();
        assert!(owner_is_gone(&format!("{host}:{}:1", std::process::id())), "a reused pid has another start time");
        assert!(owner_is_gone(&format!("{host}:4194304:1")), "no such pid");
        assert!(!owner_is_gone("another-machine:1:1"), "another machine's containers are not ours to judge");
    }
}
