//! [`LoadedTool`]: a tool of the catalog made ready for calls: its
//! metadata, its input validator, what makes its instances
//! ([`ToolKind`]), and its grants once computed.

use std::sync::{Arc, OnceLock};

use super::callable::ToolKind;
use crate::capability::PhaseGrants;
use crate::catalog::registry::Registered;
use crate::catalog::tool::ToolInfo;

pub use toolhost_core::input_schema::input_errors;

/// A tool ready to be instantiated for calls.
pub struct LoadedTool {
    /// Its metadata.
    pub info: ToolInfo,
    pub(crate) kind: Arc<dyn ToolKind>,
    pub(crate) validator: Arc<jsonschema::Validator>,
    /// Its grants in each phase, computed on first use by the host that
    /// holds it (from this tool's own metadata: a replacement computes its
    /// own and inherits nothing).
    pub(crate) grants: OnceLock<PhaseGrants>,
}

impl LoadedTool {
    /// A loaded tool of `kind` with validated metadata.
    pub(crate) fn new(info: ToolInfo, validator: jsonschema::Validator, kind: Arc<dyn ToolKind>) -> Self {
        Self { info, kind, validator: Arc::new(validator), grants: OnceLock::new() }
    }
}

impl LoadedTool {
    /// The same tool (metadata, validator) with its instances made by
    /// `kind`, its grants computed afresh.
    pub(crate) fn with_kind(&self, kind: Arc<dyn ToolKind>) -> Self {
        Self { info: self.info.clone(), kind, validator: self.validator.clone(), grants: OnceLock::new() }
    }
}

impl Registered for LoadedTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
}

/// Validates `input` against the tool's schema; the error names the field
/// (as a JSON pointer) and the rule it breaks.
pub fn validate_input(tool: &LoadedTool, input: &serde_json::Value) -> Result<(), String> {
    input_errors(&tool.validator, &tool.info.name, input)
}
