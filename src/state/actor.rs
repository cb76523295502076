//! [`StateActor`]: owns the [`Store`] and serializes every request to it.

use std::any::Any;
use std::cell::Cell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;

use actix::WeakRecipient;
use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;

use super::backend::{Backend, Precondition, Write, WriteOp};
use super::delivery::{Flush, Outbox, Sink, WatchEvent};
use super::event::{Event, WatchId};
use super::inbox::{Inbox, Queued, ReplyTx};
use super::store::{Change, ExpectedPhase, ModifyFn, Store};
use super::subscriptions::{Subscription, Watches};
use super::watch::WatchTarget;
use crate::Error;
use crate::activity::Activity;
use crate::resource::{
    AnyResource, Kind, LabelQuery, Pointer, Resource, Spec, Timestamp, validate,
};

/// Where a watch delivers, as carried by [`StateRequest::Watch`].
pub struct WatchSink {
    pub(crate) sink: Sink,
    /// Counted in `settled()` (runtime-internal subscribers only).
    pub(crate) activity: Option<Activity>,
}

impl WatchSink {
    /// Delivery to an actor.
    pub fn recipient(recipient: Recipient<WatchEvent>) -> Self {
        WatchSink { sink: Sink::Actor(recipient), activity: None }
    }
}

impl fmt::Debug for WatchSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.sink {
            Sink::Actor(_) => "WatchSink::Actor",
            Sink::Batch(_) => "WatchSink::Batch",
            Sink::Channel(_) => "WatchSink::Stream",
        })
    }
}

/// One request to the state actor.
///
/// [`State`](super::State) is the friendly way to send these; the enum is
/// public so a test can stand a probe in for the state actor and assert the
/// exact requests a controller makes.
/// Owners are the name of the controller acting, `None` for users.
#[derive(Message)]
#[rtype(result = "Result<StateReply, Error>")]
pub enum StateRequest {
    /// Read one resource.
    Get {
        /// Which.
        pointer: Pointer,
    },
    /// List a kind, sorted by id.
    List {
        /// Which kind.
        kind: Kind,
        /// Label filter.
        query: LabelQuery,
    },
    /// List a kind, sorted by id, with the store revision of the snapshot
    /// (see [`State::list_with_revision`](super::State::list_with_revision)).
    ListWithRevision {
        /// Which kind.
        kind: Kind,
        /// Label filter.
        query: LabelQuery,
    },
    /// Create a resource.
    Create {
        /// The resource.
        resource: AnyResource,
        /// Acting owner.
        owner: Option<Arc<str>>,
    },
    /// Update a resource.
    Update {
        /// The resource, carrying the version it was read at.
        resource: AnyResource,
        /// Acting owner.
        owner: Option<Arc<str>>,
        /// Phase the stored resource must be in.
        expected_phase: ExpectedPhase,
    },
    /// Create or update through a function; writes nothing if nothing changes.
    Modify {
        /// Which.
        pointer: Pointer,
        /// Acting owner.
        owner: Option<Arc<str>>,
        /// Phase the stored resource must be in.
        expected_phase: ExpectedPhase,
        /// Current (or `None`) → desired.
        modify: ModifyFn,
    },
    /// Destroy a resource.
    Destroy {
        /// Which.
        pointer: Pointer,
        /// Acting owner.
        owner: Option<Arc<str>>,
    },
    /// Move a resource to `TearingDown`.
    Teardown {
        /// Which.
        pointer: Pointer,
        /// Acting owner.
        owner: Option<Arc<str>>,
    },
    /// Add a finalizer.
    AddFinalizer {
        /// Which.
        pointer: Pointer,
        /// The finalizer.
        finalizer: String,
        /// The phase the resource must be in ([`ExpectedPhase::Any`] for users;
        /// controllers hold inputs only while they run).
        expected_phase: ExpectedPhase,
    },
    /// Remove a finalizer.
    RemoveFinalizer {
        /// Which.
        pointer: Pointer,
        /// The finalizer.
        finalizer: String,
    },
    /// Start a watch.
    Watch {
        /// What to watch.
        target: WatchTarget,
        /// For a kind watch: deliver existing resources first, then `Bootstrapped`.
        bootstrap: bool,
        /// Where to deliver.
        sink: WatchSink,
        /// Flow-control window (events in flight).
        window: usize,
        /// Deliver only the changes after this store revision (no initial
        /// state, no bootstrap).
        resume_from: Option<u64>,
    },
    /// Stop a watch.
    Unwatch {
        /// Which.
        id: WatchId,
    },
    /// Flow-control figures of a watch.
    WatchStats {
        /// Which.
        id: WatchId,
    },
    /// How many watches are live.
    CountWatches,
}

/// The write requests, built in one place for [`State`](super::State) and
/// for a controller's [`ReconcileContext`](crate::controller::ReconcileContext)
/// (which adds its access checks, its owner and its write count).
impl StateRequest {
    pub(crate) fn create(resource: AnyResource, owner: Option<Arc<str>>) -> Self {
        StateRequest::Create { resource, owner }
    }

