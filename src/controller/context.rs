//! [`ReconcileContext`]: a controller's only way to the state, access-checked.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::Input;
use super::access::AccessRules;
use super::metrics::Counters;
use crate::Error;
use crate::events::{EventType, Recorder};
use crate::resource::{
    Address, AnyResource, Finalizers, Kind, LabelQuery, Pointer, PointerTo, Resource, Spec,
};
use crate::state::request::{StateReply, StateRequest, reply_done, reply_ready, reply_resource};
use crate::state::store::keep_finalizers;
use crate::state::{ExpectedPhase, State};
use crate::supervisor::{RegistrationError, check_inputs};

/// What a reconcile can do: read its inputs, write its outputs, manage its
/// finalizers on strong inputs, ask to run again.
///
/// Every call is checked against the controller's declared inputs and outputs
/// (see [`controller`](super) for the rules) and fails with
/// [`Error::AccessDenied`] otherwise. Writes are stamped with the controller's
/// name as owner. Methods take `&self`, so several calls can be awaited
/// concurrently (for example with `futures::future::join_all`).
///
/// Reads and writes are the [`Access`](crate::state::Access) calls, the same as a user's
/// [`Client`](crate::state::Client) and a test's
/// [`Harness`](crate::testing::Harness): `get`, `get_typed`, `list`,
/// `list_typed`, `list_decoded`, `create`, `update`, `modify`, `modify_or`,
/// `modify_with`, `teardown`, `destroy`, `release`. Beyond them: this
/// controller's finalizer ([`add_finalizer`](Self::add_finalizer),
/// [`remove_finalizer`](Self::remove_finalizer); for queue controllers the
/// whole dance is [`finalizer`](super::finalizer())),
/// [`requeue_after`](Self::requeue_after) and [`update_inputs`](Self::update_inputs),
/// and Events: [`event`](Self::event), [`recorder`](Self::recorder).
pub struct ReconcileContext {
    reach: Arc<Reach>,
    rules: Arc<AccessRules>,
    /// The shortest requeue asked for, in nanoseconds; `u64::MAX`: none.
    requeue_after: AtomicU64,
    new_inputs: Option<Vec<Input>>,
    queue: bool,
    /// The owner name writes carry, when not the controller's own
    /// allocation: a sharded reconcile's, registered with its shard's fence.
    writer: Option<Arc<str>>,
    /// A sharded reconcile's shard and its fencing token.
    shard: Option<(u32, i64)>,
}

impl fmt::Debug for ReconcileContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileContext")
            .field("controller", &self.name())
            .field("requeue_after", &self.requeued())
            .finish_non_exhaustive()
    }
}

/// What every reconcile of one controller reaches: its state handle and its
/// counters. A host builds it once and shares it with each context (a
/// [`State`] clone per reconcile costs a dozen atomic operations).
#[derive(Debug)]
pub(crate) struct Reach {
    pub(crate) state: State,
    pub(crate) counters: Arc<Counters>,
    /// Records Events as this controller.
    pub(crate) events: Recorder,
}

// The controller's calls as the one `Access` surface: it writes as itself.
crate::state::client::implementors::core_by_inherent!(ReconcileContext, |cx| Some(cx.name()));
crate::state::client::implementors::derived_calls!(ReconcileContext);

impl ReconcileContext {
    pub(crate) fn new(reach: Arc<Reach>, rules: Arc<AccessRules>, queue: bool) -> Self {
        ReconcileContext {
            reach,
            rules,
            requeue_after: AtomicU64::new(u64::MAX),
            new_inputs: None,
            queue,
            writer: None,
            shard: None,
        }
    }

    /// A sharded queue controller's reconcile: the key's virtual shard and
    /// the fencing token this process holds it with (every write of this
    /// reconcile is refused once the token is stale). `None` unsharded.
    pub fn shard(&self) -> Option<(u32, i64)> {
        self.shard
    }

    /// The same context, writing as `writer` (the controller's name, in an
    /// allocation the store knows the shard fence of).
    pub(crate) fn writing_as(mut self, writer: Arc<str>, shard: (u32, i64)) -> Self {
        self.writer = Some(writer);
        self.shard = Some(shard);
        self
    }

    /// The controller's name (also its owner name and finalizer).
    pub fn name(&self) -> &str {
        self.rules.controller()
    }

    /// The controller's current inputs.
    pub fn inputs(&self) -> &[Input] {
        self.rules.inputs()
    }

