//! The one seam every kind of tool implements: [`ToolKind`] makes a fresh
//! [`Callable`] for a call (or a permission check), and the pipeline runs
//! that. Component tools ([`super::component`]) and native function tools
//! ([`super::function`]) implement it; a new kind of tool (one proxied from
//! an MCP server, a remote tool) is one new file implementing these two
//! traits, with no `match` to extend anywhere else.

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::permission::{self, Behavior, PolicyTool, Rule, ToolVerdict};
use crate::response::Chunk;
use crate::runtime::failure::GuestFailure;
use crate::runtime::store::{CallSetup, Deadline};
use crate::runtime::{Limits, Runtime, Tier};
use crate::types::ToolError;

/// A kind of tool: what a loaded tool holds to make instances.
pub trait ToolKind: Send + Sync + 'static {
    /// A fresh instance for one call or for permission checks, set up as
    /// `setup` says (grants, backend, agent state, limits, output). A kind
    /// with no sandbox of its own uses only what applies to it (a native
    /// function takes the limits and the output).
    fn instantiate<'a>(&'a self, runtime: &'a Runtime, setup: CallSetup)
    -> BoxFuture<'a, anyhow::Result<CallableTool>>;

    /// Which compiler's code its instances run; `None` for a kind that runs
    /// no compiled component (a native function, an upstream server).
    fn tier(&self) -> Option<Tier> {
        None
    }
}

/// One instance of a tool: it answers the permission exports and runs one
/// call. What [`CallableTool`] wraps.
#[async_trait::async_trait]
pub trait Callable: Send {
    /// The tool's name, as rules name it.
    fn name(&self) -> &str;
    /// Whether this input only reads.
    async fn check_read_only(&mut self, input: &str) -> anyhow::Result<bool>;
    /// The tool's own judgement.
    async fn check_permissions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<ToolVerdict>;
    /// The index of the first of `contents` that matches `input`. By
    /// default none does: only tool-level rules (`--allow Lookup`) match a
    /// kind that does not judge rule contents (native tools).
    async fn match_rule(
        &mut self,
        _behavior: Behavior,
        _contents: &[String],
        _input: &str,
        _ctx: &permission::Context,
    ) -> anyhow::Result<Option<usize>> {
        Ok(None)
    }
    /// Rules to offer the user for this call.
    async fn suggestions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<Vec<Rule>>;
    /// Re-arms the deadline for the call itself.
    fn rearm(&mut self, limits: &Limits);
    /// Whether a guest entry trapped or timed out, leaving the instance
    /// unusable (never, by default: a kind without guest code).
    fn failed(&self) -> bool {
        false
    }
    /// Sends the output to `output` and runs under `deadline`.
    fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline);
    /// Runs the call; consumes the instance.
    async fn call(self: Box<Self>, input: &str) -> Result<Result<(), ToolError>, GuestFailure>;
}

/// A tool ready for one call, whatever its kind. The permission engine
/// consults it ([`PolicyTool`]), then the pipeline runs it once.
pub struct CallableTool(Box<dyn Callable>);

impl CallableTool {
    /// Wraps an instance of some kind of tool.
    pub(crate) fn new(instance: impl Callable + 'static) -> Self {
        Self(Box::new(instance))
    }

    /// Re-arms the deadline for the call itself (time spent asking the user
    /// does not count).
    pub fn rearm(&mut self, limits: &Limits) {
        self.0.rearm(limits)
    }

    /// Whether a guest entry trapped or timed out, leaving the instance
    /// unusable (never for a native function).
    pub fn failed(&self) -> bool {
        self.0.failed()
    }

    /// Sends the output to `output` and runs under `deadline` (used by the
    /// middleware chain).
    pub(crate) fn redirect(&mut self, output: mpsc::Sender<Chunk>, deadline: Deadline) {
        self.0.redirect(output, deadline)
    }

    /// Runs the call; consumes the instance (it is never reused).
    pub async fn call(self, input: &str) -> Result<Result<(), ToolError>, GuestFailure> {
        self.0.call(input).await
    }
}

impl PolicyTool for CallableTool {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn check_read_only(&mut self, input: &str) -> anyhow::Result<bool> {
        self.0.check_read_only(input).await
    }

    async fn check_permissions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<ToolVerdict> {
        self.0.check_permissions(input, ctx).await
    }

    async fn match_rule(
        &mut self,
        behavior: Behavior,
        contents: &[String],
        input: &str,
        ctx: &permission::Context,
    ) -> anyhow::Result<Option<usize>> {
        self.0.match_rule(behavior, contents, input, ctx).await
    }

    async fn suggestions(&mut self, input: &str, ctx: &permission::Context) -> anyhow::Result<Vec<Rule>> {
        self.0.suggestions(input, ctx).await
    }
}