    pub(crate) fn update(
        resource: AnyResource,
        owner: Option<Arc<str>>,
        expected_phase: ExpectedPhase,
    ) -> Self {
        StateRequest::Update { resource, owner, expected_phase }
    }

    /// A typed modify: `f` applied to the stored resource as `S`, or to
    /// `empty()` when there is none.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when `ptr` is not of type `S`.
    pub(crate) fn modify<S, E, F>(
        ptr: &Pointer,
        owner: Option<Arc<str>>,
        expected_phase: ExpectedPhase,
        empty: E,
        f: F,
    ) -> Result<Self, Error>
    where
        S: Spec,
        E: Fn() -> Resource<S> + Send + 'static,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        super::client::check_type::<S>(ptr)?;
        Ok(StateRequest::Modify {
            pointer: ptr.clone(),
            owner,
            expected_phase,
            modify: super::client::typed_modify(empty, f),
        })
    }

    pub(crate) fn destroy(ptr: &Pointer, owner: Option<Arc<str>>) -> Self {
        StateRequest::Destroy { pointer: ptr.clone(), owner }
    }

    pub(crate) fn teardown(ptr: &Pointer, owner: Option<Arc<str>>) -> Self {
        StateRequest::Teardown { pointer: ptr.clone(), owner }
    }

    pub(crate) fn add_finalizer(
        ptr: &Pointer,
        finalizer: &str,
        expected_phase: ExpectedPhase,
    ) -> Self {
        StateRequest::AddFinalizer {
            pointer: ptr.clone(),
            finalizer: finalizer.to_owned(),
            expected_phase,
        }
    }

    pub(crate) fn remove_finalizer(ptr: &Pointer, finalizer: &str) -> Self {
        StateRequest::RemoveFinalizer { pointer: ptr.clone(), finalizer: finalizer.to_owned() }
    }
}

impl StateRequest {
    /// The operation's name (`get`, `list`, `create`, ...).
    pub fn operation(&self) -> &'static str {
        match self {
            StateRequest::Get { .. } => "get",
            StateRequest::List { .. } => "list",
            StateRequest::ListWithRevision { .. } => "list_with_revision",
            StateRequest::Create { .. } => "create",
            StateRequest::Update { .. } => "update",
            StateRequest::Modify { .. } => "modify",
            StateRequest::Destroy { .. } => "destroy",
            StateRequest::Teardown { .. } => "teardown",
            StateRequest::AddFinalizer { .. } => "add_finalizer",
            StateRequest::RemoveFinalizer { .. } => "remove_finalizer",
            StateRequest::Watch { .. } => "watch",
            StateRequest::Unwatch { .. } => "unwatch",
            StateRequest::WatchStats { .. } => "watch_stats",
            StateRequest::CountWatches => "count_watches",
        }
    }

    /// Whether the request may change stored resources.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            StateRequest::Create { .. }
                | StateRequest::Update { .. }
                | StateRequest::Modify { .. }
                | StateRequest::Destroy { .. }
                | StateRequest::Teardown { .. }
                | StateRequest::AddFinalizer { .. }
                | StateRequest::RemoveFinalizer { .. }
        )
    }

    /// The resource (or kind) the request is about, as text.
    pub fn subject(&self) -> String {
        self.about().to_string()
    }

    /// What the request is about, cheaply (no formatting until displayed).
    pub fn about(&self) -> Subject {
        match self {
            StateRequest::Get { pointer }
            | StateRequest::Modify { pointer, .. }
            | StateRequest::Destroy { pointer, .. }
            | StateRequest::Teardown { pointer, .. }
            | StateRequest::AddFinalizer { pointer, .. }
            | StateRequest::RemoveFinalizer { pointer, .. } => Subject::Resource(pointer.clone()),
            StateRequest::List { kind, .. } | StateRequest::ListWithRevision { kind, .. } => {
                Subject::Kind(kind.clone())
            }
            StateRequest::Create { resource, .. } | StateRequest::Update { resource, .. } => {
                Subject::Resource(resource.pointer().clone())
            }
            StateRequest::Watch { target, .. } => match target {
                WatchTarget::Resource(p) => Subject::Resource(p.clone()),
                WatchTarget::Kind { kind, .. } => Subject::Kind(kind.clone()),
            },
            StateRequest::Unwatch { id } | StateRequest::WatchStats { id } => Subject::Watch(*id),
            StateRequest::CountWatches => Subject::State,
        }
    }
}

/// What a [`StateRequest`] is about: a resource, a kind or a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// One resource.
    Resource(Pointer),
    /// A kind.
    Kind(Kind),
    /// A watch.
    Watch(WatchId),
    /// The state as a whole (`CountWatches`).
    State,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Resource(p) => fmt::Display::fmt(p, f),
            Subject::Kind(k) => fmt::Display::fmt(k, f),
            Subject::Watch(id) => fmt::Display::fmt(id, f),
            Subject::State => f.write_str("the state"),
        }
    }
}

