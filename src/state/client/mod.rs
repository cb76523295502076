//! [`State`]: the cloneable handle users (and the runtime) talk to the state through.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use actix::prelude::*;
use futures::Stream;
use futures::channel::mpsc::{UnboundedReceiver, unbounded};

use super::actor::{Close, StateActor, StateReply, StateRequest, WatchSink, WatchStats};
use super::cache::CacheView;
use super::claims::ClaimService;
use super::delivery::{Sink, WatchEvent};
use super::event::{Event, WatchId};
use super::inbox::Inbox;
#[cfg(feature = "redb")]
use super::open::Namespaces;
use super::open::StateBuilder;
use super::store::{ExpectedPhase, ModifyFn};
use super::watch::WatchTarget;
use crate::Error;
use crate::activity::Activity;
use crate::finalizer::{FinalizerCoordinator, TeardownAndDestroy};
use crate::resource::validate;
use crate::resource::{Address, AnyResource, Kind, LabelQuery, Pointer, PointerTo, Resource, Spec};

/// How many events a watch keeps in flight before it coalesces (see [`WatchEvent`]).
pub const DEFAULT_WATCH_WINDOW: usize = 1024;

/// Options of a kind watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchOptions {
    /// Deliver every existing match first (sorted by id), then
    /// [`Event::Bootstrapped`].
    pub bootstrap: bool,
    /// Flow-control window: events in flight before the backlog coalesces.
    pub window: usize,
    /// Deliver only the changes after this store revision (the
    /// [`WatchEvent::revision`] of the last event handled): no initial state,
    /// no bootstrap. [`Error::Compacted`] when the state no longer keeps
    /// them; bootstrap again then.
    pub resume_from: Option<u64>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions { bootstrap: false, window: DEFAULT_WATCH_WINDOW, resume_from: None }
    }
}

/// `true` or `false`: bootstrap or not, other options at their defaults.
impl From<bool> for WatchOptions {
    fn from(bootstrap: bool) -> Self {
        WatchOptions { bootstrap, ..WatchOptions::default() }
    }
}

impl From<&WatchOptions> for WatchOptions {
    fn from(options: &WatchOptions) -> Self {
        options.clone()
    }
}

impl WatchOptions {
    /// Options with bootstrap on.
    pub fn bootstrap() -> Self {
        WatchOptions { bootstrap: true, ..WatchOptions::default() }
    }

    /// Options that resume after `revision` (see [`resume_from`](WatchOptions::resume_from)).
    pub fn resume_from(revision: u64) -> Self {
        WatchOptions { resume_from: Some(revision), ..WatchOptions::default() }
    }

    /// These options with another window.
    #[must_use]
    pub fn with_window(mut self, window: usize) -> Self {
        self.window = window.max(1);
        self
    }
}

/// A cloneable handle to the state.
///
/// All operations go to one [`StateActor`](crate::dev::StateActor) that applies them one at a time;
/// `teardown_and_destroy` goes to the [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator). Owners are
/// controller names; users act as `None`.
///
/// ```
/// use cosi_runtime::State;
/// use cosi_runtime::resource::{Pointer, Resource, Spec};
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Mtu(u32);
/// # impl Spec for Mtu { const TYPE: &'static str = "Mtus.net.cosi.dev"; }
///
/// # actix::System::new().block_on(async {
/// let state = State::start();
/// state.create(Resource::new("net", "eth0", Mtu(1500)), None).await?;
/// let updated = state
///     .modify(&Pointer::of::<Mtu>("net", "eth0"), |r: &mut Resource<Mtu>| r.spec_mut().0 = 9000, None)
///     .await?;
/// assert_eq!(updated.version().get(), 2);
/// state.teardown_and_destroy(updated.pointer(), None).await?;
/// assert!(state.get(updated.pointer()).await.unwrap_err().is_not_found());
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct State {
    requests: Recipient<StateRequest>,
    coordinator: Option<Recipient<TeardownAndDestroy>>,
    activity: Activity,
    closer: Option<Recipient<Close>>,
    /// The claim service of a shared store, if the state has one.
    claims: Option<ClaimService>,
    /// The state actor's cache, read without a message while it allows;
    /// `None` for a handle that sends everything elsewhere (a probe).
    view: Option<CacheView>,
    /// The state actor's request queue (no actix message per request);
    /// `None` for a handle that sends everything elsewhere (a probe).
    inbox: Option<Inbox>,
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("coordinator", &self.coordinator.is_some())
            .finish_non_exhaustive()
    }
}

