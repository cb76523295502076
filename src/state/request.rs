//! The request protocol of the state actor: one [`StateRequest`] per
//! operation, its [`StateReply`], and what a request is about ([`Subject`]).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use actix::prelude::*;

use super::WatchId;
use super::delivery::{Sink, WatchEvent};
use super::store::{ExpectedPhase, ModifyFn};
use super::watch::WatchTarget;
use crate::Error;
use crate::activity::Activity;
use crate::resource::{AnyResource, Kind, LabelQuery, Pointer, Resource, Spec};
use crate::shard::ShardMask;

/// Where a watch delivers, as carried by [`StateRequest::Watch`].
pub struct WatchSink {
    pub(crate) sink: Sink,
    /// Counted in `settled()` (runtime-internal subscribers only).
    pub(crate) activity: Option<Activity>,
    /// Delivers only the changes of keys in these shards (a sharded
    /// controller's primary watch); `None`: every change.
    pub(crate) shards: Option<Arc<ShardMask>>,
}

impl WatchSink {
    /// Delivery to an actor.
    pub fn recipient(recipient: Recipient<WatchEvent>) -> Self {
        WatchSink { sink: Sink::Actor(recipient), activity: None, shards: None }
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
    /// List a type in every namespace, sorted by (namespace, id), with the
    /// revision of the snapshot when one revision sequence covers every
    /// namespace (see
    /// [`State::list_all_namespaces_with_revision`](super::State::list_all_namespaces_with_revision));
    /// answered as [`StateReply::ListedAllNamespaces`].
    ListAllNamespaces {
        /// Which type.
        resource_type: String,
        /// Label filter.
        query: LabelQuery,
    },
    /// Read one resource, with the store revision it was read at (see
    /// [`State::get_with_revision`](super::State::get_with_revision));
    /// answered as [`StateReply::Listed`] with the resource, or none.
    GetWithRevision {
        /// Which.
        pointer: Pointer,
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
        /// The stored finalizers must stay as they are
        /// ([`Error::AccessDenied`] otherwise, checked after the phase):
        /// `true` for a controller's update, since a controller changes
        /// finalizers only with [`AddFinalizer`](Self::AddFinalizer) and
        /// [`RemoveFinalizer`](Self::RemoveFinalizer), on its strong inputs
        /// (docs/ARCHITECTURE.md, 'State contract'). `false` for users. The error names `owner`, or "(a
        /// writer without an owner)" for a request built without one.
        keep_finalizers: bool,
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
        /// The result must carry the finalizers it was computed from (none
        /// for a new resource): as [`Update`](Self::Update)'s, checked once
        /// the function ran.
        keep_finalizers: bool,
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

    /// An update; `keep_finalizers` as [`StateRequest::Update`]'s.
    pub(crate) fn update(
        resource: AnyResource,
        owner: Option<Arc<str>>,
        expected_phase: ExpectedPhase,
        keep_finalizers: bool,
    ) -> Self {
        StateRequest::Update { resource, owner, expected_phase, keep_finalizers }
    }

    /// A typed modify: `f` applied to the stored resource as `S`, or to
    /// `empty()` when there is none; `keep_finalizers` as
    /// [`StateRequest::Modify`]'s.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when `ptr` is not of type `S`.
    pub(crate) fn modify<S, E, F>(
        ptr: &Pointer,
        owner: Option<Arc<str>>,
        expected_phase: ExpectedPhase,
        keep_finalizers: bool,
        empty: E,
        f: F,
    ) -> Result<Self, Error>
    where
        S: Spec,
        E: Fn() -> Resource<S> + Send + 'static,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        check_type::<S>(ptr)?;
        Ok(StateRequest::Modify {
            pointer: ptr.clone(),
            owner,
            expected_phase,
            modify: typed_modify(empty, f),
            keep_finalizers,
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
            StateRequest::GetWithRevision { .. } => "get_with_revision",
            StateRequest::ListAllNamespaces { .. } => "list_all_namespaces",
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
            | StateRequest::GetWithRevision { pointer }
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
            StateRequest::ListAllNamespaces { resource_type, .. } => {
                Subject::AllNamespaces(resource_type.clone())
            }
            StateRequest::Watch { target, .. } => match target {
                WatchTarget::Resource(p) => Subject::Resource(p.clone()),
                WatchTarget::Kind { kind, .. } => Subject::Kind(kind.clone()),
                WatchTarget::AllNamespaces { kind, .. } => {
                    Subject::AllNamespaces(kind.resource_type().to_owned())
                }
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
    /// A type in every namespace (a list or watch across namespaces).
    AllNamespaces(String),
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
            Subject::AllNamespaces(t) => write!(f, "{t} in every namespace"),
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
            StateRequest::List { query, .. }
            | StateRequest::ListWithRevision { query, .. }
            | StateRequest::ListAllNamespaces { query, .. } => {
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
    /// `ListWithRevision` (and `GetWithRevision`: the resource, or none):
    /// the resources and the store revision they were read at.
    Listed {
        /// The resources, sorted by id.
        resources: Vec<AnyResource>,
        /// The store revision of the snapshot.
        revision: u64,
    },
    /// `ListAllNamespaces`: the resources, and the revision of the snapshot
    /// if one revision sequence covers every namespace.
    ListedAllNamespaces {
        /// The resources, sorted by (namespace, id).
        resources: Vec<AnyResource>,
        /// The revision of the snapshot, `None` when namespaces lie in
        /// stores with revision sequences of their own (see
        /// [`State::list_all_namespaces_with_revision`](super::State::list_all_namespaces_with_revision)).
        revision: Option<u64>,
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
            StateReply::ListedAllNamespaces { resources, revision } => f
                .debug_struct("ListedAllNamespaces")
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

/// The modify function for spec type `S`: read current (or `empty()`), apply `f`.
fn typed_modify<S, E, F>(empty: E, f: F) -> ModifyFn
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

/// `Ok` if `ptr` names spec type `S`, [`Error::TypeMismatch`] otherwise.
fn check_type<S: Spec>(ptr: &Pointer) -> Result<(), Error> {
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

/// Closes the state: commits what is staged, releases every backend (files,
/// locks, threads), then stops the actor. Later requests get
/// [`Error::Unavailable`].
#[derive(Message, Debug)]
#[rtype(result = "Result<(), Error>")]
pub struct Close;

/// Tear down, wait for the finalizers to drain, destroy (see [`State::teardown_and_destroy`](crate::State::teardown_and_destroy)); served by the
/// [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator).
#[derive(Message, Debug)]
#[rtype(result = "Result<(), Error>")]
pub struct TeardownAndDestroy {
    /// The resource.
    pub pointer: Pointer,
    /// The owner acting (`None` for a user resource).
    pub owner: Option<Arc<str>>,
}

// Decoding a reply: each request's answer of the expected shape, or an error
// that names the operation.

/// An [`Error::Unavailable`] for a reply of the wrong shape to `op`.
pub(crate) fn unexpected(reply: StateReply, op: &str) -> Error {
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
