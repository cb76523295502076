//! The cached view of the state: what reads are served from.
//!
//! The state actor is its only writer. Since reads do not change anything,
//! [`State`](super::State) handles on any thread read it directly through a
//! [`CacheView`], without a message to the actor (see [`CacheView`] for when
//! they may).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::resource::{AnyResource, Id, Kind, KindMap, LabelQuery, Pointer};

/// What [`Cache::with_slot`] does with a resource's slot.
#[derive(Debug)]
pub(crate) enum SlotEdit {
    /// Leave it as it is.
    Keep,
    /// Store this resource there.
    Put(AnyResource),
    /// Remove what is there.
    Remove,
}

#[derive(Default)]
struct Collections {
    by_kind: KindMap<BTreeMap<Id, AnyResource>>,
    len: usize,
}

impl Collections {
    fn collection_mut(&mut self, kind: &Kind) -> &mut BTreeMap<Id, AnyResource> {
        // A kind is cloned only when it is new. (Returning the map out of a
        // `get_mut` match does not borrow-check; kinds hash in O(1).)
        if !self.by_kind.contains_key(kind) {
            self.by_kind.insert(kind.clone(), BTreeMap::new());
        }
        self.by_kind.get_mut(kind).expect("inserted above")
    }

    fn put(&mut self, resource: AnyResource) {
        let id = resource.pointer().id_shared().clone();
        let collection = self.collection_mut(resource.pointer().kind());
        if collection.insert(id, resource).is_none() {
            self.len += 1;
        }
    }
}

struct Shared {
    collections: RwLock<Collections>,
    /// Whether readers outside the actor may read now: every write the
    /// cache holds is committed (no batch staged or in flight to a durable
    /// backend), and the state is open.
    readable: AtomicBool,
    /// Requests sent through a [`CacheView`]'s handle and not yet handled:
    /// while more are on their way, the actor holds its batched events and
    /// replies for the end of the pass (see `StateActor`'s `send_pending`).
    outstanding: AtomicUsize,
}

/// The cached view the state actor owns: every resource in memory, a sorted
/// map per kind. Reads are served from here, synchronously; a durable
/// [`Backend`](super::Backend) only receives the committed writes.
///
/// The maps sit behind a lock only so that [`CacheView`]s can read them from
/// other threads; the state actor is the only writer and holds the lock for
/// one operation at a time (never across an `.await`, never while user code
/// runs).
pub(crate) struct Cache {
    shared: Arc<Shared>,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            shared: Arc::new(Shared {
                collections: RwLock::new(Collections::default()),
                readable: AtomicBool::new(true),
                outstanding: AtomicUsize::new(0),
            }),
        }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.read();
        f.debug_struct("Cache").field("kinds", &c.by_kind.len()).field("resources", &c.len).finish()
    }
}

impl Cache {
    // A panic while the lock was held (a bug, not user code: none runs under
    // it) leaves the maps as the last completed edit did; serve on.
    fn read(&self) -> RwLockReadGuard<'_, Collections> {
        self.shared.collections.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Collections> {
        self.shared.collections.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// A handle for readers outside the actor.
    pub(crate) fn view(&self) -> CacheView {
        CacheView { shared: self.shared.clone() }
    }

    /// Lets readers outside the actor read (`true`) or sends them to the
    /// actor (`false`: writes are staged, or the state is closed).
    pub(crate) fn set_readable(&self, readable: bool) {
        self.shared.readable.store(readable, Ordering::Release);
    }

    /// Counts one request handled; whether more are on their way. (A
    /// request sent without a view was never counted: the count stays at 0.)
    pub(crate) fn request_handled(&self) -> bool {
        let previous =
            self.shared
                .outstanding
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        previous.is_ok_and(|n| n > 1)
    }

    pub(crate) fn get(&self, ptr: &Pointer) -> Option<AnyResource> {
        get(&self.read(), ptr)
    }

    /// Visits the resources of `kind` matching `query`, in id order (under
    /// the read lock: `f` must not call back into the cache).
    pub(crate) fn for_each_match(
        &self,
        kind: &Kind,
        query: &LabelQuery,
        f: impl FnMut(&AnyResource),
    ) {
        matching(&self.read(), kind, query).for_each(f);
    }

    /// The resources of `kind` matching `query`, in id order.
    pub(crate) fn list(&self, kind: &Kind, query: &LabelQuery) -> Vec<AnyResource> {
        matching(&self.read(), kind, query).cloned().collect()
    }

    pub(crate) fn put(&self, resource: AnyResource) {
        self.write().put(resource);
    }

    pub(crate) fn with_slot<R>(
        &self,
        ptr: &Pointer,
        f: impl FnOnce(Option<&AnyResource>) -> (SlotEdit, R),
    ) -> R {
        use std::collections::btree_map::Entry;
        let mut guard = self.write();
        let collections = &mut *guard;
        let Some(collection) = collections.by_kind.get_mut(ptr.kind()) else {
            let (slot, result) = f(None);
            if let SlotEdit::Put(resource) = slot {
                collections.put(resource);
            }
            return result;
        };
        match collection.entry(ptr.id_shared().clone()) {
            Entry::Occupied(mut stored) => {
                let (slot, result) = f(Some(stored.get()));
                match slot {
                    SlotEdit::Keep => {}
                    SlotEdit::Put(resource) => *stored.get_mut() = resource,
                    SlotEdit::Remove => {
                        stored.remove();
                        collections.len -= 1;
                    }
                }
                result
            }
            Entry::Vacant(empty) => {
                let (slot, result) = f(None);
                if let SlotEdit::Put(resource) = slot {
                    empty.insert(resource);
                    collections.len += 1;
                }
                result
            }
        }
    }

    pub(crate) fn insert_new(&self, resource: AnyResource) -> bool {
        let mut guard = self.write();
        let collections = &mut *guard;
        let ptr = resource.pointer();
        let collection = collections.collection_mut(ptr.kind());
        match collection.entry(ptr.id_shared().clone()) {
            std::collections::btree_map::Entry::Occupied(_) => false,
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(resource);
                collections.len += 1;
                true
            }
        }
    }

