//! The backend contract: where committed writes go.
//!
//! # The commit contract
//! Reads never reach a backend. The [`StateActor`](crate::dev::StateActor) owns a
//! cached view of every resource and serves `get`, `list` and watches from it,
//! synchronously and borrowed, whatever the backend. A backend only
//!
//! 1. hands over what it holds once, at open ([`Backend::load`]), and
//! 2. makes batches of writes durable ([`Backend::commit`]).
//!
//! The state actor applies the rules of the state contract to its cache as
//! usual, **stages** the writes of one mailbox drain, and commits them as
//! **one** batch (group commit: while one batch is on its way to the disk, the
//! writes that arrive collect into the next). Only when the commit succeeded
//! does it publish the changes to watchers and then reply to the callers, in
//! that order. A failed commit rolls the cache back to where it was before the
//! batch; every caller of the batch gets [`Error::Storage`] naming its own
//! resource; nothing is published; the actor goes on serving.
//!
//! # Revisions
//! The state keeps one store-wide revision, a `u64` that grows by exactly one
//! **per write** (a create, an update, a destroy), in the order the writes
//! were applied. A batch of 64 writes takes 64 consecutive revisions. Each
//! stored resource carries the revision of the write that produced it
//! ([`Metadata::revision`](crate::resource::Metadata::revision), its *mod
//! revision*). A write's precondition names the mod revision it was computed
//! from ([`Precondition::Revision`]), or that nothing was there
//! ([`Precondition::Absent`]), so a destroy and re-create can never pass for
//! the old resource.
//!
//! # Shared stores
//! A store that other processes write too (etcd) adds two things to the
//! contract, and nothing else changes:
//!
//! 1. **A change feed** ([`Backend::feed`]): every change made to the store,
//!    by this process or another, in the store's order. The state actor
//!    applies it to its cache like its own writes and publishes it to
//!    watchers; it is the only way a shared store's data enters the cache.
//!    A write to a shared store is therefore **not** applied on commit: the
//!    actor runs the rules on the cache, sends the write, and answers the
//!    caller once the feed has delivered the write's revision (so the caller
//!    reads its own write, and watchers hear it first).
//! 2. **Per-write outcomes** ([`CommitOutcome`]): in a batch sent to a shared store
//!    each write keeps its own precondition. One whose precondition broke
//!    (another process wrote the resource) is a [`CommitOutcome::Conflict`]: the
//!    actor runs the rules again on fresh data once the feed has caught up
//!    with the revision the store was at, and only that write is sent
//!    again. One refused on its own (a fence, a size limit) is
//!    [`CommitOutcome::Refused`]. The others of the batch stand.
//!
//! A shared store assigns the revisions of its namespaces itself (they must
//! mean the same in every process); see [`Write::revision`].
//!
//! # Revisions of a mix
//! Each store keeps its own revisions: the namespaces of the in-memory state
//! and of exclusive backends (redb) share the state's own counter, and each
//! shared store's namespaces take that store's revisions. A watch, a list
//! and a resume point are always about one namespace, so the revisions one
//! watch sees come from one store and keep every guarantee above; revisions
//! of namespaces on different stores are not comparable.
//!
//! # Writing a backend
//! `commit` returns a future: a backend that writes to a disk or a network
//! does it on its own thread and resolves the future from there, so the
//! state actor's arbiter never blocks. Prove a backend with the public
//! conformance suite, [`testing::conformance`](crate::testing::conformance).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;

use crate::Error;
use crate::resource::{AnyResource, Pointer};

/// What a write requires of the stored resource before it applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precondition {
    /// Nothing is stored at the address (a create).
    Absent,
    /// The stored resource has this mod revision (an update or a destroy).
    Revision(u64),
}

/// What a write does.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    /// Store this resource at the address.
    Put(AnyResource),
    /// Remove what is stored at the address.
    Delete,
}

/// One write of a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    /// The address written.
    pub pointer: Pointer,
    /// What must be stored there for the write to apply.
    pub precondition: Precondition,
    /// The new value, or a delete.
    pub op: WriteOp,
    /// The store revision this write takes (the new value's mod revision).
    /// 0 for a write to a shared store, which assigns its own.
    pub revision: u64,
    /// The controller that writes (`None`: a user). A shared store fences
    /// the writes of a controller whose exclusive outputs it claimed.
    pub owner: Option<Arc<str>>,
}

/// What became of one write of a batch, in the batch's order.
#[derive(Debug)]
pub enum CommitOutcome {
    /// Durable; the new value's mod revision (for a delete, the delete's).
    Committed(u64),
    /// A shared store only: what is stored is not what the precondition
    /// named (another process wrote it); the store was at revision `seen`.
    /// The state runs the rules again once its feed has delivered `seen`.
    Conflict {
        /// The store's revision when it checked the precondition.
        seen: u64,
    },
    /// A shared store only: this write alone was refused (its writer no
    /// longer holds the claim, the value exceeds a limit); the caller gets
    /// the error, the other writes of the batch stand.
    Refused(Error),
}

/// What a backend holds at open.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The store revision of the last committed write (0 for a new store).
    pub revision: u64,
    /// Every stored resource, each with its mod revision in its metadata.
    ///
    /// A backend stores and returns the whole metadata, including the
    /// [`uid`](crate::resource::Metadata::uid) (serializing the metadata with
    /// serde does). A resource returned without one (stored before uids) gets
    /// one derived from its address and creation time, stable across reopens.
    pub resources: Vec<AnyResource>,
}

/// The future a [`Backend::commit`] returns: one [`CommitOutcome`] per write, in
/// order; an error fails the whole batch. An outcome per write, not one
/// result per batch, is what lets a shared store report one write's
/// conflict without failing the batch (docs/ARCHITECTURE.md, 'Backends and
/// durability').
pub type CommitFuture = Pin<Box<dyn Future<Output = Result<Vec<CommitOutcome>, Error>> + Send>>;