impl fmt::Debug for StateRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct(self.operation());
        d.field("subject", &self.subject());
        match self {
            StateRequest::Create { owner, .. }
            | StateRequest::Update { owner, .. }
            | StateRequest::Modify { owner, .. }
            | StateRequest::Destroy { owner, .. }
            | StateRequest::Teardown { owner, .. } => {
                d.field("owner", owner);
            }
            StateRequest::AddFinalizer { finalizer, .. }
            | StateRequest::RemoveFinalizer { finalizer, .. } => {
                d.field("finalizer", finalizer);
            }
            StateRequest::List { query, .. } | StateRequest::ListWithRevision { query, .. } => {
                d.field("query", &format_args!("{query}"));
            }
            _ => {}
        }
        d.finish()
    }
}

/// The successful answer to a [`StateRequest`].
pub enum StateReply {
    /// `Get`, `Create`, `Update`, `Modify`: the resource as stored.
    Resource(AnyResource),
    /// `List`.
    Resources(Vec<AnyResource>),
    /// `ListWithRevision`: the resources and the store revision they were read at.
    Listed {
        /// The resources, sorted by id.
        resources: Vec<AnyResource>,
        /// The store revision of the snapshot.
        revision: u64,
    },
    /// `Teardown`: whether the resource is ready to destroy.
    Ready(bool),
    /// `Destroy`, `AddFinalizer`, `RemoveFinalizer`, `Unwatch`.
    Done,
    /// `Modify`, `AddFinalizer`, `RemoveFinalizer` that changed nothing (no
    /// write, no event): the stored resource for a modify.
    Unchanged(Option<AnyResource>),
    /// `Watch`.
    Watching(WatchId),
    /// `WatchStats`.
    Stats(WatchStats),
    /// `CountWatches`.
    Count(usize),
    /// The modify function panicked; the caller re-raises the panic in its own task.
    ModifyPanicked(Box<dyn Any + Send>),
}

impl fmt::Debug for StateReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateReply::Resource(r) => f.debug_tuple("Resource").field(r).finish(),
            StateReply::Resources(r) => f.debug_tuple("Resources").field(&r.len()).finish(),
            StateReply::Listed { resources, revision } => f
                .debug_struct("Listed")
                .field("resources", &resources.len())
                .field("revision", revision)
                .finish(),
            StateReply::Ready(b) => f.debug_tuple("Ready").field(b).finish(),
            StateReply::Done => f.write_str("Done"),
            StateReply::Unchanged(r) => f.debug_tuple("Unchanged").field(r).finish(),
            StateReply::Watching(id) => f.debug_tuple("Watching").field(id).finish(),
            StateReply::Stats(s) => f.debug_tuple("Stats").field(s).finish(),
            StateReply::Count(n) => f.debug_tuple("Count").field(n).finish(),
            StateReply::ModifyPanicked(_) => f.write_str("ModifyPanicked"),
        }
    }
}

/// Flow-control figures of one watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchStats {
    /// Events delivered and not yet dropped by the subscriber (at most the window).
    pub in_flight: usize,
    /// Coalesced backlog entries waiting for room (at most one per resource).
    pub backlog: usize,
}

/// Which namespaces go to which backend; the rest stay in memory only.
#[derive(Default)]
pub(crate) struct Routes {
    by_namespace: HashMap<String, usize>,
    everything: Option<usize>,
}

impl Routes {
    /// Sends the namespaces of `namespaces` (or all of them) to backend `index`.
    pub(crate) fn add(&mut self, namespaces: &super::Namespaces, index: usize) {
        match namespaces {
            super::Namespaces::All => self.everything = Some(index),
            super::Namespaces::Only(list) => {
                for ns in list {
                    self.by_namespace.insert(ns.clone(), index);
                }
            }
        }
    }

    /// The backend of `namespace`, `None` for memory.
    pub(crate) fn route(&self, namespace: &str) -> Option<usize> {
        if self.by_namespace.is_empty() {
            return self.everything;
        }
        self.by_namespace.get(namespace).copied().or(self.everything)
    }

    fn is_empty(&self) -> bool {
        self.by_namespace.is_empty() && self.everything.is_none()
    }
}

/// Where a deferred reply goes: filled with the caller's channel by actix
/// right after the handler returns.
pub(crate) type ReplySlot = Rc<Cell<Option<OneshotSender<Result<StateReply, Error>>>>>;

pub(crate) fn answer(slot: &ReplySlot, reply: Result<StateReply, Error>) {
    if let Some(tx) = slot.take() {
        let _ = tx.send(reply);
    }
}

/// The answer of the state actor to one [`StateRequest`]: now, or once the
/// batch that the request's write joined is committed.
#[derive(Debug)]
pub struct StateResponse(Response);

