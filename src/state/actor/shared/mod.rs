//! The state actor's side of a shared store (a [`Backend`](crate::state::Backend) with a feed, see
//! [`backend`](crate::state::backend#shared-stores)): writes run the rules on the
//! cache and go to the store in one batch per pass; each is answered once
//! the feed has brought it; a conflicted write re-runs on fresh data.
//!
//! Nothing here knows which store it is: etcd, or any backend with a feed.
//!
//! The lanes (one per shared store: its writes in flight and its feed's
//! progress) are here; the write path (batches, outcomes, retries and the
//! watchdog) in [`write`]; what the feed brings, and a re-list after it was
//! lost, in [`feed`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::response::ReplySlot;
use crate::resource::Pointer;
use crate::state::backend::{FeedMessage, Write};
use crate::state::request::{StateReply, StateRequest, Subject};
use crate::{Error, StorageFailure};

mod feed;
mod write;

/// How many times one write re-runs after conflicts before it gives up with
/// [`StorageFailure::Conflict`] (only under a storm of writes to one resource).
const MAX_ATTEMPTS: u32 = 100;

/// A write waiting for its turn, or for a retry.
pub(crate) struct Pending {
    req: StateRequest,
    slot: ReplySlot,
    attempts: u32,
    /// When it started waiting for fresh data (a retry).
    since: Option<Instant>,
}

/// A committed write waiting for the feed to bring it.
struct Acked {
    slot: ReplySlot,
    reply: Result<StateReply, Error>,
    pointer: Pointer,
    since: Instant,
    revision: u64,
}

/// A write of the pass, ready to go to the store.
struct Staged {
    pending: Pending,
    pointer: Pointer,
    write: Write,
    reply: Result<StateReply, Error>,
}

/// One shared store of a state: its writes in flight and its feed's progress.
pub(crate) struct StoreLane {
    /// The backend's index in the state actor.
    pub(crate) backend: usize,
    describe: String,
    patience: Duration,
    /// Everything of this store up to this revision is in the cache.
    pub(crate) feed_rev: u64,
    /// Resources with a write in flight, and the writes queued behind it.
    busy: HashMap<Pointer, VecDeque<Pending>>,
    /// This pass's writes, sent as one batch when the pass ends.
    staged: Vec<Staged>,
    /// Batches sent and not answered yet.
    in_flight: usize,
    /// Committed writes by revision, answered once the feed reaches it.
    acked: BTreeMap<u64, Vec<Acked>>,
    /// Conflicted writes by the revision the store was at, re-run once the feed reaches it.
    retries: BTreeMap<u64, Vec<Pending>>,
    /// A check of overdue writes is scheduled.
    watchdog: bool,
    /// Whether the feed is connected.
    available: bool,
}

impl StoreLane {
    pub(crate) fn new(backend: usize, describe: String, patience: Duration, revision: u64) -> Self {
        StoreLane {
            backend,
            describe,
            patience,
            feed_rev: revision,
            busy: HashMap::new(),
            staged: Vec::new(),
            in_flight: 0,
            acked: BTreeMap::new(),
            retries: BTreeMap::new(),
            watchdog: false,
            available: true,
        }
    }

    /// Whether nothing is in flight (for closing).
    pub(crate) fn is_idle(&self) -> bool {
        self.busy.is_empty()
            && self.staged.is_empty()
            && self.in_flight == 0
            && self.acked.is_empty()
            && self.retries.is_empty()
    }

    pub(crate) fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    fn unavailable(&self, resource: String, reason: String) -> Error {
        Error::Storage { resource, failure: StorageFailure::Unavailable, reason }
    }
}

/// The feed of the shared store in lane `.0`.
pub(crate) struct LaneFeed(pub(crate) usize, pub(crate) FeedMessage);

/// The address a write request is about.
fn written_pointer(req: &StateRequest) -> Option<Pointer> {
    match req.about() {
        Subject::Resource(p) => Some(p),
        _ => None,
    }
}

/// The owner acting in a write request, if any.
fn acting_owner(req: &StateRequest) -> Option<&Arc<str>> {
    match req {
        StateRequest::Create { owner, .. }
        | StateRequest::Update { owner, .. }
        | StateRequest::Modify { owner, .. }
        | StateRequest::Destroy { owner, .. }
        | StateRequest::Teardown { owner, .. } => owner.as_ref(),
        _ => None,
    }
}

/// Removes and returns the entries of `waiting` that are `late`.
fn take_late<T>(waiting: &mut BTreeMap<u64, Vec<T>>, late: impl Fn(&T) -> bool) -> Vec<T> {
    let mut out = Vec::new();
    for entries in waiting.values_mut() {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(entries).into_iter().partition(&late);
        *entries = kept;
        out.extend(gone);
    }
    waiting.retain(|_, v| !v.is_empty());
    out
}
