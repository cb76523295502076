//! The cached view of the state: what reads are served from.
//!
//! The state actor is its only writer. Since reads do not change anything,
//! [`State`](super::State) handles on any thread read it directly through a
//! [`CacheView`], without a message to the actor (see [`CacheView`] for when
//! they may).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::collection::Collection;
pub(crate) use super::collection::SlotEdit;
use crate::resource::{AnyResource, Kind, KindMap, LabelQuery, Pointer};

#[derive(Default)]
struct Collections {
    by_kind: KindMap<Collection>,
}

impl Collections {
    fn collection_mut(&mut self, kind: &Kind) -> &mut Collection {
        self.collection_entry(kind).1
    }

    /// The interned kind and the collection of `kind`, made if new.
    fn collection_entry(&mut self, kind: &Kind) -> (&Kind, &mut Collection) {
        // A kind is cloned only when it is new. (Returning the collection out
        // of a `get_mut` match does not borrow-check; kinds hash in O(1).)
        if !self.by_kind.contains_key(kind) {
            self.by_kind.insert(kind.clone(), Collection::default());
        }
        self.by_kind.get_key_value_mut(kind).expect("inserted above")
    }

    fn len(&self) -> usize {
        self.by_kind.values().map(Collection::len).sum()
    }
}

struct Shared {
    collections: RwLock<Collections>,
    /// Whether readers outside the actor may read now: every write the
    /// cache holds is committed (no batch staged or in flight to a durable
    /// backend), and the state is open.
    readable: AtomicBool,
}

/// The cached view the state actor owns: every resource in memory, a
/// [`Collection`] per kind (found by id in O(1), listed in id order). Reads
/// are served from here, synchronously; a durable [`Backend`](super::Backend)
/// only receives the committed writes.
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
            }),
        }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.read();
        f.debug_struct("Cache")
            .field("kinds", &c.by_kind.len())
            .field("resources", &c.len())
            .finish()
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
        for_each_match(&self.read(), kind, query, f);
    }

    /// The resources of `kind` matching `query`, in id order.
    pub(crate) fn list(&self, kind: &Kind, query: &LabelQuery) -> Vec<AnyResource> {
        list(&self.read(), kind, query)
    }

    /// Visits the resources of type `resource_type` matching `query` in
    /// every namespace, in (namespace, id) order (under the read lock: `f`
    /// must not call back into the cache).
    pub(crate) fn for_each_match_all_namespaces(
        &self,
        resource_type: &str,
        query: &LabelQuery,
        f: impl FnMut(&AnyResource),
    ) {
        for_each_match_all_namespaces(&self.read(), resource_type, query, f);
    }

    pub(crate) fn put(&self, resource: AnyResource) {
        self.write().collection_mut(resource.pointer().kind()).put(resource);
    }

    /// The resource at `ptr` and where it is, for [`put_at`](Self::put_at):
    /// a read-modify-write that runs user code between its read and its
    /// write (so not under the lock, as [`with_slot`](Self::with_slot)
    /// would) still looks the id up once.
    pub(crate) fn get_at(&self, ptr: &Pointer) -> Option<(u32, AnyResource)> {
        let c = self.read();
        let (slot, resource) = c.by_kind.get(ptr.kind())?.get_at(ptr.id())?;
        Some((slot, resource.clone()))
    }

    /// Stores `resource` (of the same address) in place of `read`, found in
    /// `slot` by [`get_at`](Self::get_at); if the slot no longer holds it,
    /// as [`put`](Self::put) does.
    pub(crate) fn put_at(&self, slot: u32, read: &AnyResource, resource: AnyResource) {
        let mut guard = self.write();
        match guard.by_kind.get_mut(resource.pointer().kind()) {
            Some(collection) => collection.put_at(slot, read, resource),
            None => guard.collection_mut(resource.pointer().kind()).put(resource),
        }
    }

    pub(crate) fn with_slot<R>(
        &self,
        ptr: &Pointer,
        f: impl FnOnce(Option<&AnyResource>) -> (SlotEdit, R),
    ) -> R {
        let mut guard = self.write();
        match guard.by_kind.get_mut(ptr.kind()) {
            Some(collection) => collection.edit(ptr.id(), f),
            None => {
                let (slot, result) = f(None);
                if let SlotEdit::Put(resource) = slot {
                    guard.collection_mut(resource.pointer().kind()).put(resource);
                }
                result
            }
        }
    }

    /// Stores `stamp(resource, interned kind)` unless its id is taken (then
    /// `resource` comes back); one lock and one lookup of the kind.
    pub(crate) fn insert_new_with(
        &self,
        resource: AnyResource,
        stamp: impl FnOnce(AnyResource, &Kind) -> AnyResource,
    ) -> Result<AnyResource, AnyResource> {
        let mut guard = self.write();
        let (kind, collection) = guard.collection_entry(resource.pointer().kind());
        collection.insert_new(resource, |resource| stamp(resource, kind))
    }

    pub(crate) fn remove(&self, ptr: &Pointer) -> Option<AnyResource> {
        self.write().by_kind.get_mut(ptr.kind())?.remove(ptr.id())
    }

    /// Shrinks `kind`'s collection to what it holds, if it is mostly empty
    /// (see [`Collection::compacted`]).
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn compact(&self, kind: &Kind) {
        let mut guard = self.write();
        if let Some(collection) = guard.by_kind.get_mut(kind)
            && let Some(fresh) = collection.compacted()
        {
            *collection = fresh;
        }
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
        let mut out = Vec::with_capacity(c.len());
        for collection in c.by_kind.values() {
            out.extend(collection.iter().map(|r| r.pointer().clone()));
        }
        out
    }

    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }
}