    fn owner_arc(&self) -> Option<Arc<str>> {
        Some(self.writer.as_ref().unwrap_or(self.rules.controller()).clone())
    }

    fn read(&self) {
        Counters::bump(&self.reach.counters.reads);
    }

    /// Sends a write now; the future answers it, counting it when it
    /// changed something. (A plain function returning a small future: the
    /// request, 100 bytes, is not kept in the future of every caller.)
    fn write(
        &self,
        req: StateRequest,
    ) -> impl std::future::Future<Output = Result<StateReply, Error>> + '_ {
        // Say what was written only when someone listens (no cost otherwise):
        // a tracing subscriber, or a `log` logger when there is none.
        let listening =
            tracing::enabled!(tracing::Level::DEBUG) || log::log_enabled!(log::Level::Debug);
        let about = listening.then(|| (req.operation(), req.about()));
        let reply = self.reach.state.send(req);
        async move {
            let reply = reply.await;
            if !matches!(reply, Ok(StateReply::Unchanged(_))) && reply.is_ok() {
                Counters::bump(&self.reach.counters.writes);
            }
            if let Some((op, subject)) = about {
                match &reply {
                    Ok(StateReply::Unchanged(_)) => {
                        tracing::trace!("controller {}: {op} {subject}: unchanged", self.name());
                    }
                    Ok(_) => tracing::debug!("controller {}: {op} {subject}", self.name()),
                    Err(e) => {
                        tracing::debug!("controller {}: {op} {subject} failed: {e}", self.name())
                    }
                }
            }
            reply
        }
    }

    /// Reads a resource of an input or output type: an [`AnyResource`] for
    /// a plain [`Pointer`], a [`Resource<S>`] for a
    /// [`TypedPointer<S>`](crate::resource::TypedPointer).
    ///
    /// # Errors
    /// [`Error::AccessDenied`], [`Error::NotFound`], [`Error::InvalidInput`];
    /// [`Error::TypeMismatch`] (typed pointer, stored spec of another type).
    pub async fn get<P: Address + ?Sized>(&self, ptr: &P) -> Result<P::Resource, Error> {
        self.rules.check_get(ptr.pointer())?;
        self.read();
        self.reach.state.get(ptr).await
    }

    /// Lists a kind that is an input (without an id) or an output type, sorted by id.
    ///
    /// # Errors
    /// [`Error::AccessDenied`], [`Error::InvalidInput`].
    pub async fn list(&self, kind: &Kind, query: &LabelQuery) -> Result<Vec<AnyResource>, Error> {
        self.rules.check_list(kind)?;
        self.read();
        self.reach.state.list(kind, query).await
    }

    /// Lists a type in every namespace, sorted by (namespace, id): allowed
    /// when an input covers every namespace of the type
    /// ([`Input::all_namespaces`](crate::controller::Input::all_namespaces))
    /// or the type is an output. See
    /// [`State::list_all_namespaces`](crate::State::list_all_namespaces).
    ///
    /// # Errors
    /// [`Error::AccessDenied`], [`Error::InvalidInput`].
    pub async fn list_all_namespaces(
        &self,
        resource_type: &str,
        query: &LabelQuery,
    ) -> Result<Vec<AnyResource>, Error> {
        self.rules.check_list_all_namespaces(resource_type)?;
        self.read();
        self.reach.state.list_all_namespaces(resource_type, query).await
    }

    /// Creates an output resource, owned by this controller.
    ///
    /// # Errors
    /// [`Error::AccessDenied`] (not an output type, or the resource carries
    /// finalizers: a controller sets none through a write, see the
    /// [access rules](crate::controller#access-rules)), [`Error::AlreadyExists`],
    /// [`Error::InvalidInput`].
    pub async fn create(&self, resource: impl Into<AnyResource>) -> Result<AnyResource, Error> {
        let resource = resource.into();
        self.rules.check_write("create", resource.pointer())?;
        keep_finalizers(self.name(), "create", &Finalizers::new(), &resource)?;
        let req = StateRequest::create(resource, self.owner_arc());
        reply_resource(self.write(req).await?, "create")
    }

    /// Updates an output resource (carrying the version it was read at),
    /// expecting the stored one in `expected_phase`; [`update`](Self::update)
    /// expects it running.
    ///
    /// # Errors
    /// [`Error::AccessDenied`] (not an output type), then as
    /// [`State::update`], then [`Error::AccessDenied`] if the resource's
    /// finalizers differ from the stored ones (nothing is written).
    pub async fn update_with_phase(
        &self,
        resource: impl Into<AnyResource>,
        expected_phase: ExpectedPhase,
    ) -> Result<AnyResource, Error> {
        let resource = resource.into();
        self.rules.check_write("update", resource.pointer())?;
        let req = StateRequest::update(resource, self.owner_arc(), expected_phase, true);
        reply_resource(self.write(req).await?, "update")
    }

    /// The general read-modify-write of an output (see [`Access::modify_with`](crate::state::Access::modify_with)):
    /// [`modify`](Self::modify) with an explicit starting resource and
    /// expected phase.
    ///
    /// # Errors
    /// [`Error::AccessDenied`] (not an output type), then as
    /// [`State::modify`]; [`Error::AccessDenied`] if `f` (or `empty`, for a
    /// new resource) changes the finalizers (nothing is written).
    pub async fn modify_with<S, P, E, F>(
        &self,
        ptr: &P,
        empty: E,
        f: F,
        expected_phase: ExpectedPhase,
    ) -> Result<Resource<S>, Error>
    where
        S: Spec,
        P: PointerTo<S> + ?Sized,
        E: Fn() -> Resource<S> + Send + 'static,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        let ptr = ptr.pointer();
        self.rules.check_write("modify", ptr)?;
        let req = StateRequest::modify(ptr, self.owner_arc(), expected_phase, true, empty, f)?;
        reply_resource(self.write(req).await?, "modify")?.typed()
    }

    /// Tears down an output resource; returns whether it is ready to destroy.
    ///
    /// # Errors
    /// [`Error::AccessDenied`], [`Error::NotFound`], [`Error::OwnerConflict`].
    pub async fn teardown(&self, ptr: &Pointer) -> Result<bool, Error> {
        self.rules.check_write("teardown", ptr)?;
        let req = StateRequest::teardown(ptr, self.owner_arc());
        reply_ready(self.write(req).await?)
    }

    /// Destroys an output resource.
    ///
    /// # Errors
    /// [`Error::AccessDenied`], [`Error::NotFound`], [`Error::OwnerConflict`],
    /// [`Error::PendingFinalizers`].
    pub async fn destroy(&self, ptr: &Pointer) -> Result<(), Error> {
        self.rules.check_write("destroy", ptr)?;
        let req = StateRequest::destroy(ptr, self.owner_arc());
        reply_done(self.write(req).await?, "destroy")
    }

    /// Puts this controller's finalizer (its name) on a strong input, if that
    /// input is still running, and returns whether the controller now holds it.
    ///
    /// `false` is a normal outcome, not an error: the input was destroyed, or is
    /// tearing down, since the controller read it (inputs churn). Skip it: the
    /// change that did it triggers another reconcile, where the input shows up
    /// as tearing down (release what was made from it) or not at all.
    ///
    /// ```ignore
    /// if !cx.add_finalizer(input.pointer()).await? {
    ///     continue; // gone or going: nothing to build on
    /// }
    /// ```
    ///
    /// # Errors
    /// [`Error::AccessDenied`] (not a strong input); [`Error::InvalidInput`].
    pub async fn add_finalizer(&self, ptr: &Pointer) -> Result<bool, Error> {
        self.rules.check_finalizer("add_finalizer", ptr)?;
        let req = StateRequest::add_finalizer(ptr, self.name(), ExpectedPhase::Running);
        match self.write(req).await {
            Err(e) if e.is_not_found() || e.is_phase_conflict() => Ok(false),
            reply => reply_done(reply?, "add_finalizer").map(|()| true),
        }
    }

    /// Removes this controller's finalizer from a strong input. A resource that
    /// is already gone counts as success.
    ///
    /// # Errors
    /// [`Error::AccessDenied`].
    pub async fn remove_finalizer(&self, ptr: &Pointer) -> Result<(), Error> {
        self.rules.check_finalizer("remove_finalizer", ptr)?;
        let req = StateRequest::remove_finalizer(ptr, self.name());
        match self.write(req).await {
            Err(e) if e.is_not_found() => Ok(()),
            reply => reply_done(reply?, "remove_finalizer"),
        }
    }

    /// Asks for another reconcile after `delay` (once this one succeeded).
    /// The shortest request of a reconcile wins; a reconcile triggered earlier
    /// by a change cancels it.
    ///
    /// A zero `delay` asks for the next reconcile at once, without a timer:
    /// it is pending work, which [`Runtime::settled`](crate::Runtime::settled)
    /// waits for (a controller that always requeues at zero never settles).
    /// Any other delay arms a timer, which `settled` does not wait for and
    /// [`Runtime::idle`](crate::Runtime::idle) does.
    ///
    /// This is how a plain [`Controller`](super::Controller) asks, since its
    /// reconcile returns no outcome. A [`QueueController`](super::QueueController)
    /// says it in its result instead, with
    /// [`Outcome::RequeueAfter`](super::Outcome::RequeueAfter), as a kube-rs
    /// reconcile returns its `Action`. Both end in the same request: a queue
    /// controller's call here is honoured for the key it reconciles, and when
    /// both are used the shorter delay wins.
    pub fn requeue_after(&self, delay: Duration) {
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX - 1);
        self.requeue_after.fetch_min(nanos, Ordering::Relaxed);
    }

    fn requeued(&self) -> Option<Duration> {
        match self.requeue_after.load(Ordering::Relaxed) {
            u64::MAX => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }

    /// Replaces the controller's inputs. Reads and finalizer rights follow at
    /// once; subscriptions follow when this reconcile ends, and one more
    /// reconcile then runs so nothing that changed meanwhile is missed.
    ///
    /// # Errors
    /// [`RegistrationError::DuplicateInput`] and the other input rules; the
    /// inputs stay as they were.
    pub fn update_inputs(&mut self, inputs: Vec<Input>) -> Result<(), RegistrationError> {
        check_inputs(self.name(), &inputs, self.queue)?;
        self.rules = Arc::new(self.rules.with_inputs(inputs.clone()));
        self.new_inputs = Some(inputs);
        Ok(())
    }

    /// Records an Event about the resource at `regarding` as this
    /// controller (`reportingController` `cosi-runtime/<name>`), stored in
    /// the resource's namespace: the short form of
    /// [`recorder().event(..)`](Recorder::event). It never waits and never
    /// fails, and is not access-checked; a repeat counts into the same
    /// Event (see [`events`](crate::events) for the rules).
    ///
    /// ```
    /// use cosi_runtime::prelude::*;
    /// use cosi_runtime::events::EventType;
    /// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
    /// # #[spec(type = "Disks.storage.cosi.dev")]
    /// # struct Disk { size: u64 }
    /// struct DiskWatcher;
    /// impl Controller for DiskWatcher {
    ///     fn name(&self) -> &str { "DiskWatcher" }
    ///     fn inputs(&self) -> Vec<Input> { vec![Input::weak::<Disk>("storage")] }
    ///     fn outputs(&self) -> Vec<Output> { vec![] }
    ///     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
    ///         for disk in cx.list_typed::<Disk>("storage", &LabelQuery::all()).await? {
    ///             if disk.spec().size == 0 {
    ///                 cx.event(EventType::Warning, "EmptyDisk", "the disk has no blocks", disk.pointer());
    ///             }
    ///         }
    ///         // About the controller itself, in the namespace of controller Events:
    ///         cx.recorder().controller_event(EventType::Normal, "Scanned", "every disk scanned");
    ///         Ok(())
    ///     }
    /// }
    /// ```
    pub fn event<P: crate::resource::Address + ?Sized>(
        &self,
        event_type: EventType,
        reason: impl Into<String>,
        note: impl Into<String>,
        regarding: &P,
    ) {
        self.reach.events.event(event_type, reason, note, regarding);
    }

    /// This controller's Event [`Recorder`] (Events about objects or about
    /// the controller itself); a clone outlives the reconcile.
    pub fn recorder(&self) -> &Recorder {
        &self.reach.events
    }

    pub(crate) fn requeue_requested(&self) -> bool {
        self.requeued().is_some()
    }

    /// A context with the same state, rules and counters and nothing asked
    /// for yet: what a reconcile on another thread gets, or what stands in
    /// for the one it took.
    pub(crate) fn fork(&self) -> Self {
        let mut cx = ReconcileContext::new(self.reach.clone(), self.rules.clone(), self.queue);
        cx.writer = self.writer.clone();
        cx.shard = self.shard;
        cx
    }

    pub(crate) fn take_requeue(&self) -> Option<Duration> {
        let requeued = self.requeued();
        self.requeue_after.store(u64::MAX, Ordering::Relaxed);
        requeued
    }

    pub(crate) fn take_new_inputs(&mut self) -> Option<(Vec<Input>, Arc<AccessRules>)> {
        self.new_inputs.take().map(|i| (i, self.rules.clone()))
    }
}
