//! The [`QueueController`] trait: per-object reconciles from a work queue.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::{Input, InputKind, Output, ReconcileContext, ReconcileError};
use crate::Error;
use crate::resource::{AnyResource, Pointer};

/// What a queue controller's reconcile of one resource asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done until something changes.
    Done,
    /// Reconcile this resource again after the delay (a change before then
    /// runs it sooner).
    RequeueAfter(Duration),
}

/// A failure that retrying cannot fix: the key is not retried (until it
/// changes again). Wrap any error in it and return it from `reconcile`.
///
/// ```
/// use cosi_runtime::controller::{ReconcileError, TerminalError};
///
/// let e: ReconcileError = TerminalError::new("the MTU must be at least 68").into();
/// assert!(TerminalError::is_terminal(&e));
/// ```
#[derive(Debug)]
pub struct TerminalError(ReconcileError);

impl TerminalError {
    /// Marks `error` as terminal.
    pub fn new(error: impl Into<ReconcileError>) -> Self {
        TerminalError(error.into())
    }

    /// Whether a reconcile error is terminal: a `TerminalError`, or (feature
    /// `kubernetes`) a `cluster::SinkError` that retrying cannot fix, so
    /// that `?` on a sink's call keeps its verdict.
    pub fn is_terminal(error: &ReconcileError) -> bool {
        #[cfg(feature = "kubernetes")]
        if let Some(sink) = error.downcast_ref::<crate::cluster::SinkError>() {
            return sink.is_terminal();
        }
        error.is::<TerminalError>()
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "terminal: {}", self.0)
    }
}

impl std::error::Error for TerminalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// What a queue controller declares: its inputs, outputs and concurrency.
///
/// The [`Default`] is no inputs, no outputs and a concurrency of
/// [`DEFAULT_CONCURRENCY`] (1: one resource at a time), so a literal names
/// only what it sets, and [`new`](QueueSettings::new) takes the two lists:
///
/// ```
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// # #[spec(type = "Ints.test.cosi.dev")]
/// # struct Int(i64);
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// # #[spec(type = "Strs.test.cosi.dev")]
/// # struct Str(String);
///
/// let settings = QueueSettings {
///     inputs: vec![Input::primary::<Int>("default")],
///     outputs: vec![Output::exclusive::<Str>()],
///     ..Default::default()
/// };
/// assert_eq!(settings.concurrency, 1);
/// let same = QueueSettings::new(vec![Input::primary::<Int>("default")], vec![Output::exclusive::<Str>()]);
/// assert_eq!(same, settings);
/// assert_eq!(same.with_concurrency(4).concurrency, 4);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSettings {
    /// Primary inputs (each change queues that resource) and mapped inputs
    /// (each change is mapped by [`QueueController::map_input`] to primary resources).
    pub inputs: Vec<Input>,
    /// Outputs, as for [`Controller`](super::Controller).
    pub outputs: Vec<Output>,
    /// How many resources this controller may reconcile at once (at least 1;
    /// default [`DEFAULT_CONCURRENCY`]). The runtime's worker pool also caps
    /// all queue controllers together.
    pub concurrency: usize,
}

/// A queue controller's concurrency unless it says otherwise: one resource
/// at a time (the safe choice for a reconcile that touches the outside
/// world; raise it with [`QueueSettings::with_concurrency`]).
pub const DEFAULT_CONCURRENCY: usize = 1;

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings { inputs: Vec::new(), outputs: Vec::new(), concurrency: DEFAULT_CONCURRENCY }
    }
}

impl QueueSettings {
    /// These inputs and outputs, at the [default concurrency](DEFAULT_CONCURRENCY).
    pub fn new(inputs: Vec<Input>, outputs: Vec<Output>) -> Self {
        QueueSettings { inputs, outputs, ..QueueSettings::default() }
    }

    /// The same settings with another concurrency.
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }
}