pub(crate) enum Response {
    Now(Result<StateReply, Error>),
    Later(ReplySlot),
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Response::Now(r) => f.debug_tuple("Now").field(r).finish(),
            Response::Later(_) => f.write_str("Later"),
        }
    }
}

impl MessageResponse<StateActor, StateRequest> for StateResponse {
    fn handle(
        self,
        _: &mut Context<StateActor>,
        tx: Option<OneshotSender<Result<StateReply, Error>>>,
    ) {
        match self.0 {
            Response::Now(reply) => {
                if let Some(tx) = tx {
                    let _ = tx.send(reply);
                }
            }
            Response::Later(slot) => slot.set(tx),
        }
    }
}

/// Writes staged in the cache, waiting for (or in) their commit.
#[derive(Default)]
struct Batch {
    /// Each write: the change, its revision, its backend.
    changes: Vec<(Change, u64, usize)>,
    /// Callers waiting for the batch: their resource and what to answer on success.
    waiting: Vec<(ReplySlot, Subject, Result<StateReply, Error>)>,
}

/// Asks the state actor to commit what it staged (sent to itself, so it runs
/// after the mailbox is drained: one batch per drain).
#[derive(Message)]
#[rtype(result = "()")]
struct CommitStaged;

/// Closes the state: commits what is staged, releases every backend (files,
/// locks, threads), then stops the actor. Later requests get
/// [`Error::Unavailable`].
#[derive(Message, Debug)]
#[rtype(result = "Result<(), Error>")]
pub struct Close;

/// The actor that owns the [`Store`] and the watches.
///
/// Every request is a message handled to completion before the next, so the
/// store has exactly one writer and watchers see changes in the order they
/// were applied. Writes to namespaces routed to a durable
/// [`Backend`] are staged and committed as one batch per mailbox drain; see
/// [`backend`](super::backend) for the commit contract.
pub struct StateActor {
    pub(crate) store: Store,
    pub(crate) watches: Watches,
    flush: Option<WeakRecipient<Flush>>,
    routes: Routes,
    backends: Vec<Box<dyn Backend>>,
    /// Staged, not yet sent to a backend.
    staged: Batch,
    /// Whether a batch is on its way to a backend.
    committing: bool,
    /// Kinds with staged or committing writes: reads of them wait.
    dirty: HashSet<Kind>,
    /// Requests that wait for the batch in flight.
    parked: VecDeque<(StateRequest, ReplySlot)>,
    commit_scheduled: bool,
    /// Replies to the requests of this pass, held until its batched events
    /// are sent (events reach their watchers before the writer hears back).
    held: Vec<(ReplyTx, Result<StateReply, Error>)>,
    /// The requests sent through [`State`](super::State) handles.
    pub(crate) inbox: Inbox,
    /// The time of this pass: its writes share one clock read.
    pass_time: Option<Timestamp>,
    closing: Option<ReplySlotClose>,
    /// An etcd state: every namespace there, the cache fed by its change feed.
    #[cfg(feature = "etcd")]
    pub(crate) shared: Option<Box<super::etcd::shared::Shared>>,
}

type ReplySlotClose = Rc<Cell<Option<OneshotSender<Result<(), Error>>>>>;

impl Default for StateActor {
    fn default() -> Self {
        StateActor::new()
    }
}

impl StateActor {
    /// A state actor over an empty in-memory store.
    pub fn new() -> Self {
        StateActor {
            store: Store::new(),
            watches: Watches::default(),
            flush: None,
            routes: Routes::default(),
            backends: Vec::new(),
            staged: Batch::default(),
            committing: false,
            dirty: HashSet::new(),
            parked: VecDeque::new(),
            commit_scheduled: false,
            held: Vec::new(),
            inbox: Inbox::default(),
            pass_time: None,
            closing: None,
            #[cfg(feature = "etcd")]
            shared: None,
        }
    }

    /// A state actor over `store`, with durable backends and their routes,
    /// keeping `history` changes for watches that resume.
    pub(crate) fn with_parts(
        store: Store,
        routes: Routes,
        backends: Vec<Box<dyn Backend>>,
        history: usize,
    ) -> Self {
        let mut watches = Watches::with_history(history);
        watches.compacted_up_to(store.revision());
        StateActor { store, watches, routes, backends, ..StateActor::new() }
    }