fn unexpected(reply: StateReply, op: &str) -> Error {
    Error::Unavailable {
        resource: format!("{op} (answered with {reply:?})"),
        service: "the state actor (it answered with an unexpected reply)",
    }
}

/// The resource a reply carries (`Resource`, or `Unchanged` for a no-op modify).
pub(crate) fn reply_resource(reply: StateReply, op: &str) -> Result<AnyResource, Error> {
    match reply {
        StateReply::Resource(r) | StateReply::Unchanged(Some(r)) => Ok(r),
        other => Err(unexpected(other, op)),
    }
}

/// A teardown's readiness.
pub(crate) fn reply_ready(reply: StateReply) -> Result<bool, Error> {
    match reply {
        StateReply::Ready(ready) => Ok(ready),
        other => Err(unexpected(other, "teardown")),
    }
}

/// A reply that carries nothing (`Done`, or `Unchanged` for a no-op finalizer edit).
pub(crate) fn reply_done(reply: StateReply, op: &str) -> Result<(), Error> {
    match reply {
        StateReply::Done | StateReply::Unchanged(None) => Ok(()),
        other => Err(unexpected(other, op)),
    }
}

fn owner_arc(owner: Option<&str>) -> Option<Arc<str>> {
    owner.map(Arc::from)
}

/// The modify function for spec type `S`: read current (or `empty()`), apply `f`.
pub(crate) fn typed_modify<S, E, F>(empty: E, f: F) -> ModifyFn
where
    S: Spec,
    E: Fn() -> Resource<S> + Send + 'static,
    F: Fn(&mut Resource<S>) + Send + 'static,
{
    Box::new(move |current| {
        let mut r = match current {
            Some(c) => c.typed::<S>()?,
            None => empty(),
        };
        f(&mut r);
        Ok(r.into_any())
    })
}

pub(crate) fn check_type<S: Spec>(ptr: &Pointer) -> Result<(), Error> {
    if ptr.resource_type() == S::TYPE {
        Ok(())
    } else {
        Err(Error::TypeMismatch {
            resource: ptr.clone(),
            expected: S::TYPE.to_owned(),
            actual: ptr.resource_type().to_owned(),
        })
    }
}

impl State {
    /// Starts an in-memory state (a [`StateActor`](crate::dev::StateActor) and a [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator))
    /// on the current arbiter.
    ///
    /// # Panics
    /// Outside a running actix `System` (under `#[tokio::main]`, say), with
    /// a message that says what to write instead.
    #[track_caller]
    pub fn start() -> State {
        State::start_actor(StateActor::new(), Activity::new(), None)
    }

    /// A [`StateBuilder`]: some namespaces on durable backends, the rest in memory.
    pub fn builder() -> StateBuilder {
        StateBuilder::new()
    }

    /// Opens a state that keeps `namespaces` durable in the file at `path`
    /// (created if missing) and everything else in memory; what the file
    /// holds is loaded first. The one-line form of
    /// `State::builder().durable(path, namespaces).open()`.
    ///
    /// # Errors
    /// [`Error::Storage`] if the file cannot be used (locked by another
    /// process, corrupt, of a newer format, in a read-only place).
    #[cfg(feature = "redb")]
    pub async fn open_durable(
        path: impl Into<std::path::PathBuf>,
        namespaces: impl Into<Namespaces>,
    ) -> Result<State, Error> {
        State::builder().durable(path, namespaces).open().await
    }

    /// The exclusive output types this process claims on a shared (etcd)
    /// state, and whether it holds each claim or stands by. Empty on a state
    /// that one process owns (memory, redb): there the supervisor's checks
    /// are enough.
    pub async fn claims(&self) -> Vec<super::ClaimStatus> {
        match &self.claims {
            Some(claims) => claims.status().await,
            None => Vec::new(),
        }
    }