/// A controller that reconciles one resource at a time per key, from a queue.
///
/// Each change to a primary input queues that resource; each change to a
/// mapped input is mapped to the primary resources it affects. Every primary
/// resource is queued when the controller starts. The queue guarantees
/// (see [`queue`](crate::queue)): a key is never reconciled concurrently with
/// itself, re-adds while it runs cause exactly one more run, failures back off
/// per key, panics are caught and retried like errors. A panic also replaces
/// the instance with a fresh one from the factory given to
/// [`register`](crate::Runtime::register) (state the panic left
/// behind, a poisoned lock or a half-done update, goes with it); reconciles
/// of other keys still running finish on the old instance. What must outlive
/// a panic (a count of attempts, a client) belongs outside the instance: an
/// `Arc` the factory clones into each one.
///
/// ```
/// use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileContext, ReconcileError};
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Int(i64);
/// # impl Spec for Int { const TYPE: &'static str = "Ints.test.cosi.dev"; }
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Str(String);
/// # impl Spec for Str { const TYPE: &'static str = "Strs.test.cosi.dev"; }
///
/// struct IntToStr;
///
/// impl QueueController for IntToStr {
///     fn name(&self) -> &str {
///         "IntToStr"
///     }
///     fn settings(&self) -> QueueSettings {
///         QueueSettings {
///             inputs: vec![Input::primary::<Int>("default")],
///             outputs: vec![Output::exclusive::<Str>()],
///             concurrency: 4, // default: 1
///         }
///     }
///     async fn reconcile(&self, cx: &ReconcileContext, ptr: &Pointer) -> Result<Outcome, ReconcileError> {
///         let out = Pointer::typed::<Str>("default", ptr.id());
///         match cx.get_typed::<Int>(ptr).await {
///             Ok(int) => {
///                 let text = int.spec().0.to_string();
///                 cx.modify(&out, move |s: &mut Resource<Str>| s.spec_mut().0 = text.clone()).await?;
///             }
///             Err(e) if e.is_not_found() => match cx.destroy(&out).await {
///                 Err(e) if !e.is_not_found() => return Err(e.into()),
///                 _ => {}
///             },
///             Err(e) => return Err(e.into()),
///         }
///         Ok(Outcome::Done)
///     }
/// }
/// ```
// Reconcile futures run on the controller's own actor and are never sent
// across threads, so they need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait QueueController: 'static {
    /// The controller's name (unique; owner of what it writes; its finalizer).
    fn name(&self) -> &str;

    /// Inputs (primary and mapped), outputs and concurrency, fixed at registration.
    fn settings(&self) -> QueueSettings;

    /// Reconciles one primary resource (which may no longer exist).
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError>;

    /// Maps a changed mapped-input resource to the primary resources to
    /// reconcile. By default: the resource with the same id in each primary
    /// input's kind. Returned pointers that are not primary inputs are ignored
    /// (and logged).
    fn map_input(&self, ptr: &Pointer) -> Vec<Pointer> {
        self.settings()
            .inputs
            .iter()
            .filter(|i| i.input_kind == InputKind::Primary)
            .map(|i| {
                // An input on every namespace: the primary in the mapped one's namespace.
                let namespace = if i.is_all_namespaces() { ptr.namespace() } else { &i.namespace };
                Pointer::new(namespace, &i.resource_type, ptr.id())
            })
            .collect()
    }

    /// Maps a changed mapped-input resource, when the mapping needs more than
    /// its pointer (a label, the owner, the spec). The resource is the new
    /// state of a created or updated resource, or the last state of a
    /// destroyed one. By default: [`map_input`](QueueController::map_input) of its pointer.
    fn map_resource(&self, input: &AnyResource) -> Vec<Pointer> {
        self.map_input(input.pointer())
    }

    /// Whether a change to this mapped-input resource queues **every**
    /// primary resource (for an input that all of them read, such as a
    /// shared configuration). The host lists the primary kinds and queues
    /// each resource; [`map_resource`](QueueController::map_resource) still runs.
    /// By default: `false`.
    fn requeues_all(&self, input: &AnyResource) -> bool {
        let _ = input;
        false
    }
}

/// Push a key into a queue controller (see [`QueueHandle`]).
#[derive(Message, Debug)]
#[rtype(result = "Result<(), Error>")]
pub(crate) struct Enqueue {
    pub(crate) pointer: Pointer,
    pub(crate) after: Duration,
}

/// A handle to push keys into a registered queue controller from any event
/// source (a feeder, a socket, a timer), as returned by
/// [`Runtime::register`](crate::Runtime::register).
#[derive(Clone)]
pub struct QueueHandle {
    name: Arc<str>,
    queue: Recipient<Enqueue>,
}

impl fmt::Debug for QueueHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueHandle").field("name", &self.name).finish()
    }
}

impl QueueHandle {
    pub(crate) fn new(name: Arc<str>, queue: Recipient<Enqueue>) -> Self {
        QueueHandle { name, queue }
    }

    /// The queue controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues `ptr` now (deduplicated like any trigger).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `ptr` is not covered by a primary input;
    /// [`Error::Unavailable`] if the controller is stopped.
    pub async fn enqueue(&self, ptr: &Pointer) -> Result<(), Error> {
        self.enqueue_after(ptr, Duration::ZERO).await
    }

    /// Queues `ptr` after `delay` (delays collapse to the earliest).
    ///
    /// # Errors
    /// As [`enqueue`](QueueHandle::enqueue).
    pub async fn enqueue_after(&self, ptr: &Pointer, delay: Duration) -> Result<(), Error> {
        let msg = Enqueue { pointer: ptr.clone(), after: delay };
        self.queue.send(msg).await.unwrap_or_else(|_| {
            Err(Error::Unavailable { resource: ptr.to_string(), service: "the queue controller" })
        })
    }
}