    fn watch(
        &mut self,
        target: WatchTarget,
        bootstrap: bool,
        sink: WatchSink,
        window: usize,
        resume_from: Option<u64>,
    ) -> Result<WatchId, Error> {
        match &target {
            WatchTarget::Resource(p) => validate::pointer(p)?,
            WatchTarget::Kind { kind, .. } => validate::kind(kind)?,
        }
        let revision = self.store.revision();
        let missed = match resume_from {
            Some(_) if bootstrap => {
                return Err(Error::InvalidInput {
                    resource: target.kind().to_string(),
                    reason: "a watch either bootstraps or resumes from a revision, not both".into(),
                });
            }
            Some(from) => Some(self.watches.missed(&target, from, revision)?),
            None => None,
        };
        let id = self.watches.next_id();
        let mut outbox = Outbox::new(id, sink.sink, window, self.flush.clone(), sink.activity);
        match (&target, missed) {
            (_, Some(missed)) => {
                for (event, rev) in missed {
                    outbox.publish(event, rev);
                }
            }
            (WatchTarget::Resource(ptr), None) => outbox.publish(
                match self.store.get(ptr) {
                    Ok(r) => Event::Created(r),
                    Err(_) => Event::Destroyed(AnyResource::tombstone(ptr.clone())),
                },
                revision,
            ),
            (WatchTarget::Kind { kind, query }, None) if bootstrap => {
                self.store.for_each_match(kind, query, |r| {
                    outbox.publish(Event::Created(r.clone()), revision)
                });
                outbox.publish(Event::Bootstrapped(kind.clone()), revision);
            }
            (WatchTarget::Kind { .. }, None) => {}
        }
        // The initial events come before the reply that names the watch.
        outbox.send_pending();
        self.watches.add(Subscription { id, target, outbox });
        Ok(id)
    }

    /// The backend a request goes to (`None`: memory), and the kind it reads.
    fn route_of(&self, req: &StateRequest) -> (Option<usize>, Option<Kind>) {
        if self.routes.is_empty() {
            return (None, None);
        }
        let kind = match req.about() {
            Subject::Resource(p) => p.kind().clone(),
            Subject::Kind(k) => k,
            Subject::Watch(_) | Subject::State => return (None, None),
        };
        (self.routes.route(kind.namespace()), Some(kind))
    }

    /// A state actor over an etcd state whose cache holds `store`.
    #[cfg(feature = "etcd")]
    pub(crate) fn with_shared(
        store: Store,
        shared: super::etcd::shared::Shared,
        history: usize,
    ) -> Self {
        let mut actor = StateActor::with_parts(store, Routes::default(), Vec::new(), history);
        actor.shared = Some(Box::new(shared));
        actor.refresh_view();
        actor
    }

    /// Serves `req` now, stages it, or parks it until the batch in flight is done.
    fn dispatch(
        &mut self,
        req: StateRequest,
        ctx: &mut Context<Self>,
        slot: Option<ReplySlot>,
    ) -> Response {
        #[cfg(feature = "etcd")]
        if self.shared.is_some() {
            return self.dispatch_shared(req, ctx, slot);
        }
        let (route, kind) = self.route_of(&req);
        let Some(backend) = route else {
            return Response::Now(self.serve(req));
        };
        let dirty = kind.as_ref().is_some_and(|k| self.dirty.contains(k));
        let must_wait = !self.parked.is_empty()
            || (req.is_write() && self.committing)
            || (!req.is_write() && dirty);
        if must_wait {
            let slot = slot.unwrap_or_default();
            self.parked.push_back((req, slot.clone()));
            return Response::Later(slot);
        }
        if !req.is_write() {
            return Response::Now(self.serve(req));
        }
        // Formatted only if the commit fails.
        let about = req.about();
        // Readers outside the actor must not see a write before it is
        // committed: they ask the actor until the batch is done.
        self.store.set_readable(false);
        let now = self.now();
        let (reply, change) = match apply(&mut self.store, req, now) {
            Ok(applied) => applied,
            Err(other) => (self.serve(other), None),
        };
        let Some(change) = change else {
            if !dirty {
                self.refresh_view();
                return Response::Now(reply);
            }
            // Computed on staged data: it shares the batch's fate.
            let slot = slot.unwrap_or_default();
            self.staged.waiting.push((slot.clone(), about, reply));
            return Response::Later(slot);
        };
        if let Some(k) = kind {
            self.dirty.insert(k);
        }
        self.staged.changes.push((change, self.store.revision(), backend));
        let slot = slot.unwrap_or_default();
        self.staged.waiting.push((slot.clone(), about, reply));
        if !self.commit_scheduled {
            self.commit_scheduled = true;
            ctx.notify(CommitStaged);
        }
        Response::Later(slot)
    }

    /// Serves a request at once (memory namespaces, reads, watches).
    pub(crate) fn serve(&mut self, req: StateRequest) -> Result<StateReply, Error> {
        let now = self.now();
        let req = match apply(&mut self.store, req, now) {
            Ok((reply, change)) => {
                if let Some(change) = change {
                    self.watches.publish(&change, self.store.revision());
                }
                return reply;
            }
            Err(watch_request) => watch_request,
        };
        match req {
            StateRequest::Watch { target, bootstrap, sink, window, resume_from } => {
                self.watch(target, bootstrap, sink, window, resume_from).map(StateReply::Watching)
            }
            StateRequest::Unwatch { id } => {
                self.watches.remove(id);
                Ok(StateReply::Done)
            }
            StateRequest::CountWatches => Ok(StateReply::Count(self.watches.len())),
            StateRequest::WatchStats { id } => match self.watches.get_mut(id) {
                Some(sub) => {
                    let (in_flight, backlog) = sub.outbox.stats();
                    Ok(StateReply::Stats(WatchStats { in_flight, backlog }))
                }
                None => Err(Error::InvalidInput {
                    resource: id.to_string(),
                    reason: "no such watch (it ended, or its subscriber went away)".into(),
                }),
            },
            other => Err(Error::InvalidInput {
                resource: other.subject(),
                reason: "not a watch request".into(),
            }),
        }
    }

