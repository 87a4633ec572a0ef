//! Finding the engine the way the Docker CLI does: `DOCKER_HOST`, else the
//! default socket. Every step is bounded, so no engine is an error that says
//! what was tried, never a hang.

use std::time::Duration;

use bollard::{API_DEFAULT_VERSION, Docker};

use crate::backend::BackendError;

/// How long connecting and negotiating the API version may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default engine socket on Linux.
pub const DEFAULT_SOCKET: &str = "unix:///var/run/docker.sock";

/// The engine's address and where it came from.
pub fn address() -> (String, &'static str) {
    match std::env::var("DOCKER_HOST") {
        Ok(h) if !h.is_empty() => (h, "DOCKER_HOST"),
        _ => (DEFAULT_SOCKET.to_string(), "the default socket (DOCKER_HOST is unset)"),
    }
}

/// A client on the engine with the API version negotiated (Debian's engine
/// speaks 1.41; bollard asks for 1.53 unless told).
pub async fn connect() -> Result<Docker, BackendError> {
    let (host, from) = address();
    let unreachable = |why: String| {
        BackendError::Io(format!(
            "the Docker backend found no engine at {host} (from {from}): {why}; start one (`sudo systemctl start \
             docker`, or `source .ci/docker.sh` to run dockerd by hand) or point DOCKER_HOST at it, or set \
             [backend] kind = \"local\""
        ))
    };
    let docker = if let Some(path) = host.strip_prefix("unix://") {
        Docker::connect_with_unix(path, 120, API_DEFAULT_VERSION)
    } else {
        Docker::connect_with_host(&host)
    }
    .map_err(|e| unreachable(e.to_string()))?;
    let docker = match tokio::time::timeout(CONNECT_TIMEOUT, docker.negotiate_version()).await {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => return Err(unreachable(e.to_string())),
        Err(_) => return Err(unreachable(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))),
    };
    Ok(docker)
}
