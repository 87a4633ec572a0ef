//! Spans: the tracer made from `[telemetry]`, a call's span
//! ([`CallTrace`]) and the child spans of its steps ([`Child`]), found
//! through a task-local scope so the pipeline's steps need no extra
//! argument; and the W3C trace context a caller hands in ([`TraceParent`]).
//!
//! A call's span is the SDK's: it decides sampling (the caller's flag, else
//! `sample_ratio`). Its children are made here, as the exported record
//! itself, and queued when they end: a child of a sampled call is always
//! sampled, so the SDK's sampler, its per-span builder and its `Context`
//! for each parent would only cost the call time.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::Either;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt as _, TraceFlags, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    IdGenerator as _, RandomIdGenerator, Sampler, SdkTracer, SdkTracerProvider, Span, SpanData, SpanEvents, SpanLinks,
    SpanProcessor as _,
};

use super::TelemetrySettings;
use super::export::Queue;
use crate::permission::{Behavior, Source};
use crate::sync::MutexExt;

/// Whether traces are configured: an endpoint in `[telemetry]` or in the
/// `OTEL_EXPORTER_OTLP_ENDPOINT` / `..._TRACES_ENDPOINT` environment,
/// `OTEL_SDK_DISABLED` not `true` and `OTEL_TRACES_EXPORTER` not `none`.
pub fn configured(settings: &TelemetrySettings) -> bool {
    super::otlp::configured(settings, super::otlp::Signal::Traces)
}

/// The most attributes a call span gets: the three it starts with, the
/// decision's four, mode, plugin, outcome, output bytes, duration, input
/// and output.
const CALL_ATTRIBUTES: usize = 16;

/// The name of toolhost's instrumentation scope, on every span.
const SCOPE: &str = "toolhost";

/// The tracer of a host with traces.
pub struct Tracing {
    /// Holds the provider (and so the exporter's queue) alive.
    tracer: SdkTracer,
    children: Arc<Children>,
    record_input: bool,
}

/// Where the child spans of calls go: the exporter's queue, as the SDK
/// would put them there, from the same instrumentation scope.
struct Children {
    queue: Queue,
    scope: InstrumentationScope,
}

impl Tracing {
    /// A tracer sampling `sample_ratio` of the calls whose caller did not
    /// decide, its spans describing `resource`, ended spans going to
    /// `queue`.
    pub(super) fn new(settings: &TelemetrySettings, resource: Resource, queue: Queue) -> Self {
        let provider = SdkTracerProvider::builder()
            .with_span_processor(queue.clone())
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(settings.sample_ratio))))
            .with_resource(resource)
            .build();
        let tracer = provider.tracer(SCOPE);
        let children = Arc::new(Children { queue, scope: InstrumentationScope::builder(SCOPE).build() });
        Tracing { tracer, children, record_input: settings.record_input }
    }

    /// Starts the span of a call of `tool` (a registered name or
    /// [`super::UNKNOWN_TOOL`]), a child of `parent` when the caller sent
    /// its trace context.
    pub fn call_span(&self, tool: &str, call_id: &str, parent: Option<&TraceParent>) -> CallTrace {
        let parent_cx = parent.map(TraceParent::context).unwrap_or_default();
        // Room for every attribute the call gets (`complete_span`), so
        // setting them never regrows and copies the list.
        let mut attributes = Vec::with_capacity(CALL_ATTRIBUTES);
        attributes.extend([
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
            KeyValue::new("gen_ai.tool.call.id", call_id.to_owned()),
        ]);
        let mut builder = self.tracer.span_builder(format!("execute_tool {tool}")).with_kind(SpanKind::Internal);
        builder.attributes = Some(attributes);
        let span = self.tracer.build_with_context(builder, &parent_cx);
        let recording = span.is_recording();
        let context = span.span_context().clone();
        CallTrace {
            children: recording.then(|| self.children.clone()),
            record_input: self.record_input,
            span: Some(Mutex::new(span)),
            context,
            notes: Mutex::default(),
        }
    }
}