    /// Sends the staged batch to its backends (one commit per backend).
    fn commit(&mut self, ctx: &mut Context<Self>) {
        self.commit_scheduled = false;
        let batch = std::mem::take(&mut self.staged);
        if batch.changes.is_empty() && batch.waiting.is_empty() {
            self.close_if_idle(ctx);
            return;
        }
        let mut per_backend: Vec<Vec<Write>> =
            (0..self.backends.len()).map(|_| Vec::new()).collect();
        for (change, revision, backend) in &batch.changes {
            per_backend[*backend].push(write_of(change, *revision));
        }
        let commits: Vec<_> = per_backend
            .into_iter()
            .enumerate()
            .filter(|(_, writes)| !writes.is_empty())
            .map(|(i, writes)| self.backends[i].commit(writes))
            .collect();
        self.committing = true;
        let done = futures::future::join_all(commits);
        ctx.spawn(done.into_actor(self).map(move |results, act, ctx| {
            let result = results.into_iter().find_map(Result::err).map_or(Ok(()), Err);
            act.finish(batch, result, ctx);
        }));
    }

    /// Lets readers outside the actor read the cache when it holds nothing
    /// uncommitted and the state is open (see [`CacheView`](super::cache::CacheView)).
    fn refresh_view(&self) {
        #[cfg(feature = "etcd")]
        if self.shared.is_some() {
            // Its writes are applied to the cache and undone within one
            // request (the feed applies them): readers always ask the actor.
            self.store.set_readable(false);
            return;
        }
        self.store.set_readable(self.dirty.is_empty() && self.closing.is_none());
    }

    /// Publishes and answers a committed batch, or rolls a failed one back;
    /// then serves what waited for it.
    fn finish(&mut self, batch: Batch, result: Result<(), Error>, ctx: &mut Context<Self>) {
        self.committing = false;
        self.dirty.clear();
        match result {
            Ok(()) => {
                for (change, revision, _) in &batch.changes {
                    self.watches.publish(change, *revision);
                }
                self.send_pending();
                for (slot, _, reply) in batch.waiting {
                    answer(&slot, reply);
                }
            }
            Err(e) => {
                let (failure, reason) = match &e {
                    Error::Storage { failure, reason, .. } => (*failure, reason.clone()),
                    other => (crate::StorageFailure::Io, other.to_string()),
                };
                tracing::error!(
                    "state: a commit of {} writes failed, rolled back: {e}",
                    batch.changes.len()
                );
                self.store.rollback(batch.changes.iter().map(|(c, _, _)| c));
                for (slot, resource, _) in batch.waiting {
                    let reason = reason.clone();
                    let resource = resource.to_string();
                    answer(&slot, Err(Error::Storage { resource, failure, reason }));
                }
            }
        }
        self.refresh_view();
        for (req, slot) in std::mem::take(&mut self.parked) {
            if let Response::Now(reply) = self.dispatch(req, ctx, Some(slot.clone()))
                && let Some(tx) = slot.take()
            {
                self.held.push((tx, reply));
            }
        }
        // The parked requests served now are a pass: their events, then their replies.
        self.send_pending();
        self.close_if_idle(ctx);
    }

    /// The time of this pass (one clock read for all its writes).
    fn now(&mut self) -> Timestamp {
        *self.pass_time.get_or_insert_with(Timestamp::now)
    }

    /// Ends a pass: sends the batched events, then the replies held behind them.
    pub(crate) fn send_pending(&mut self) {
        self.pass_time = None;
        self.watches.send_pending();
        // Drained in place: the list keeps its capacity for the next pass.
        for (tx, reply) in self.held.drain(..) {
            let _ = tx.send(reply);
        }
    }

    /// Handles the requests one drain of the inbox took, as one pass: each
    /// is served (or staged, or parked) in order, then the pass's events go
    /// out, then the replies. Stops early if a request made the actor wait
    /// (it is closing): the rest go back to the inbox.
    fn handle_pass(&mut self, batch: &mut Vec<Queued>, ctx: &mut Context<Self>) {
        let mut requests = batch.drain(..);
        for (req, tx) in requests.by_ref() {
            match self.dispatch(req, ctx, None) {
                Response::Now(reply) => self.held.push((tx, reply)),
                Response::Later(slot) => slot.set(Some(tx)),
            }
            if ctx.waiting() {
                break;
            }
        }
        if requests.len() > 0 {
            self.inbox.put_back(requests);
        }
        self.send_pending();
    }