fn get(c: &Collections, ptr: &Pointer) -> Option<AnyResource> {
    c.by_kind.get(ptr.kind())?.get(ptr.id()).cloned()
}

/// Visits the resources of `kind` matching `query`, in id order.
fn for_each_match(c: &Collections, kind: &Kind, query: &LabelQuery, f: impl FnMut(&AnyResource)) {
    if let Some(collection) = c.by_kind.get(kind) {
        collection.for_each_match(query, f);
    }
}

/// The resources of `kind` matching `query`, in id order.
fn list(c: &Collections, kind: &Kind, query: &LabelQuery) -> Vec<AnyResource> {
    let mut out = Vec::new();
    for_each_match(c, kind, query, |r| out.push(r.clone()));
    out
}

/// Visits the resources of type `resource_type` matching `query` in every
/// namespace, in (namespace, id) order: the kinds of that type sorted by
/// namespace, each in id order. A pass over the kinds (not the resources)
/// finds them: a state holds far fewer kinds than resources.
fn for_each_match_all_namespaces(
    c: &Collections,
    resource_type: &str,
    query: &LabelQuery,
    mut f: impl FnMut(&AnyResource),
) {
    let mut kinds: Vec<(&Kind, &Collection)> =
        c.by_kind.iter().filter(|(k, _)| k.resource_type() == resource_type).collect();
    kinds.sort_unstable_by(|(a, _), (b, _)| a.namespace().cmp(b.namespace()));
    for (_, collection) in kinds {
        collection.for_each_match(query, &mut f);
    }
}

/// The resources of type `resource_type` matching `query` in every
/// namespace, in (namespace, id) order.
fn list_all_namespaces(
    c: &Collections,
    resource_type: &str,
    query: &LabelQuery,
) -> Vec<AnyResource> {
    let mut out = Vec::new();
    for_each_match_all_namespaces(c, resource_type, query, |r| out.push(r.clone()));
    out
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
///   request to the actor, which serves it like any request (reads of
///   staged kinds wait for the commit; a closed state answers
///   `Unavailable`).
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
        self.read().map(|c| list(&c, kind, query))
    }

    /// The resources of type `resource_type` matching `query` in every
    /// namespace, in (namespace, id) order; `None` when the view is not
    /// readable now.
    pub(crate) fn list_all_namespaces(
        &self,
        resource_type: &str,
        query: &LabelQuery,
    ) -> Option<Vec<AnyResource>> {
        self.read().map(|c| list_all_namespaces(&c, resource_type, query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_specs::{Num, Text};
    use crate::resource::{Resource, Spec};

    fn put(cache: &Cache, ns: &str, id: &str) {
        cache.put(Resource::new(ns, id, Num(1)).into_any());
    }

    fn addresses(listed: &[AnyResource]) -> Vec<String> {
        listed.iter().map(|r| format!("{}/{}", r.pointer().namespace(), r.id())).collect()
    }

    #[test]
    fn a_list_across_namespaces_is_sorted_by_namespace_then_id_and_keeps_to_its_type() {
        let cache = Cache::default();
        for (ns, id) in [("b", "2"), ("a", "9"), ("b", "1"), ("c", "0"), ("a", "3")] {
            put(&cache, ns, id);
        }
        cache.put(Resource::new("a", "other", Text("x".into())).into_any());
        let listed = cache.view().list_all_namespaces(Num::TYPE, &LabelQuery::all()).unwrap();
        assert_eq!(addresses(&listed), ["a/3", "a/9", "b/1", "b/2", "c/0"]);
        assert!(
            cache
                .view()
                .list_all_namespaces("Nothing.example", &LabelQuery::all())
                .unwrap()
                .is_empty()
        );
    }
}