/// One call as telemetry sees it: its span (when traced), the parent of
/// its steps' spans, and what the pipeline noted for its metrics.
pub struct CallTrace {
    /// Where its child spans go; `None` unless the call is sampled (an
    /// unsampled call makes no child span).
    children: Option<Arc<Children>>,
    record_input: bool,
    span: Option<Mutex<Span>>,
    /// The call span's, the parent of children not inside a layer.
    context: SpanContext,
    notes: Mutex<Notes>,
}

/// What the pipeline notes about a call for its span and metrics.
#[derive(Debug, Default, Clone)]
pub struct Notes {
    /// The first decision: behaviour, step, rule.
    pub decision: Option<(Behavior, Source, Option<String>)>,
    /// The user's answer to an ask.
    pub answer: Option<&'static str>,
    /// The SHA-256 of the tool's component.
    pub sha256: Option<String>,
    /// The decision instance and the engine.
    pub decision_time: Option<Duration>,
    /// Waiting for an instance slot.
    pub queue_wait: Option<Duration>,
    /// The call instance and the middleware chain.
    pub call_time: Option<Duration>,
    /// Compare-and-sets of agent state that found another value.
    pub state_conflicts: u64,
}

impl CallTrace {
    /// A call with metrics and no trace.
    pub fn untraced() -> Self {
        CallTrace {
            children: None,
            record_input: false,
            span: None,
            context: SpanContext::empty_context(),
            notes: Mutex::default(),
        }
    }

    /// Whether the call is sampled (attributes are worth computing).
    pub fn recording(&self) -> bool {
        self.children.is_some()
    }

    /// Whether the (redacted) input and output go on the span.
    pub fn records_input(&self) -> bool {
        self.recording() && self.record_input
    }

    /// Sets an attribute of the call span.
    pub fn set(&self, attribute: KeyValue) {
        if let Some(span) = self.span.as_ref().filter(|_| self.recording()) {
            span.lock_unpoisoned().set_attribute(attribute);
        }
    }

    /// Sets attributes of the call span, under one lock.
    pub fn set_all(&self, attributes: Vec<KeyValue>) {
        if let Some(span) = self.span.as_ref().filter(|_| self.recording()) {
            span.lock_unpoisoned().set_attributes(attributes);
        }
    }

    /// Marks the call span failed with `message`.
    pub fn fail(&self, message: &'static str) {
        if let Some(span) = self.span.as_ref().filter(|_| self.recording()) {
            span.lock_unpoisoned().set_status(Status::error(message));
        }
    }

    /// Ends the call span (also done when it is dropped).
    pub fn end(&self) {
        if let Some(span) = &self.span {
            span.lock_unpoisoned().end();
        }
    }

    /// Notes something about the call.
    pub fn note(&self, f: impl FnOnce(&mut Notes)) {
        f(&mut self.notes.lock_unpoisoned());
    }

    /// What was noted, taken out (once the call ended).
    pub fn take_notes(&self) -> Notes {
        std::mem::take(&mut *self.notes.lock_unpoisoned())
    }

    fn child_of(&self, parent: &SpanContext, name: Cow<'static, str>) -> Option<Child> {
        let children = self.children.as_ref()?;
        let context = SpanContext::new(
            parent.trace_id(),
            RandomIdGenerator::default().new_span_id(),
            TraceFlags::SAMPLED,
            false,
            parent.trace_state().clone(),
        );
        let now = opentelemetry::time::now();
        let data = SpanData {
            span_context: context,
            parent_span_id: parent.span_id(),
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name,
            start_time: now,
            end_time: now,
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: children.scope.clone(),
        };
        Some(Child { data: Some(data), children: children.clone() })
    }
}

/// The span of one step of a call (of a sampled call only); ended and
/// queued for export when dropped.
pub struct Child {
    /// Taken when it ends.
    data: Option<SpanData>,
    children: Arc<Children>,
}

impl Child {
    fn data(&mut self) -> &mut SpanData {
        self.data.as_mut().expect("a child span is ended only when dropped")
    }

    fn context(&self) -> &SpanContext {
        &self.data.as_ref().expect("a child span is ended only when dropped").span_context
    }

    /// Sets an attribute.
    pub fn set(&mut self, attribute: KeyValue) {
        self.data().attributes.push(attribute);
    }