    pub(crate) fn close_if_idle(&mut self, ctx: &mut Context<Self>) {
        if self.committing || self.commit_scheduled || !self.parked.is_empty() {
            return;
        }
        #[cfg(feature = "etcd")]
        if self.shared.as_ref().is_some_and(|s| !s.is_idle()) {
            return;
        }
        let Some(slot) = self.closing.take() else {
            return;
        };
        // The actor stops before its spawned items run again.
        self.send_pending();
        #[allow(unused_mut)]
        let mut closes: Vec<_> = self.backends.iter_mut().map(|b| b.close()).collect();
        #[cfg(feature = "etcd")]
        if let Some(shared) = self.shared.as_mut() {
            closes.push(Box::pin(shared.stop()));
        }
        ctx.wait(futures::future::join_all(closes).into_actor(self).map(move |_, _, ctx| {
            if let Some(tx) = slot.take() {
                let _ = tx.send(Ok(()));
            }
            ctx.stop();
        }));
    }
}

/// The backend write that makes `change` durable.
pub(crate) fn write_of(change: &Change, revision: u64) -> Write {
    let (pointer, precondition, op) = match change {
        Change::Created(r) => (r.pointer(), Precondition::Absent, WriteOp::Put(r.clone())),
        Change::Updated { old, new } => (
            new.pointer(),
            Precondition::Revision(old.metadata().revision()),
            WriteOp::Put(new.clone()),
        ),
        Change::Destroyed(r) => {
            (r.pointer(), Precondition::Revision(r.metadata().revision()), WriteOp::Delete)
        }
    };
    Write { pointer: pointer.clone(), precondition, op, revision }
}

/// What a store request produced: the reply, and the change to publish.
pub(crate) type Applied = (Result<StateReply, Error>, Option<Change>);

fn written(r: Result<(AnyResource, Change), Error>) -> Applied {
    match r {
        Ok((resource, change)) => (Ok(StateReply::Resource(resource)), Some(change)),
        Err(e) => (Err(e), None),
    }
}

fn finalizers(r: Result<Option<Change>, Error>) -> Applied {
    match r {
        Ok(Some(change)) => (Ok(StateReply::Done), Some(change)),
        Ok(None) => (Ok(StateReply::Unchanged(None)), None),
        Err(e) => (Err(e), None),
    }
}

/// Applies a store request (anything but the watch requests) to `store`.
/// Watch requests are handed back: watches belong to whoever runs the store.
///
/// A panic in a modify function is caught (nothing was changed) and becomes
/// [`StateReply::ModifyPanicked`], for the caller to re-raise.
pub(crate) fn apply(
    store: &mut Store,
    req: StateRequest,
    now: Timestamp,
) -> Result<Applied, StateRequest> {
    // Moved, not cloned: stamping a resource nobody else holds is in place.
    Ok(match req {
        StateRequest::Create { resource, owner } => {
            written(store.create(resource, owner.as_deref(), now))
        }
        StateRequest::Update { resource, owner, expected_phase } => {
            written(store.update(resource, owner.as_deref(), expected_phase, now))
        }
        other => match apply_ref(store, &other, now) {
            Some(applied) => applied,
            None => return Err(other),
        },
    })
}

/// [`apply`] without consuming the request, so that it can run again (a
/// shared backend's conflict re-runs the rules on fresh data); `None` for the
/// watch requests.
pub(crate) fn apply_ref(store: &mut Store, req: &StateRequest, now: Timestamp) -> Option<Applied> {
    Some(match req {
        StateRequest::Get { pointer } => (store.get(pointer).map(StateReply::Resource), None),
        StateRequest::List { kind, query } => {
            (store.list(kind, query).map(StateReply::Resources), None)
        }
        StateRequest::ListWithRevision { kind, query } => {
            let revision = store.revision();
            let listed = store.list(kind, query);
            (listed.map(|resources| StateReply::Listed { resources, revision }), None)
        }
        StateRequest::Create { resource, owner } => {
            written(store.create(resource.clone(), owner.as_deref(), now))
        }
        StateRequest::Update { resource, owner, expected_phase } => {
            written(store.update(resource.clone(), owner.as_deref(), *expected_phase, now))
        }
        StateRequest::Modify { pointer, owner, expected_phase, modify } => {
            match std::panic::catch_unwind(AssertUnwindSafe(|| {
                store.modify(pointer, modify, owner.as_deref(), *expected_phase, now)
            })) {
                Ok(Ok((r, None))) => (Ok(StateReply::Unchanged(Some(r))), None),
                Ok(Ok((r, change))) => (Ok(StateReply::Resource(r)), change),
                Ok(Err(e)) => (Err(e), None),
                Err(panic) => (Ok(StateReply::ModifyPanicked(panic)), None),
            }
        }
        StateRequest::Destroy { pointer, owner } => {
            match store.destroy(pointer, owner.as_deref()) {
                Ok(change) => (Ok(StateReply::Done), Some(change)),
                Err(e) => (Err(e), None),
            }
        }
        StateRequest::Teardown { pointer, owner } => {
            match store.teardown(pointer, owner.as_deref(), now) {
                Ok((ready, change)) => (Ok(StateReply::Ready(ready)), change),
                Err(e) => (Err(e), None),
            }
        }
        StateRequest::AddFinalizer { pointer, finalizer, expected_phase } => {
            finalizers(store.add_finalizer_expecting(pointer, finalizer, *expected_phase, now))
        }
        StateRequest::RemoveFinalizer { pointer, finalizer } => {
            finalizers(store.remove_finalizer(pointer, finalizer, now))
        }
        StateRequest::Watch { .. }
        | StateRequest::Unwatch { .. }
        | StateRequest::WatchStats { .. }
        | StateRequest::CountWatches => return None,
    })
}