/// The error each caller of a failed batch gets: `e` named after its own
/// `resource` (a storage error keeps its failure and reason; anything else
/// is an I/O failure with `e`'s text).
pub(crate) fn batch_failed(e: &Error, resource: String) -> Error {
    match e {
        Error::Storage { failure, reason, .. } => {
            Error::Storage { resource, failure: *failure, reason: reason.clone() }
        }
        other => Error::Storage {
            resource,
            failure: crate::StorageFailure::Io,
            reason: other.to_string(),
        },
    }
}

/// One change a shared store's feed saw.
#[derive(Debug)]
pub enum FeedChange {
    /// A resource was written (created or updated); its metadata carries the
    /// store's revision of the write.
    Put(AnyResource),
    /// A resource was deleted at this revision.
    Delete(Pointer, u64),
}

/// What a shared store's feed tells the state, in the store's order.
#[derive(Debug)]
pub enum FeedMessage {
    /// Changes, in order; everything up to the revision is delivered.
    Changes(Vec<FeedChange>, u64),
    /// Nothing more changed up to this revision.
    Progress(u64),
    /// The feed lost its place (the store compacted its history): everything
    /// stored as of the revision. The state publishes the differences.
    Resync(Vec<AnyResource>, u64),
    /// The store cannot be reached; writes fail until [`FeedMessage::Restored`].
    Lost(String),
    /// The store is reachable again.
    Restored,
    /// The feed delivers the changes of `scope` again from now on (a
    /// process holding only part of a kind took more of it): what is stored
    /// in it as of the revision. The state replaces its cached part in
    /// scope, publishing the differences.
    Held(Vec<AnyResource>, u64, FeedScope),
    /// The feed no longer delivers the changes of `scope` (a process holding
    /// only part of a kind gave some of it up): the state forgets what it
    /// cached in scope, publishing nothing (the resources still exist).
    Dropped(FeedScope),
}

/// A part of a store's addresses, as a [`FeedMessage::Held`] or
/// [`FeedMessage::Dropped`] names it.
///
/// ```
/// use cosi_runtime::dev::FeedScope;
/// use cosi_runtime::resource::Pointer;
///
/// let scope = FeedScope::new(|p: &Pointer| p.namespace() == "a");
/// assert!(scope.contains(&Pointer::new("a", "T", "x")));
/// assert!(!scope.contains(&Pointer::new("b", "T", "x")));
/// ```
#[derive(Clone)]
pub struct FeedScope(Arc<dyn Fn(&Pointer) -> bool + Send + Sync>);

impl FeedScope {
    /// The addresses `contains` says are in it.
    pub fn new(contains: impl Fn(&Pointer) -> bool + Send + Sync + 'static) -> Self {
        FeedScope(Arc::new(contains))
    }

    /// Whether `ptr` is in the scope.
    pub fn contains(&self, ptr: &Pointer) -> bool {
        (self.0)(ptr)
    }
}

impl fmt::Debug for FeedScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FeedScope")
    }
}

/// A shared store's change feed (see [`Backend::feed`]).
pub struct Feed {
    /// The messages, from the revision after the [`Snapshot`] on.
    pub messages: Pin<Box<dyn Stream<Item = FeedMessage> + Send>>,
    /// How long a committed write may wait for the feed to deliver it
    /// before its caller is told the store is unavailable (and
    /// [`Backend::rewatch`] is called).
    pub patience: Duration,
}

impl fmt::Debug for Feed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Feed").field("patience", &self.patience).finish_non_exhaustive()
    }
}

/// The future a [`Backend::close`] returns.
pub type CloseFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Where the writes of some namespaces go (see the [module docs](self)).
///
/// A backend stores and returns resources; every rule of the state contract
/// lives in the [`Store`](crate::dev::Store) above it, so backends behave alike.
pub trait Backend: Send + 'static {
    /// A short description for errors and logs (`redb at /var/lib/x.redb`).
    fn describe(&self) -> String;

    /// Everything stored, to fill the cache. Called once, when the state opens.
    ///
    /// # Errors
    /// [`Error::Storage`] if the store cannot be read.
    fn load(&mut self) -> Result<Snapshot, Error>;

    /// Makes `batch` durable, atomically: every write or none. Writes are in
    /// the order the state applied them (a resource may appear more than once;
    /// each write's precondition then names the previous write's revision).
    ///
    /// # Errors
    /// [`Error::Storage`] if the batch did not become durable; a precondition
    /// that does not hold is also a storage error (the cache and the backend
    /// disagree: another writer, or a bug), and nothing of the batch applies.
    fn commit(&mut self, batch: Vec<Write>) -> CommitFuture;

    /// Releases the store (files, locks, threads); resolves once released.
    /// The default has nothing to release.
    fn close(&mut self) -> CloseFuture {
        Box::pin(std::future::ready(()))
    }

    /// A shared store's change feed, taken once when the state starts;
    /// `None` (the default) for a store only this state writes. See the
    /// [module docs](self#shared-stores).
    fn feed(&mut self) -> Option<Feed> {
        None
    }

    /// A shared store: asks the feed to report how far it is (a write that
    /// conflicted waits for it). The default does nothing.
    fn ask_progress(&mut self) {}

    /// A shared store: the feed did not deliver within its patience; watch
    /// again. The default does nothing.
    fn rewatch(&mut self) {}

    /// The service that claims exclusive outputs across the processes that
    /// share this store, if it has one (the supervisor uses it).
    fn claims(&self) -> Option<super::ClaimService> {
        None
    }
}

impl fmt::Debug for dyn Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}