    /// Marks the step failed with `message`.
    pub fn fail(&mut self, message: impl Into<Cow<'static, str>>) {
        self.data().status = Status::error(message);
    }

    /// This span's context in W3C form, for a request leaving the host.
    pub fn traceparent(&self) -> TraceParent {
        TraceParent::of(&Context::new().with_remote_span_context(self.context().clone()))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(mut data) = self.data.take() {
            data.end_time = opentelemetry::time::now();
            self.children.queue.on_end(data);
        }
    }
}

/// Where the current task is in a call's trace: the call and the span new
/// steps are children of.
#[derive(Clone)]
pub struct Scope {
    call: Arc<CallTrace>,
    parent: SpanContext,
}

tokio::task_local! {
    /// The trace of the call the current task runs, when it is traced.
    static CURRENT: Scope;
}

/// Runs `f` as the call `call` (its steps' spans are its children).
///
/// This and the wrappers below are plain functions returning the future:
/// an `async fn` would hold `f` twice (its argument and the scope around
/// it), doubling a call's future, which is moved whole when it starts.
pub fn scope<F: Future>(call: Arc<CallTrace>, f: F) -> impl Future<Output = F::Output> {
    let parent = call.context.clone();
    CURRENT.scope(Scope { call, parent }, f)
}

/// The current task's place in a call's trace, to carry into a task it
/// spawns ([`within`]).
pub fn current() -> Option<Scope> {
    CURRENT.try_with(Clone::clone).ok()
}

/// Runs `f` in `scope` (a spawned task of the call), or plainly.
pub fn within<F: Future>(scope: Option<Scope>, f: F) -> impl Future<Output = F::Output> {
    match scope {
        Some(scope) => Either::Left(CURRENT.scope(scope, f)),
        None => Either::Right(f),
    }
}

/// Runs `f` with `child` as the parent of the spans it starts (the inner
/// layers of a middleware, the operations of an instance).
pub fn inside<F: Future>(child: &Option<Child>, f: F) -> impl Future<Output = F::Output> {
    let scope = child.as_ref().and_then(|child| Some(Scope { call: current()?.call, parent: child.context().clone() }));
    within(scope, f)
}

/// Starts a span of a step in the current call, when it is traced and
/// sampled; `name` is a closure so an untraced call formats nothing.
pub fn child<N: Into<Cow<'static, str>>>(name: impl FnOnce() -> N) -> Option<Child> {
    CURRENT.try_with(|s| s.call.child_of(&s.parent, name().into())).ok().flatten()
}

/// Whether the current task runs a traced, sampled call.
pub fn tracing() -> bool {
    CURRENT.try_with(|s| s.call.recording()).unwrap_or(false)
}

/// Applies `f` to the current call's trace, if any.
pub fn note(f: impl FnOnce(&CallTrace)) {
    let _ = CURRENT.try_with(|s| f(&s.call));
}

/// A W3C trace context (`traceparent`, `tracestate`) as a caller sends it
/// in an MCP request's `_meta` or HTTP headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceParent {
    /// `00-{trace id}-{span id}-{flags}`.
    pub traceparent: String,
    /// Vendor entries, passed on unchanged.
    pub tracestate: Option<String>,
}

impl TraceParent {
    /// The context it names (an empty one when it is malformed: the call
    /// then starts a trace of its own, as the W3C spec says).
    fn context(&self) -> Context {
        let mut carrier = HashMap::with_capacity(2);
        carrier.insert("traceparent".to_owned(), self.traceparent.clone());
        if let Some(state) = &self.tracestate {
            carrier.insert("tracestate".to_owned(), state.clone());
        }
        TraceContextPropagator::new().extract(&carrier)
    }

    fn of(cx: &Context) -> TraceParent {
        let mut carrier: HashMap<String, String> = HashMap::with_capacity(2);
        TraceContextPropagator::new().inject_context(cx, &mut carrier);
        TraceParent {
            traceparent: carrier.remove("traceparent").unwrap_or_default(),
            tracestate: carrier.remove("tracestate").filter(|s| !s.is_empty()),
        }
    }
}