    /// The service that claims exclusive outputs across the processes that
    /// share one of this state's stores (`None`: every store is this
    /// process's own). See [`ClaimService`].
    pub fn claim_service(&self) -> Option<&ClaimService> {
        self.claims.as_ref()
    }

    /// Claims `types` for `controller`; `notify` hears when it owns them and
    /// when it loses them. A no-op on a state that is not shared.
    pub(crate) fn claim_outputs(
        &self,
        controller: std::sync::Arc<str>,
        types: Vec<String>,
        notify: Recipient<super::claims::Ownership>,
    ) {
        if let Some(claims) = &self.claims {
            claims.claim(controller, types, notify);
        }
    }

    /// Gives up this process's claims for good (see [`Resign`](super::claims::Resign));
    /// resolves once the lease is revoked (or etcd did not answer in time).
    /// A no-op on a state that is not shared.
    pub(crate) async fn resign_claims(&self) {
        if let Some(claims) = &self.claims {
            claims.resign().await;
        }
    }

    pub(crate) fn start_actor(
        actor: StateActor,
        activity: Activity,
        claims: Option<ClaimService>,
    ) -> State {
        crate::execution::require_system();
        let view = Some(actor.store.view());
        let inbox = Some(actor.inbox.clone());
        let actor = actor.start();
        let closer = actor.clone().recipient();
        let bare = State {
            requests: actor.recipient(),
            coordinator: None,
            activity,
            closer: Some(closer),
            claims,
            view,
            inbox,
        };
        let coordinator = FinalizerCoordinator::new(bare.clone()).start();
        State { coordinator: Some(coordinator.recipient()), ..bare }
    }

    /// Commits what is staged, releases every backend (the state file and its
    /// lock), and stops the state actor; resolves once all that is done, so
    /// the same file can be opened again right after. Later requests through
    /// any handle of this state get [`Error::Unavailable`]. Closing a state
    /// that is already closed (say, by [`Runtime::stop`](crate::Runtime::stop))
    /// does nothing.
    ///
    /// # Errors
    /// [`Error::Unavailable`] for a handle with no state actor behind it
    /// ([`from_recipient`](State::from_recipient)); [`Error::Storage`] if the
    /// last commit fails.
    pub async fn close(&self) -> Result<(), Error> {
        let Some(closer) = &self.closer else {
            return Err(Error::Unavailable {
                resource: "the state".into(),
                service: "the state actor",
            });
        };
        // An actor that is gone has closed already.
        closer.send(Close).await.unwrap_or(Ok(()))
    }

    /// A handle that sends every request to `requests` (a probe in tests, or a
    /// state actor started elsewhere). It has no finalizer coordinator:
    /// [`teardown_and_destroy`](State::teardown_and_destroy) answers
    /// [`Error::Unavailable`].
    pub fn from_recipient(requests: Recipient<StateRequest>) -> State {
        State {
            requests,
            coordinator: None,
            activity: Activity::new(),
            closer: None,
            claims: None,
            view: None,
            inbox: None,
        }
    }

    pub(crate) fn requests(&self) -> &Recipient<StateRequest> {
        &self.requests
    }

    /// The same handle (activity, coordinator) sending requests elsewhere.
    pub(crate) fn redirect(&self, requests: Recipient<StateRequest>) -> State {
        State { requests, view: None, inbox: None, ..self.clone() }
    }

    pub(crate) fn activity(&self) -> &Activity {
        &self.activity
    }

    /// Marks work in progress on behalf of the runtime until the guard drops:
    /// [`Runtime::settled`](crate::Runtime::settled) waits for it. For feeders
    /// and tools that drive controllers from outside (a poller in the middle of
    /// a poll, say), so that tests can settle instead of sleeping.
    pub fn busy(&self) -> BusyGuard {
        BusyGuard(self.activity.guard())
    }

    /// Sends a raw request (the typed methods are built on this).
    ///
    /// # Errors
    /// Whatever the state answers; [`Error::Unavailable`] if it is not running.
    pub async fn request(&self, req: StateRequest) -> Result<StateReply, Error> {
        self.send(req).await
    }

