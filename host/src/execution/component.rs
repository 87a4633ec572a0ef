//! Component tools: loading one (check, compile through the cache, ask
//! for its metadata with no grants, validate it) and making its instances
//! ([`ComponentTool`], the [`ToolKind`] of every plugin and built-in).

use std::sync::Arc;

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use super::callable::{CallableTool, ToolKind};
use super::instance::ToolInstance;
use super::loaded::LoadedTool;
use crate::catalog::builtin::Builtin;
use crate::catalog::component::{ComponentKind, check_exports, check_header};
use crate::catalog::tool::{LoadError, Origin, validate_metadata};
use crate::runtime::bindings::ToolPre;
use crate::runtime::store::CallSetup;
use crate::runtime::{CacheOutcome, Runtime};

/// A tool component, instantiated afresh for every call.
pub struct ComponentTool {
    pre: ToolPre,
}

impl ToolKind for ComponentTool {
    fn instantiate<'a>(
        &'a self,
        runtime: &'a Runtime,
        setup: CallSetup,
    ) -> BoxFuture<'a, anyhow::Result<CallableTool>> {
        Box::pin(async move { Ok(CallableTool::new(ToolInstance::new(runtime, &self.pre, setup).await?)) })
    }
}

/// What [`load_component`] reports besides the tool.
pub struct LoadReport {
    /// The tool.
    pub tool: LoadedTool,
    /// What the compile cache did.
    pub cache: CacheOutcome,
    /// The interfaces the component imports.
    pub imports: Vec<String>,
}

/// Validates, compiles and introspects a component. `label` names it in
/// errors (a path, or `built-in bash`).
pub async fn load_component(
    runtime: &Runtime,
    bytes: &[u8],
    origin: Origin,
    label: &str,
) -> Result<LoadReport, LoadError> {
    load_component_with_hash(runtime, bytes, origin, label, None).await
}

/// [`load_component`] with the SHA-256 of `bytes` already known (the
/// built-ins' hashes are computed at build time).
pub async fn load_component_with_hash(
    runtime: &Runtime,
    bytes: &[u8],
    origin: Origin,
    label: &str,
    sha256: Option<&str>,
) -> Result<LoadReport, LoadError> {
    check_header(bytes, label)?;
    let sha256 = sha256.map(str::to_string).unwrap_or_else(|| hex::encode(Sha256::digest(bytes)));
    let (component, cache) = runtime.compile(bytes).map_err(|e| LoadError::Compile(label.into(), format!("{e:#}")))?;
    let wit_version = check_exports(runtime, &component, label, ComponentKind::Tool)?;
    let imports: Vec<String> =
        component.component_type().imports(runtime.engine()).map(|(name, _)| name.to_string()).collect();
    let pre = runtime
        .tool_linker()
        .instantiate_pre(&component)
        .map_err(|e| LoadError::UnknownImport(label.into(), format!("{e:#}")))?;
    let pre = ToolPre::new(wit_version, pre).map_err(|e| LoadError::WrongWorld(label.into(), format!("{e:#}")))?;
    let metadata = ToolInstance::probe(runtime, &pre, label)
        .await
        .map_err(|e| LoadError::Instantiate(label.into(), format!("{e:#}")))?;
    let (info, validator) = validate_metadata(metadata, origin, wit_version.to_string(), sha256, label)?;
    Ok(LoadReport { tool: LoadedTool::new(info, validator, Arc::new(ComponentTool { pre })), cache, imports })
}

/// Loads a built-in: compiles it (through the cache), asks it for its
/// metadata and checks that it reports the name it is registered under.
pub async fn load_builtin(runtime: &Runtime, builtin: &Builtin) -> Result<LoadedTool, LoadError> {
    let label = format!("built-in tool {}", builtin.name);
    let report =
        load_component_with_hash(runtime, builtin.bytes, Origin::Builtin, &label, Some(builtin.sha256)).await?;
    if report.tool.info.name != builtin.name {
        return Err(LoadError::BuiltinNameMismatch {
            registered: builtin.name.to_string(),
            crate_name: builtin.crate_name.to_string(),
            reported: report.tool.info.name,
        });
    }
    tracing::debug!("loaded {label} (compile cache: {:?})", report.cache);
    Ok(report.tool)
}
