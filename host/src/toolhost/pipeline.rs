//! The pipeline service ([`Pipeline`]): one call from request to response
//! (`call.rs`), audited (`audit.rs`) and observed (`telemetry.rs`). It asks
//! the catalog for the tool, the permissions for a decision and the grants,
//! and the states for the agent state; it owns what only calls use: the
//! backend calls run on, the running-call slots, the audit log and
//! telemetry. The execution layer calls back into it through
//! [`crate::execution::host::ExecutionHost`].

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Result, bail};

use super::RUNNING_CALLS;
use super::catalog::Catalog;
use super::permissions::Permissions;
use super::states::States;
use crate::audit::AuditLog;
use crate::backend::Backend;
use crate::settings::Settings;
use crate::telemetry::Telemetry;

/// Runs calls: lookup → parse → validate → decide (in an instance with no
/// capability) → ask → a fresh call instance with the grants → the
/// middleware chain around `call` → the response. A [`crate::Toolhost`]
/// holds one ([`crate::Toolhost::pipeline`]); [`crate::Toolhost::call`]
/// starts a call on it.
pub struct Pipeline {
    pub(super) catalog: Arc<Catalog>,
    pub(super) permissions: Arc<Permissions>,
    pub(super) states: Arc<States>,
    pub(super) settings: Arc<Settings>,
    /// What every call's instances run on.
    backend: Arc<dyn Backend>,
    /// One permit per call holding instances ([`RUNNING_CALLS`]).
    running: Arc<tokio::sync::Semaphore>,
    /// The audit log of `[audit]`, when one is configured.
    pub(super) audit: Option<Arc<AuditLog>>,
    /// Traces and metrics, when either is on.
    pub(super) telemetry: Option<Arc<Telemetry>>,
    /// Each configured middleware's settings as JSON text, converted once.
    middleware_configs: BTreeMap<String, String>,
    /// This process's replica id, for the audit records.
    pub(super) replica: Option<String>,
}

/// What a [`Pipeline`] is made of, as [`crate::ToolhostBuilder::build`]
/// resolved it from the settings.
pub(super) struct PipelineParts {
    pub(super) catalog: Arc<Catalog>,
    pub(super) permissions: Arc<Permissions>,
    pub(super) states: Arc<States>,
    pub(super) settings: Arc<Settings>,
    pub(super) backend: Arc<dyn Backend>,
    pub(super) audit: Option<Arc<AuditLog>>,
    pub(super) telemetry: Option<Arc<Telemetry>>,
    pub(super) replica: Option<String>,
}

impl Pipeline {
    pub(super) fn new(parts: PipelineParts) -> Self {
        let settings = parts.settings;
        let middleware_configs = settings
            .middleware
            .settings
            .keys()
            .map(|name| (name.clone(), settings.middleware.config(name).to_string()))
            .collect();
        Pipeline {
            catalog: parts.catalog,
            permissions: parts.permissions,
            states: parts.states,
            backend: parts.backend,
            running: Arc::new(tokio::sync::Semaphore::new(RUNNING_CALLS)),
            audit: parts.audit,
            telemetry: parts.telemetry,
            middleware_configs,
            replica: parts.replica,
            settings,
        }
    }

    /// The active backend.
    pub(crate) fn backend(&self) -> Arc<dyn Backend> {
        self.backend.clone()
    }

    /// How many calls hold instances now (at most [`RUNNING_CALLS`]).
    pub(super) fn running_calls(&self) -> usize {
        RUNNING_CALLS.saturating_sub(self.running.available_permits())
    }

    /// A middleware's own settings (`[middleware.NAME]`) as JSON text;
    /// `{}` when none.
    pub fn middleware_config(&self, name: &str) -> String {
        self.middleware_configs.get(name).cloned().unwrap_or_else(|| "{}".to_string())
    }

    /// A permit to hold instances for one call, waiting at most `wait` for
    /// one of the [`RUNNING_CALLS`] to finish.
    pub(crate) async fn running_permit(&self, wait: std::time::Duration) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let acquire = self.running.clone().acquire_owned();
        let acquired = match &self.telemetry {
            None => tokio::time::timeout(wait, acquire).await,
            Some(telemetry) => {
                let started = std::time::Instant::now();
                let waiting = &telemetry.metrics().calls_waiting;
                waiting.inc();
                let acquired = tokio::time::timeout(wait, acquire).await;
                waiting.dec();
                let waited = started.elapsed();
                crate::telemetry::trace::note(|t| {
                    t.note(|n| n.queue_wait = Some(n.queue_wait.unwrap_or_default() + waited))
                });
                acquired
            }
        };
        match acquired {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => bail!("the host is shutting down"),
            Err(_) => bail!(
                "the host is running {RUNNING_CALLS} calls at once and none finished within {} ms (the call's \
                 timeout), so this one did not start; retry it, or send fewer long calls at once",
                wait.as_millis()
            ),
        }
    }
}