    /// Sends `req` now; the returned [`Reply`] resolves to its answer.
    ///
    /// A small future (the request is already on its way), so that the
    /// futures awaiting state calls stay small: a reconcile's future is
    /// moved into place, and its size is copied with it.
    pub(crate) fn send(&self, req: StateRequest) -> Reply<'_> {
        let busy = self.activity.hold();
        let op = req.operation();
        let unavailable = |req: StateRequest| {
            Some(Err(Error::Unavailable { resource: req.about().to_string(), service: SERVICE }))
        };
        let pending = match &self.inbox {
            Some(inbox) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                match inbox.push(req, tx) {
                    // Out of tokio's cooperative budget: a reply is ready only
                    // after the state actor ran, so waiting for one cannot
                    // starve anyone, while a caller awaiting many replies at
                    // once (`join_all` over 1,024 creates) found every reply
                    // past its budget's 128th pending, and its task woken and
                    // polled once more for each. Measured: 10,000 such creates
                    // 9.0 -> 7.0 ms; the plain chain with live creates 62 -> 45 ms.
                    Ok(()) => Pending::Inbox(tokio::task::unconstrained(rx)),
                    Err(req) => Pending::Done(unavailable(req)),
                }
            }
            // Named from the request while it is still here: a stopped actor
            // is seen before sending.
            None if !self.requests.connected() => Pending::Done(unavailable(req)),
            None => Pending::Mailbox(Box::pin(tokio::task::unconstrained(self.requests.send(req)))),
        };
        Reply { pending, op, _busy: busy }
    }

    /// Sends `req` now; its answer's resource. (Plain functions returning
    /// small futures, like [`send`](State::send): an `async fn` would keep
    /// the 100-byte request in its future.)
    fn resource(&self, req: StateRequest) -> impl Future<Output = Result<AnyResource, Error>> + '_ {
        let op = req.operation();
        let reply = self.send(req);
        async move { reply_resource(reply.await?, op) }
    }

    /// A read-modify-write through an erased function: `modify` maps the
    /// stored resource (or `None`) to the desired one (for writers that hold
    /// resources of a type known only at run time, such as the cluster source).
    #[cfg(feature = "kubernetes")]
    pub(crate) fn modify_erased(
        &self,
        pointer: &Pointer,
        owner: Option<Arc<str>>,
        expected_phase: ExpectedPhase,
        modify: ModifyFn,
    ) -> impl Future<Output = Result<AnyResource, Error>> + '_ {
        self.resource(StateRequest::Modify {
            pointer: pointer.clone(),
            owner,
            expected_phase,
            modify,
        })
    }

    /// Sends `req` now; its answer, which carries nothing.
    fn done(&self, req: StateRequest) -> impl Future<Output = Result<(), Error>> + '_ {
        let op = req.operation();
        let reply = self.send(req);
        async move { reply_done(reply.await?, op) }
    }

    /// The resource at `ptr`: an [`AnyResource`] for a plain [`Pointer`], a
    /// [`Resource<S>`] for a [`TypedPointer<S>`](crate::resource::TypedPointer).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`]; [`Error::TypeMismatch`]
    /// (typed pointer, stored spec of another type).
    pub async fn get<P: Address + ?Sized>(&self, ptr: &P) -> Result<P::Resource, Error> {
        P::read(self.get_any(ptr.pointer()).await?)
    }

    /// A `Get`: from the cache when it may be read directly, else a request.
    async fn get_any(&self, ptr: &Pointer) -> Result<AnyResource, Error> {
        if let Some(view) = &self.view {
            validate::pointer(ptr)?;
            if let Some(found) = view.get(ptr) {
                return found.ok_or_else(|| Error::NotFound { resource: ptr.clone() });
            }
        }
        self.resource(StateRequest::Get { pointer: ptr.clone() }).await
    }

    /// The resource at `ptr` as spec type `S`.
    ///
    /// # Errors
    /// As [`get`](State::get), and [`Error::TypeMismatch`].
    pub async fn get_typed<S: Spec>(&self, ptr: &Pointer) -> Result<Resource<S>, Error> {
        self.get(ptr).await?.typed()
    }

    /// The resources of `kind` matching `query`, sorted by id.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn list(&self, kind: &Kind, query: &LabelQuery) -> Result<Vec<AnyResource>, Error> {
        if let Some(view) = &self.view {
            validate::kind(kind)?;
            if let Some(listed) = view.list(kind, query) {
                return Ok(listed);
            }
        }
        let req = StateRequest::List { kind: kind.clone(), query: query.clone() };
        match self.send(req).await? {
            StateReply::Resources(r) => Ok(r),
            other => Err(unexpected(other, "list")),
        }
    }

    /// The resources of `kind` matching `query`, sorted by id, and the store
    /// revision of that snapshot.
    ///
    /// The snapshot holds every change of `kind` up to the revision and none
    /// after it, so a watch resumed from the revision
    /// ([`WatchOptions::resume_from`]) delivers exactly the changes the list
    /// does not show: list-then-watch without a gap or a repeat, as a
    /// Kubernetes informer does it. Always answered by the state actor (a
    /// direct read of the cache has no revision to give).
    ///
    /// ```
    /// # use cosi_runtime::State;
    /// # use cosi_runtime::resource::{Resource, Spec};
    /// # use cosi_runtime::resource::{Kind, LabelQuery};
    /// # use cosi_runtime::state::WatchOptions;
    /// # #[actix::main]
    /// # async fn main() -> Result<(), cosi_runtime::Error> {
    /// # #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Motd(String);
    /// # impl Spec for Motd { const TYPE: &'static str = "Motds.example.dev"; }
    /// let state = State::start();
    /// state.create(Resource::new("default", "a", Motd("hi".into())).into_any(), None).await?;
    /// let kind = Kind::of::<Motd>("default");
    /// let (items, revision) = state.list_with_revision(&kind, &LabelQuery::all()).await?;
    /// assert_eq!((items.len(), revision), (1, 1));
    /// // Everything after the list, and nothing it already showed:
    /// let watch = state.watch_kind_stream(&kind, LabelQuery::all(), WatchOptions::resume_from(revision)).await?;
    /// # drop(watch);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn list_with_revision(
        &self,
        kind: &Kind,
        query: &LabelQuery,
    ) -> Result<(Vec<AnyResource>, u64), Error> {
        validate::kind(kind)?;
        let req = StateRequest::ListWithRevision { kind: kind.clone(), query: query.clone() };
        match self.send(req).await? {
            StateReply::Listed { resources, revision } => Ok((resources, revision)),
            other => Err(unexpected(other, "list_with_revision")),
        }
    }

    /// The resources of spec type `S` in `namespace` matching `query`, sorted by id.
    ///
    /// # Errors
    /// As [`list`](State::list), and [`Error::TypeMismatch`] naming the
    /// first resource that does not decode as `S` (use
    /// [`list_decoded`](State::list_decoded) to read the others).
    pub async fn list_typed<S: Spec>(
        &self,
        namespace: &str,
        query: &LabelQuery,
    ) -> Result<Vec<Resource<S>>, Error> {
        self.list(&Kind::of::<S>(namespace), query).await?.iter().map(AnyResource::typed).collect()
    }

    /// Creates `resource` owned by `owner`. The state sets version 1, the owner
    /// and the timestamps; returns the stored resource.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`]; [`Error::InvalidInput`].
    pub async fn create(
        &self,
        resource: impl Into<AnyResource>,
        owner: Option<&str>,
    ) -> Result<AnyResource, Error> {
        self.resource(StateRequest::create(resource.into(), owner_arc(owner))).await
    }

    /// Updates `resource`, which must carry the version it was read at, with
    /// `owner` and expecting the stored resource to be running.
    ///
    /// A resource read from the state also carries its incarnation's
    /// [`uid`](crate::resource::Metadata::uid): if the resource was destroyed
    /// and created again since, the update is an [`Error::VersionConflict`]
    /// even at the same version. A resource built from scratch, without a
    /// uid, is checked by its version only.
    ///
    /// # Errors
    /// In this order: [`Error::NotFound`], [`Error::OwnerConflict`],
    /// [`Error::VersionConflict`], [`Error::PhaseConflict`]; and [`Error::InvalidInput`].
    pub async fn update(
        &self,
        resource: impl Into<AnyResource>,
        owner: Option<&str>,
    ) -> Result<AnyResource, Error> {
        self.update_with_phase(resource, owner, ExpectedPhase::Running).await
    }

    /// [`update`](State::update) with another expected phase.
    ///
    /// # Errors
    /// As [`update`](State::update).
    pub async fn update_with_phase(
        &self,
        resource: impl Into<AnyResource>,
        owner: Option<&str>,
        expected_phase: ExpectedPhase,
    ) -> Result<AnyResource, Error> {
        self.resource(StateRequest::update(resource.into(), owner_arc(owner), expected_phase)).await
    }

    /// Creates or updates the resource at `ptr` by applying `f` to its current
    /// state (or to a new resource with `S::default()` if it is missing).
    ///
    /// `f` runs inside the state actor, atomically with the write, so there is
    /// never a version conflict to retry; keep it short and non-blocking. It is
    /// `Fn`: a backend shared with other processes re-runs it on fresh data when
    /// the stored resource changed under it. If the
    /// result equals the stored resource, nothing is written and no event is
    /// sent. If `f` panics, the panic resumes in the caller.
    ///
    /// # Errors
    /// [`Error::OwnerConflict`]; [`Error::PhaseConflict`] if the resource is
    /// tearing down; [`Error::TypeMismatch`]; [`Error::InvalidInput`].
    pub async fn modify<S, P, F>(
        &self,
        ptr: &P,
        f: F,
        owner: Option<&str>,
    ) -> Result<Resource<S>, Error>
    where
        S: Spec + Default,
        P: PointerTo<S> + ?Sized,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        let ptr = ptr.pointer();
        let at = ptr.clone();
        self.modify_with(
            ptr,
            move || Resource::at(at.clone(), S::default()),
            f,
            owner,
            ExpectedPhase::Running,
        )
        .await
    }

    /// [`modify`](State::modify) with an explicit starting resource for the
    /// missing case (for specs without `Default`) and an expected phase.
    ///
    /// # Errors
    /// As [`modify`](State::modify).
    pub async fn modify_with<S, P, E, F>(
        &self,
        ptr: &P,
        empty: E,
        f: F,
        owner: Option<&str>,
        expected_phase: ExpectedPhase,
    ) -> Result<Resource<S>, Error>
    where
        S: Spec,
        P: PointerTo<S> + ?Sized,
        E: Fn() -> Resource<S> + Send + 'static,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        let req = StateRequest::modify(ptr.pointer(), owner_arc(owner), expected_phase, empty, f)?;
        self.resource(req).await?.typed()
    }

    /// Destroys the resource at `ptr`. It need not be tearing down, but it must
    /// have no finalizers.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::OwnerConflict`]; [`Error::PendingFinalizers`].
    pub async fn destroy(&self, ptr: &Pointer, owner: Option<&str>) -> Result<(), Error> {
        self.done(StateRequest::destroy(ptr, owner_arc(owner))).await
    }

    /// Moves the resource at `ptr` to `TearingDown` (idempotent) and returns
    /// whether it is ready to destroy (no finalizers).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::OwnerConflict`].
    pub async fn teardown(&self, ptr: &Pointer, owner: Option<&str>) -> Result<bool, Error> {
        reply_ready(self.send(StateRequest::teardown(ptr, owner_arc(owner))).await?)
    }

    /// Adds `finalizer` to the resource at `ptr`, whatever its owner and phase.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`].
    pub async fn add_finalizer(&self, ptr: &Pointer, finalizer: &str) -> Result<(), Error> {
        self.done(StateRequest::add_finalizer(ptr, finalizer, ExpectedPhase::Any)).await
    }

    /// Removes `finalizer` from the resource at `ptr`, whatever its owner and phase.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`].
    pub async fn remove_finalizer(&self, ptr: &Pointer, finalizer: &str) -> Result<(), Error> {
        self.done(StateRequest::remove_finalizer(ptr, finalizer)).await
    }

    /// Tears the resource down, waits until its finalizers are gone, and destroys it.
    ///
    /// Served by the [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator); see its documentation for the
    /// lifecycle. A resource that is destroyed by someone else while this waits
    /// counts as success, so many concurrent calls for one resource all finish
    /// without error (or with `NotFound` if it was already gone when they started).
    ///
    /// # Errors
    /// [`Error::NotFound`] if it does not exist; [`Error::OwnerConflict`];
    /// [`Error::Unavailable`] if this handle has no coordinator.
    pub async fn teardown_and_destroy(
        &self,
        ptr: &Pointer,
        owner: Option<&str>,
    ) -> Result<(), Error> {
        let Some(coordinator) = &self.coordinator else {
            return Err(Error::Unavailable {
                resource: ptr.to_string(),
                service: "the finalizer coordinator",
            });
        };
        let msg = TeardownAndDestroy { pointer: ptr.clone(), owner: owner_arc(owner) };
        coordinator.send(msg).await.unwrap_or_else(|_| {
            Err(Error::Unavailable {
                resource: ptr.to_string(),
                service: "the finalizer coordinator",
            })
        })
    }

    pub(crate) async fn watch_sink(
        &self,
        target: WatchTarget,
        options: &WatchOptions,
        sink: WatchSink,
    ) -> Result<WatchId, Error> {
        let req = StateRequest::Watch {
            target,
            bootstrap: options.bootstrap,
            sink,
            window: options.window,
            resume_from: options.resume_from,
        };
        match self.send(req).await? {
            StateReply::Watching(id) => Ok(id),
            other => Err(unexpected(other, "watch")),
        }
    }

    /// Watches one resource: first its current state (`Created`, or `Destroyed`
    /// with a tombstone if it is missing), then every change, delivered to `recipient`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn watch(
        &self,
        ptr: &Pointer,
        recipient: Recipient<WatchEvent>,
    ) -> Result<WatchId, Error> {
        self.watch_sink(
            WatchTarget::Resource(ptr.clone()),
            &WatchOptions::default(),
            WatchSink::recipient(recipient),
        )
        .await
    }

    /// Watches every resource of `kind` matching `query`, delivered to
    /// `recipient`. `options` is a [`WatchOptions`], or just `true`/`false`
    /// for bootstrap: with bootstrap, existing matches come first as
    /// `Created` (sorted by id), then one `Bootstrapped`. With a non-empty
    /// query, an update that starts matching arrives as `Created` and one
    /// that stops matching as `Destroyed`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`]; [`Error::Compacted`] when resuming from a
    /// revision the state no longer keeps.
    pub async fn watch_kind(
        &self,
        kind: &Kind,
        query: LabelQuery,
        options: impl Into<WatchOptions>,
        recipient: Recipient<WatchEvent>,
    ) -> Result<WatchId, Error> {
        self.watch_sink(
            WatchTarget::Kind { kind: kind.clone(), query },
            &options.into(),
            WatchSink::recipient(recipient),
        )
        .await
    }

    async fn stream(
        &self,
        target: WatchTarget,
        options: &WatchOptions,
    ) -> Result<WatchStream, Error> {
        let (tx, rx) = unbounded();
        let sink = WatchSink { sink: Sink::Channel(tx), activity: None };
        let id = self.watch_sink(target, options, sink).await?;
        Ok(WatchStream {
            id,
            rx,
            revision: options.resume_from.unwrap_or(0),
            state: Some(self.requests.clone()),
        })
    }

    /// [`watch`](State::watch) as a [`Stream`] of [`Event`]s, for code that is not an actor.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn watch_stream(&self, ptr: &Pointer) -> Result<WatchStream, Error> {
        self.stream(WatchTarget::Resource(ptr.clone()), &WatchOptions::default()).await
    }

    /// [`watch_kind`](State::watch_kind) as a [`Stream`] of [`Event`]s.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn watch_kind_stream(
        &self,
        kind: &Kind,
        query: LabelQuery,
        options: impl Into<WatchOptions>,
    ) -> Result<WatchStream, Error> {
        self.stream(WatchTarget::Kind { kind: kind.clone(), query }, &options.into()).await
    }

    /// Ends a watch (a watch also ends by itself once its subscriber is gone).
    ///
    /// # Errors
    /// [`Error::Unavailable`].
    pub async fn unwatch(&self, id: WatchId) -> Result<(), Error> {
        self.done(StateRequest::Unwatch { id }).await
    }

    /// How many watches are registered on this state. A dropped
    /// [`WatchStream`] unregisters at once; an actor subscriber that stopped
    /// without [`unwatch`](State::unwatch) stays registered until the next
    /// change of its kind, or the next watch of its kind, prunes it.
    ///
    /// # Errors
    /// [`Error::Unavailable`].
    pub async fn watch_count(&self) -> Result<usize, Error> {
        match self.send(StateRequest::CountWatches).await? {
            StateReply::Count(n) => Ok(n),
            other => Err(unexpected(other, "count_watches")),
        }
    }

    /// Flow-control figures of a watch: events in flight and backlog entries.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if the watch has ended.
    pub async fn watch_stats(&self, id: WatchId) -> Result<WatchStats, Error> {
        match self.send(StateRequest::WatchStats { id }).await? {
            StateReply::Stats(s) => Ok(s),
            other => Err(unexpected(other, "watch_stats")),
        }
    }
}