impl Actor for StateActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Requests are awaited one per caller, so the mailbox is bounded by the
        // number of concurrent callers; never park them.
        ctx.set_mailbox_capacity(0);
        let weak: WeakRecipient<Flush> = ctx.address().downgrade().recipient();
        self.flush = Some(weak);
        ctx.spawn(DrainInbox::default());
        #[cfg(feature = "etcd")]
        if let Some(shared) = self.shared.as_mut() {
            ctx.add_stream(shared.start_feed());
        }
        self.refresh_view();
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.send_pending();
        self.inbox.close();
        self.store.set_readable(false);
    }
}

impl Handler<StateRequest> for StateActor {
    type Result = StateResponse;

    /// A request that came as an actix message is a pass of its own: its
    /// events go out before its reply.
    fn handle(&mut self, req: StateRequest, ctx: &mut Self::Context) -> Self::Result {
        let response = self.dispatch(req, ctx, None);
        self.send_pending();
        StateResponse(response)
    }
}

/// Drains the [`Inbox`] on every turn of the state actor (spawned at start):
/// each drain is one pass. It ends once the actor's mailbox has no sender
/// left (every [`State`](super::State) handle holds one), so that the actor
/// stops as it did before it had an inbox: a pending item would keep it
/// alive for good.
#[derive(Default)]
struct DrainInbox {
    /// The requests of one pass (its capacity kept from pass to pass).
    batch: Vec<Queued>,
}

impl ActorFuture<StateActor> for DrainInbox {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        act: &mut StateActor,
        ctx: &mut Context<StateActor>,
        task: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let this = self.get_mut();
        act.inbox.take(&mut this.batch, task.waker());
        if !this.batch.is_empty() {
            act.handle_pass(&mut this.batch, ctx);
        }
        if ctx.connected() {
            std::task::Poll::Pending
        } else {
            // No handle is left to send more (the actor's mailbox wakes it
            // when its last sender goes).
            std::task::Poll::Ready(())
        }
    }
}

impl Handler<CommitStaged> for StateActor {
    type Result = ();

    fn handle(&mut self, _: CommitStaged, ctx: &mut Self::Context) {
        self.commit(ctx);
    }
}

/// The answer to [`Close`], once every backend is released.
pub struct CloseResponse(ReplySlotClose);

impl fmt::Debug for CloseResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CloseResponse")
    }
}

impl MessageResponse<StateActor, Close> for CloseResponse {
    fn handle(self, _: &mut Context<StateActor>, tx: Option<OneshotSender<Result<(), Error>>>) {
        self.0.set(tx);
    }
}

impl Handler<Close> for StateActor {
    type Result = CloseResponse;

    fn handle(&mut self, _: Close, ctx: &mut Self::Context) -> Self::Result {
        let slot = ReplySlotClose::default();
        self.closing = Some(slot.clone());
        self.refresh_view();
        if !self.commit_scheduled {
            // Runs after actix stored the caller's channel in the slot.
            self.commit_scheduled = true;
            ctx.notify(CommitStaged);
        }
        CloseResponse(slot)
    }
}

impl Handler<Flush> for StateActor {
    type Result = ();

    fn handle(&mut self, Flush(id): Flush, _: &mut Self::Context) {
        if let Some(sub) = self.watches.get_mut(id) {
            sub.outbox.flush();
            sub.outbox.send_pending();
        }
    }
}

impl fmt::Debug for StateActor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateActor")
            .field("resources", &self.store.len())
            .field("watches", &self.watches.len())
            .field("revision", &self.store.revision())
            .field("backends", &self.backends)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Namespaces;
    use super::*;

    #[test]
    fn routes_send_listed_namespaces_to_their_backend_and_the_rest_to_memory() {
        let mut routes = Routes::default();
        assert_eq!(routes.route("config"), None, "everything in memory by default");
        routes.add(&Namespaces::from(["config", "secrets"]), 0);
        assert_eq!(routes.route("config"), Some(0));
        assert_eq!(routes.route("secrets"), Some(0));
        assert_eq!(routes.route("status"), None);
        routes.add(&Namespaces::All, 1);
        assert_eq!(routes.route("status"), Some(1), "All takes what no list names");
        assert_eq!(routes.route("config"), Some(0));
    }
}
