//! [`StateActor`]: owns the [`Store`] and serializes every request to it.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::WeakRecipient;
use actix::prelude::*;

use super::backend::{Backend, MemoryBackend};
use super::delivery::{Flush, Outbox, Sink};
use super::event::{Event, WatchEvent, WatchId};
use super::store::{Change, ExpectedPhase, ModifyFn, Store};
use super::watch::{Subscription, WatchTarget, Watches};
use crate::Error;
use crate::activity::Activity;
use crate::resource::{AnyResource, Kind, LabelQuery, Pointer, Timestamp, validate};

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
}

impl StateRequest {
    /// The operation's name (`get`, `list`, `create`, ...).
    pub fn operation(&self) -> &'static str {
        match self {
            StateRequest::Get { .. } => "get",
            StateRequest::List { .. } => "list",
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
            StateRequest::List { kind, .. } => Subject::Kind(kind.clone()),
            StateRequest::Create { resource, .. } | StateRequest::Update { resource, .. } => {
                Subject::Resource(resource.pointer().clone())
            }
            StateRequest::Watch { target, .. } => match target {
                WatchTarget::Resource(p) => Subject::Resource(p.clone()),
                WatchTarget::Kind { kind, .. } => Subject::Kind(kind.clone()),
            },
            StateRequest::Unwatch { id } | StateRequest::WatchStats { id } => Subject::Watch(*id),
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
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Resource(p) => fmt::Display::fmt(p, f),
            Subject::Kind(k) => fmt::Display::fmt(k, f),
            Subject::Watch(id) => fmt::Display::fmt(id, f),
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
            StateRequest::List { query, .. } => {
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
    /// The modify function panicked; the caller re-raises the panic in its own task.
    ModifyPanicked(Box<dyn Any + Send>),
}

impl fmt::Debug for StateReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateReply::Resource(r) => f.debug_tuple("Resource").field(r).finish(),
            StateReply::Resources(r) => f.debug_tuple("Resources").field(&r.len()).finish(),
            StateReply::Ready(b) => f.debug_tuple("Ready").field(b).finish(),
            StateReply::Done => f.write_str("Done"),
            StateReply::Unchanged(r) => f.debug_tuple("Unchanged").field(r).finish(),
            StateReply::Watching(id) => f.debug_tuple("Watching").field(id).finish(),
            StateReply::Stats(s) => f.debug_tuple("Stats").field(s).finish(),
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

/// The actor that owns the [`Store`] and the watches.
///
/// Every request is a message handled to completion before the next, so the
/// store has exactly one writer and watchers see changes in the order they
/// were applied.
pub struct StateActor<B: Backend = MemoryBackend> {
    store: Store<B>,
    watches: Watches,
    flush: Option<WeakRecipient<Flush>>,
}

impl StateActor<MemoryBackend> {
    /// A state actor over an empty in-memory store.
    pub fn new() -> Self {
        StateActor::with_backend(MemoryBackend::new())
    }
}

impl Default for StateActor<MemoryBackend> {
    fn default() -> Self {
        StateActor::new()
    }
}

impl<B: Backend> StateActor<B> {
    /// A state actor over `backend`.
    pub fn with_backend(backend: B) -> Self {
        StateActor { store: Store::with_backend(backend), watches: Watches::default(), flush: None }
    }

    fn publish(&mut self, change: Option<Change>) {
        if let Some(change) = change {
            self.watches.publish(&change);
        }
    }

    fn watch(
        &mut self,
        target: WatchTarget,
        bootstrap: bool,
        sink: WatchSink,
        window: usize,
    ) -> Result<WatchId, Error> {
        match &target {
            WatchTarget::Resource(p) => validate::pointer(p)?,
            WatchTarget::Kind { kind, .. } => validate::kind(kind)?,
        }
        let id = self.watches.next_id();
        let mut outbox = Outbox::new(id, sink.sink, window, self.flush.clone(), sink.activity);
        match &target {
            WatchTarget::Resource(ptr) => outbox.publish(match self.store.get(ptr) {
                Ok(r) => Event::Created(r),
                Err(_) => Event::Destroyed(AnyResource::tombstone(ptr.clone())),
            }),
            WatchTarget::Kind { kind, query } if bootstrap => {
                self.store
                    .for_each_match(kind, query, |r| outbox.publish(Event::Created(r.clone())));
                outbox.publish(Event::Bootstrapped(kind.clone()));
            }
            WatchTarget::Kind { .. } => {}
        }
        self.watches.add(Subscription { id, target, outbox });
        Ok(id)
    }

    fn serve(&mut self, req: StateRequest) -> Result<StateReply, Error> {
        let req = match apply(&mut self.store, req, Timestamp::now()) {
            Ok((reply, change)) => {
                self.publish(change);
                return reply;
            }
            Err(watch_request) => watch_request,
        };
        match req {
            StateRequest::Watch { target, bootstrap, sink, window } => {
                self.watch(target, bootstrap, sink, window).map(StateReply::Watching)
            }
            StateRequest::Unwatch { id } => {
                self.watches.remove(id);
                Ok(StateReply::Done)
            }
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
}

/// What a store request produced: the reply, and the change to publish.
pub(crate) type Applied = (Result<StateReply, Error>, Option<Change>);

/// Applies a store request (anything but the watch requests) to `store`.
/// Watch requests are handed back: watches belong to whoever runs the store.
///
/// A panic in a modify function is caught (nothing was changed) and becomes
/// [`StateReply::ModifyPanicked`], for the caller to re-raise.
pub(crate) fn apply<B: Backend>(
    store: &mut Store<B>,
    req: StateRequest,
    now: Timestamp,
) -> Result<Applied, StateRequest> {
    let written = |r: Result<(AnyResource, Change), Error>| match r {
        Ok((resource, change)) => (Ok(StateReply::Resource(resource)), Some(change)),
        Err(e) => (Err(e), None),
    };
    let finalizers = |r: Result<Option<Change>, Error>| match r {
        Ok(Some(change)) => (Ok(StateReply::Done), Some(change)),
        Ok(None) => (Ok(StateReply::Unchanged(None)), None),
        Err(e) => (Err(e), None),
    };
    Ok(match req {
        StateRequest::Get { pointer } => (store.get(&pointer).map(StateReply::Resource), None),
        StateRequest::List { kind, query } => {
            (store.list(&kind, &query).map(StateReply::Resources), None)
        }
        StateRequest::Create { resource, owner } => {
            written(store.create(resource, owner.as_deref(), now))
        }
        StateRequest::Update { resource, owner, expected_phase } => {
            written(store.update(resource, owner.as_deref(), expected_phase, now))
        }
        StateRequest::Modify { pointer, owner, expected_phase, modify } => {
            match std::panic::catch_unwind(AssertUnwindSafe(|| {
                store.modify(&pointer, modify, owner.as_deref(), expected_phase, now)
            })) {
                Ok(Ok((r, None))) => (Ok(StateReply::Unchanged(Some(r))), None),
                Ok(Ok((r, change))) => (Ok(StateReply::Resource(r)), change),
                Ok(Err(e)) => (Err(e), None),
                Err(panic) => (Ok(StateReply::ModifyPanicked(panic)), None),
            }
        }
        StateRequest::Destroy { pointer, owner } => match store.destroy(&pointer, owner.as_deref())
        {
            Ok(change) => (Ok(StateReply::Done), Some(change)),
            Err(e) => (Err(e), None),
        },
        StateRequest::Teardown { pointer, owner } => {
            match store.teardown(&pointer, owner.as_deref(), now) {
                Ok((ready, change)) => (Ok(StateReply::Ready(ready)), change),
                Err(e) => (Err(e), None),
            }
        }
        StateRequest::AddFinalizer { pointer, finalizer } => {
            finalizers(store.add_finalizer(&pointer, &finalizer, now))
        }
        StateRequest::RemoveFinalizer { pointer, finalizer } => {
            finalizers(store.remove_finalizer(&pointer, &finalizer, now))
        }
        watch @ (StateRequest::Watch { .. }
        | StateRequest::Unwatch { .. }
        | StateRequest::WatchStats { .. }) => return Err(watch),
    })
}

impl<B: Backend> Actor for StateActor<B> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Requests are awaited one per caller, so the mailbox is bounded by the
        // number of concurrent callers; never park them.
        ctx.set_mailbox_capacity(0);
        let weak: WeakRecipient<Flush> = ctx.address().downgrade().recipient();
        self.flush = Some(weak);
    }
}

impl<B: Backend> Handler<StateRequest> for StateActor<B> {
    type Result = Result<StateReply, Error>;

    fn handle(&mut self, req: StateRequest, _: &mut Self::Context) -> Self::Result {
        self.serve(req)
    }
}

impl<B: Backend> Handler<Flush> for StateActor<B> {
    type Result = ();

    fn handle(&mut self, Flush(id): Flush, _: &mut Self::Context) {
        if let Some(sub) = self.watches.get_mut(id) {
            sub.outbox.flush();
        }
    }
}

impl<B: Backend> fmt::Debug for StateActor<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateActor")
            .field("resources", &self.store.len())
            .field("watches", &self.watches.len())
            .finish()
    }
}