/// Work in progress that [`Runtime::settled`](crate::Runtime::settled) waits
/// for; see [`State::busy`].
#[derive(Debug)]
pub struct BusyGuard(#[allow(dead_code)] crate::activity::ActivityGuard);

/// A watch as a [`Stream`] of [`Event`]s.
///
/// Taking an item from the stream returns its flow-control slot. Dropping the
/// stream ends the watch.
pub struct WatchStream {
    id: WatchId,
    rx: UnboundedReceiver<WatchEvent>,
    revision: u64,
    state: Option<Recipient<StateRequest>>,
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        // Unregister at once: a watch on a quiet kind would otherwise stay
        // until the next change of that kind.
        if let Some(state) = self.state.take() {
            state.do_send(StateRequest::Unwatch { id: self.id });
        }
    }
}

impl WatchStream {
    /// The watch id (for [`State::watch_stats`] or [`State::unwatch`]).
    pub fn id(&self) -> WatchId {
        self.id
    }

    /// The store revision this stream is caught up to: the
    /// [`WatchEvent::revision`] of the last event taken from it. Resume a new
    /// watch from here ([`WatchOptions::resume_from`]) after this one is dropped.
    pub fn revision(&self) -> u64 {
        self.revision
    }
}

impl fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream").field("id", &self.id).finish()
    }
}

