//! Native function tools on the façade.

use super::Toolhost;
use crate::catalog::function::FunctionTool;
use crate::catalog::tool::{LoadError, ToolInfo};
use crate::execution::function::load_function;

impl Toolhost {
    /// Registers a native [`FunctionTool`]. It is listed, described, checked
    /// and called like any loaded tool. Fails if the name is taken or the
    /// schema is not a valid `type: object` JSON Schema.
    pub fn register_function(&self, tool: FunctionTool) -> Result<ToolInfo, LoadError> {
        let label = format!("function tool {}", tool.name());
        self.catalog().insert_loaded(load_function(tool)?, &label)
    }
}
