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
use crate::runtime::bindings::{ToolPre, WitVersion};
use crate::runtime::store::CallSetup;
use crate::runtime::{CacheOutcome, Runtime, Tier};
use wasmtime::component::Component;

/// A tool component, instantiated afresh for every call.
pub struct ComponentTool {
    pre: ToolPre,
    tier: Tier,
}

impl ToolKind for ComponentTool {
    fn instantiate<'a>(
        &'a self,
        _runtime: &'a Runtime,
        setup: CallSetup,
    ) -> BoxFuture<'a, anyhow::Result<CallableTool>> {
        Box::pin(async move { Ok(CallableTool::new(ToolInstance::new(&self.pre, setup).await?)) })
    }

    fn tier(&self) -> Option<Tier> {
        Some(self.tier)
    }
}

/// What [`load_component`] reports besides the tool.
pub struct LoadReport {
    /// The tool.
    pub tool: LoadedTool,
    /// What the compile cache did.
    pub cache: CacheOutcome,
    /// Which compiler's code it runs.
    pub tier: Tier,
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
    load_component_with_hash(runtime, bytes, origin, label, None, Tier::Optimised).await
}

/// [`load_component`] with the SHA-256 of `bytes` already known (the
/// built-ins' hashes are computed at build time). With `first_use` at
/// [`Tier::Baseline`], a component whose optimised code is not cached is
/// compiled with the baseline compiler (the code of a first use).
pub async fn load_component_with_hash(
    runtime: &Runtime,
    bytes: &[u8],
    origin: Origin,
    label: &str,
    sha256: Option<&str>,
    first_use: Tier,
) -> Result<LoadReport, LoadError> {
    check_header(bytes, label)?;
    let sha256 = sha256.map(str::to_string).unwrap_or_else(|| hex::encode(Sha256::digest(bytes)));
    let compiled = match first_use {
        Tier::Baseline => runtime.compile_first_use(bytes, label),
        Tier::Optimised => runtime.compile(bytes, label).map(|(c, cache)| (c, cache, Tier::Optimised)),
    };
    let compiled = compiled.map_err(|e| LoadError::Compile(label.into(), format!("{e:#}")))?;
    load_compiled(runtime, compiled, origin, label, sha256).await
}

/// The rest of a load once the component is compiled (`compiled`: the
/// component, what the cache did, which compiler's code it is): its world
/// and version, linking, its metadata asked with no grants, the checks of
/// that metadata. `sha256` is that of the component's bytes.
pub async fn load_compiled(
    runtime: &Runtime,
    compiled: (Component, CacheOutcome, Tier),
    origin: Origin,
    label: &str,
    sha256: String,
) -> Result<LoadReport, LoadError> {
    let (component, cache, tier) = compiled;
    let imports: Vec<String> =
        component.component_type().imports(component.engine()).map(|(name, _)| name.to_string()).collect();
    let (pre, wit_version) = linked(runtime, &component, label)?;
    let metadata = ToolInstance::probe(runtime, &pre, label)
        .await
        .map_err(|e| LoadError::Instantiate(label.into(), format!("{e:#}")))?;
    let (info, validator) = validate_metadata(metadata, origin, wit_version.to_string(), sha256, label)?;
    Ok(LoadReport {
        tool: LoadedTool::new(info, validator, Arc::new(ComponentTool { pre, tier })),
        cache,
        tier,
        imports,
    })
}

/// `old`, a component tool, on other code of the same bytes (their
/// optimised compile, `component`): the world and version checked and the
/// imports linked again, the metadata the first load asked for kept. No
/// guest code runs: nothing the guest would answer now can change what the
/// tool is (its name, flags, schema or declared capabilities).
pub(crate) fn recompiled(runtime: &Runtime, component: &Component, old: &LoadedTool) -> Result<LoadedTool, LoadError> {
    let label = match &old.info.origin {
        Origin::File(path) => path.display().to_string(),
        _ => old.info.name.clone(),
    };
    let (pre, _) = linked(runtime, component, &label)?;
    Ok(old.with_kind(Arc::new(ComponentTool { pre, tier: Tier::Optimised })))
}

/// `component` checked as a tool of a WIT version this host serves, and
/// linked against the host's imports for that version.
fn linked(runtime: &Runtime, component: &Component, label: &str) -> Result<(ToolPre, WitVersion), LoadError> {
    let wit_version = check_exports(component, label, ComponentKind::Tool)?;
    let pre = runtime
        .tool_linker_for(component)
        .instantiate_pre(component)
        .map_err(|e| LoadError::UnknownImport(label.into(), format!("{e:#}")))?;
    let pre = ToolPre::new(wit_version, pre).map_err(|e| LoadError::WrongWorld(label.into(), format!("{e:#}")))?;
    Ok((pre, wit_version))
}

/// Loads a built-in: compiles it (through the cache; a first use on an
/// empty cache gets baseline code), asks it for its metadata and checks that
/// it reports the name it is registered under and the metadata its
/// `metadata.json` carries.
#[cfg(test)]
pub async fn load_builtin(runtime: &Runtime, builtin: &Builtin) -> Result<LoadedTool, LoadError> {
    load_builtin_tiered(runtime, builtin).await.map(|(tool, _)| tool)
}

/// `load_builtin`, saying which compiler's code the tool runs (baseline
/// code is worth optimising in a host that keeps running).
pub async fn load_builtin_tiered(runtime: &Runtime, builtin: &Builtin) -> Result<(LoadedTool, Tier), LoadError> {
    let report = load_builtin_report(runtime, builtin).await?;
    let tool = report.tool;
    if tool.info.name != builtin.name {
        return Err(builtin.name_mismatch(tool.info.name.clone()));
    }
    if !builtin.metadata_matches(&tool.info)? {
        return Err(LoadError::BuiltinMetadataDrift {
            name: builtin.name.to_string(),
            crate_name: builtin.crate_name.to_string(),
        });
    }
    Ok((tool, report.tier))
}

/// Loads a built-in's component and asks it for its metadata, comparing
/// it with nothing (the metadata test and its `TOOLHOST_BLESS_METADATA`
/// rewrite use this).
#[cfg(test)]
pub async fn load_builtin_unchecked(runtime: &Runtime, builtin: &Builtin) -> Result<LoadedTool, LoadError> {
    load_builtin_report(runtime, builtin).await.map(|report| report.tool)
}

async fn load_builtin_report(runtime: &Runtime, builtin: &Builtin) -> Result<LoadReport, LoadError> {
    let label = format!("built-in tool {}", builtin.name);
    let report =
        load_component_with_hash(runtime, builtin.bytes, Origin::Builtin, &label, Some(builtin.sha256), Tier::Baseline)
            .await?;
    tracing::debug!("loaded {label}: {:?} code (compile cache: {:?})", report.tier, report.cache);
    Ok(report)
}