impl Stream for WatchStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let polled = Pin::new(&mut self.rx).poll_next(cx);
        if let Poll::Ready(Some(msg)) = &polled {
            self.revision = self.revision.max(msg.revision());
        }
        polled.map(|m| m.map(WatchEvent::into_event))
    }
}

const SERVICE: &str = "the state actor";

/// An actix request's answer (a handle without an inbox: a probe, an interceptor).
type MailboxReply =
    Pin<Box<dyn Future<Output = Result<Result<StateReply, Error>, actix::MailboxError>> + Send>>;

/// Where a sent request's answer will come from.
enum Pending {
    /// The inbox's reply channel.
    Inbox(tokio::task::Unconstrained<tokio::sync::oneshot::Receiver<Result<StateReply, Error>>>),
    /// The actor's mailbox.
    Mailbox(MailboxReply),
    /// Known already (the state is stopped).
    Done(Option<Result<StateReply, Error>>),
}

/// The answer to a request [`State::send`] sent: a future that holds only
/// the reply channel and one unit of activity (so `settled()` waits for it).
pub(crate) struct Reply<'a> {
    pending: Pending,
    op: &'static str,
    _busy: crate::activity::ActivityHold<'a>,
}

impl Future for Reply<'_> {
    type Output = Result<StateReply, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = match &mut self.pending {
            Pending::Inbox(rx) => std::task::ready!(Pin::new(rx).poll(cx)).ok(),
            Pending::Mailbox(request) => std::task::ready!(request.as_mut().poll(cx)).ok(),
            Pending::Done(answer) => answer.take(),
        };
        Poll::Ready(match answer {
            Some(Ok(StateReply::ModifyPanicked(panic))) => std::panic::resume_unwind(panic),
            Some(answer) => answer,
            // It stopped while the request waited (or the answer was taken).
            None => Err(Error::Unavailable {
                resource: format!("a {} request", self.op),
                service: SERVICE,
            }),
        })
    }
}
