//! Loading a middleware component: the checks every component gets
//! ([`crate::catalog::component`]), then its `info` asked with no grants
//! under the probe limits, its name checked by the one name rule
//! ([`crate::catalog::name`]).

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::failure::{CallFailure, MiddlewareFault};
use super::registry::MiddlewareInfo;
use crate::capability::Grants;
use crate::catalog::component::{ComponentKind, check_exports, check_header};
use crate::catalog::tool::{LoadError, MAX_DESCRIPTION_BYTES, Origin, check_text_size};
use crate::execution::instance::with_deadline;
use crate::runtime::bindings::MiddlewarePre;
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline, new_store};
use crate::runtime::{CallState, Runtime};

/// A middleware component ready to be instantiated for calls.
pub struct LoadedMiddleware {
    /// Its name and description.
    pub info: MiddlewareInfo,
    pub(super) pre: MiddlewarePre,
}

/// Checks, compiles and introspects a middleware component (calling its
/// `info` with no grants and the probe's shorter time limit).
pub async fn load_middleware_component(
    runtime: &Runtime,
    bytes: &[u8],
    origin: Origin,
    label: &str,
) -> Result<LoadedMiddleware, LoadError> {
    check_header(bytes, label)?;
    let sha256 = hex::encode(Sha256::digest(bytes));
    let (component, _) =
        runtime.compile(bytes, label).map_err(|e| LoadError::Compile(label.into(), format!("{e:#}")))?;
    let wit_version = check_exports(&component, label, ComponentKind::Middleware)?;
    let pre = runtime
        .middleware_linker()
        .instantiate_pre(&component)
        .map_err(|e| LoadError::MiddlewareUnknownImport(label.into(), format!("{e:#}")))?;
    let pre = MiddlewarePre::new(wit_version, pre)
        .map_err(|e| LoadError::MiddlewareWrongWorld(label.into(), format!("{e:#}")))?;
    let limits = runtime.probe_limits();
    let deadline = Deadline::new(limits.timeout(), Duration::ZERO);
    let (tx, _rx) = mpsc::channel(1);
    // No grant yet, and no backend either: every operation is refused.
    let backend = crate::backend::DeniedBackend::shared();
    let state = CallState::new(CallSetup {
        tool: Arc::from(label),
        grants: Arc::new(Grants::none(label)),
        backend,
        agent_state: None,
        limits,
        deadline: deadline.clone(),
        output: tx,
        tool_config: None,
    });
    let mut store = new_store(runtime, state);
    let probe = async {
        let instance = pre.instantiate(&mut store).await?;
        instance.info(&mut store).await
    };
    let info = match with_deadline(&deadline, probe).await {
        Some(Ok(info)) => info,
        Some(Err(e)) => {
            let failure = GuestFailure::classify(
                &e,
                &store.data().stderr_tail(),
                deadline.remaining().is_zero(),
                limits.timeout_ms,
                limits.max_memory_bytes,
            );
            // Blamed on the middleware, in the words its call failures use.
            let blamed = CallFailure::Middleware { name: label.into(), fault: MiddlewareFault::Guest(failure) };
            return Err(LoadError::MiddlewareProbe(label.into(), blamed.to_string()));
        }
        None => {
            return Err(LoadError::MiddlewareProbe(
                label.into(),
                format!("`info` did not answer within {} ms (limits.timeout_ms, at most 10 s)", limits.timeout_ms),
            ));
        }
    };
    check_name(&info.name, label)?;
    check_text_size("description", &info.description, MAX_DESCRIPTION_BYTES)
        .map_err(|e| LoadError::MiddlewareInfo(label.into(), e))?;
    Ok(LoadedMiddleware {
        info: MiddlewareInfo {
            name: info.name,
            description: info.description,
            origin,
            wit_version: wit_version.to_string(),
            sha256,
        },
        pre,
    })
}

/// Checks a middleware name by the rule tools follow too (`*`, which
/// means "every tool" in attachments, is not a valid name under it).
pub(crate) fn check_name(name: &str, label: &str) -> Result<(), LoadError> {
    crate::catalog::name::check_name("middleware", name).map_err(|e| LoadError::MiddlewareInfo(label.into(), e))
}
