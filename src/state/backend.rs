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
//! # Writing a backend
//! `commit` returns a future: a backend that writes to a disk or a network
//! does it on its own thread and resolves the future from there, so the
//! state actor's arbiter never blocks. Prove a backend with the public
//! conformance suite, [`testing::conformance`](crate::testing::conformance).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

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
    pub revision: u64,
}

/// A write the backend made durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The address written.
    pub pointer: Pointer,
    /// Its revision.
    pub revision: u64,
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

/// The future a [`Backend::commit`] returns.
pub type CommitFuture = Pin<Box<dyn Future<Output = Result<Vec<Committed>, Error>> + Send>>;

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
}

impl fmt::Debug for dyn Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}