    pub(crate) fn remove(&self, ptr: &Pointer) -> Option<AnyResource> {
        let mut guard = self.write();
        let collections = &mut *guard;
        let removed = collections.by_kind.get_mut(ptr.kind())?.remove(ptr.id_shared());
        if removed.is_some() {
            collections.len -= 1;
        }
        removed
    }

    pub(crate) fn intern(&self, kind: &Kind) -> Kind {
        if let Some((k, _)) = self.read().by_kind.get_key_value(kind) {
            return k.clone();
        }
        self.write().by_kind.entry(kind.clone()).or_default();
        kind.clone()
    }

    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn pointers(&self) -> Vec<Pointer> {
        let c = self.read();
        let mut out = Vec::with_capacity(c.len);
        for collection in c.by_kind.values() {
            out.extend(collection.values().map(|r| r.pointer().clone()));
        }
        out
    }

    pub(crate) fn len(&self) -> usize {
        self.read().len
    }
}

fn get(c: &Collections, ptr: &Pointer) -> Option<AnyResource> {
    c.by_kind.get(ptr.kind())?.get(ptr.id_shared()).cloned()
}

fn matching<'a>(
    c: &'a Collections,
    kind: &Kind,
    query: &'a LabelQuery,
) -> impl Iterator<Item = &'a AnyResource> + 'a {
    c.by_kind
        .get(kind)
        .into_iter()
        .flat_map(|coll| coll.values())
        .filter(move |r| query.matches(r.metadata().labels()))
}

/// A reader's handle on the state actor's [`Cache`], held by
/// [`State`](super::State) handles: `get` and `list` read it directly
/// instead of sending a message (no round trip).
///
/// # Guarantees
/// - A reader sees what the actor serves at that moment: every write the
///   actor applied, in its order. So a caller reads its own writes (the
///   reply comes after the write is in the cache), and a reconcile woken by
///   a change reads that change or a later one.
/// - While writes are staged for a durable backend (not yet committed) or
///   the state is closed, the view is not readable and readers send their
///   request to the actor, which serves it as before (reads of staged kinds
///   wait for the commit; a closed state answers `Unavailable`).
#[derive(Clone)]
pub(crate) struct CacheView {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CacheView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheView").field("readable", &self.readable()).finish()
    }
}

impl CacheView {
    /// Counts a request on its way to the actor (see [`Cache::request_handled`]).
    /// Relaxed: the mailbox orders it before the request's handling.
    pub(crate) fn request_sent(&self) {
        self.shared.outstanding.fetch_add(1, Ordering::Relaxed);
    }

    fn readable(&self) -> bool {
        self.shared.readable.load(Ordering::Acquire)
    }

    /// The maps, read-locked, when the view is readable now.
    fn read(&self) -> Option<RwLockReadGuard<'_, Collections>> {
        if !self.readable() {
            return None;
        }
        let c = self.shared.collections.read().unwrap_or_else(PoisonError::into_inner);
        // Checked again under the lock: the actor clears it before it stages.
        self.readable().then_some(c)
    }

    /// The resource at `ptr` (`Some(None)`: not there); `None` when the view
    /// is not readable now.
    pub(crate) fn get(&self, ptr: &Pointer) -> Option<Option<AnyResource>> {
        self.read().map(|c| get(&c, ptr))
    }

    /// The resources of `kind` matching `query`, in id order; `None` when the
    /// view is not readable now.
    pub(crate) fn list(&self, kind: &Kind, query: &LabelQuery) -> Option<Vec<AnyResource>> {
        self.read().map(|c| matching(&c, kind, query).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outstanding_count_says_whether_more_requests_follow_and_never_wraps() {
        let cache = Cache::default();
        let view = cache.view();
        assert!(!cache.request_handled(), "an uncounted request: none follow, the count stays 0");
        view.request_sent();
        view.request_sent();
        assert!(cache.request_handled(), "one more is on its way");
        assert!(!cache.request_handled(), "the last one");
        assert!(!cache.request_handled(), "still 0, not wrapped around");
        view.request_sent();
        assert!(!cache.request_handled());
    }
}
