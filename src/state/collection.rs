//! [`Collection`]: the resources of one kind, found by id in O(1) and listed
//! in id order.
//!
//! The state looks resources up by id on every request (a get, the current
//! copy a modify starts from, the existence check of a create) and lists a
//! kind far less often. A sorted tree pays for the order on every lookup: a
//! few dozen id comparisons, each a pointer chase to the id's bytes. Here
//! lookups go through a hash index, and the order is kept apart and brought
//! up to date only when someone lists:
//!
//! - resources live in a [`Slab`] of slots, which grows without moving
//!   them; a freed slot is reused;
//! - the [`IdIndex`] hashes ids to slots, and grows a few entries per insert;
//! - the order is a sorted list of `(slot, generation)`, brought up to date
//!   by the first list after a write (the slots whose resource is not in it
//!   yet are sorted and merged in); a slot's generation moves on when it is
//!   freed, so an entry that outlived its resource is recognised and dropped.
//!   A write only counts itself for the order: a kind nobody lists keeps none.
//!
//! A create, an update, a destroy and a lookup cost a hash and a probe, and
//! no write pays for copying or rehashing what the kind holds: the slab and
//! the index grow without either, so the state's latency has no spike at the
//! sizes where a `Vec` or a hash table would double. A list after writes
//! finds what they added (one pass over the slots), sorts it, merges it in
//! and reads the slots in order. A list by an equality or set label term
//! reads only the slots a [`LabelIndex`] names for it, sorted by id.

use std::sync::{Mutex, PoisonError};

use super::id_index::IdIndex;
use super::label_index::LabelIndex;
use super::slab::{Slab, Slot};
use crate::resource::{AnyResource, LabelQuery};

/// What [`Collection::edit`] does with a resource's slot.
#[derive(Debug)]
pub(crate) enum SlotEdit {
    /// Leave it as it is.
    Keep,
    /// Store this resource there.
    Put(AnyResource),
    /// Remove what is there.
    Remove,
}

/// A place in the id order: a slot, and the generation it had when its
/// resource was added.
type Entry = (u32, u32);

/// The id order of a collection, brought up to date lazily.
#[derive(Debug, Default)]
struct Order {
    /// Sorted by id; may still hold entries of removed resources.
    sorted: Vec<Entry>,
    /// Per slot: the generation of its entry in `sorted`, if it has one.
    in_sorted: Vec<Option<u32>>,
    /// Resources added since `sorted` was last brought up to date.
    added: usize,
    /// Removals since then: entries of `sorted` that may be stale.
    removed: usize,
}

/// The resources of one kind (see the [module docs](self)).
#[derive(Default)]
pub(crate) struct Collection {
    /// Each with its generation (moves on each time the slot is freed) and
    /// the kept hash of its resource's id.
    slots: Slab<AnyResource>,
    free: Vec<u32>,
    /// Slot numbers, hashed by the id of the resource in the slot.
    index: IdIndex,
    /// Locked by readers that list (they hold the cache's read lock, so the
    /// writer, with `&mut self`, never waits for it).
    order: Mutex<Order>,
    /// Slots by label, for lists by label.
    labels: LabelIndex,
}

impl std::fmt::Debug for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection").field("len", &self.len()).finish_non_exhaustive()
    }
}

/// A list reads the label index's candidates when they are at most this
/// fraction of the kind (sorting `m` of them costs `m log m` comparisons of
/// ids; reading the kind in order, one label check per resource).
const NARROW: usize = 8;

/// The 32-bit hash of an id that the index keeps: seeded per process
/// ([`crate::hashing`]), since clients choose ids.
fn hash_id(id: &str) -> u32 {
    (crate::hashing::kept(id) >> 32) as u32
}

/// The resource in `slot` (every slot the index or a live entry names is full).
fn stored(slots: &Slab<AnyResource>, slot: u32) -> &AnyResource {
    slots.get(slot as usize).value.as_ref().expect("an indexed slot holds a resource")
}

impl Collection {
    /// How many resources it holds.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The same resources in a collection sized for them, if at most half
    /// of its slots are full (after most of a kind was forgotten at once,
    /// its slots and index would otherwise stay sized for all of it).
    pub(crate) fn compacted(&self) -> Option<Collection> {
        if self.len() * 2 > self.slots.len() {
            return None;
        }
        let mut fresh = Collection::default();
        for resource in self.iter() {
            fresh.put(resource.clone());
        }
        Some(fresh)
    }

    /// The slot of `id` (of hash `hash`); the index compares kept hashes
    /// first, so that most misses never read a resource.
    fn slot_of(&self, hash: u32, id: &str) -> Option<u32> {
        self.index.find(hash, |slot| stored(&self.slots, slot).id() == id)
    }

    /// The resource with this id.
    pub(crate) fn get(&self, id: &str) -> Option<&AnyResource> {
        self.get_at(id).map(|(_, resource)| resource)
    }

    /// The resource with this id and its slot, for [`put_at`](Self::put_at).
    pub(crate) fn get_at(&self, id: &str) -> Option<(u32, &AnyResource)> {
        self.slot_of(hash_id(id), id).map(|s| (s, stored(&self.slots, s)))
    }

    /// Stores `resource` in `slot` when that slot still holds `read` (the
    /// copy [`get_at`](Self::get_at) returned); otherwise as [`put`](Self::put)
    /// does. The check is a pointer comparison: no hash, no probe.
    pub(crate) fn put_at(&mut self, slot: u32, read: &AnyResource, resource: AnyResource) {
        let holds_read = (slot as usize) < self.slots.len()
            && self.slots.get(slot as usize).value.as_ref().is_some_and(|s| s.ptr_eq(read));
        if holds_read {
            self.replace(slot, resource);
        } else {
            self.put(resource);
        }
    }

    /// Stores `resource` in a free slot, indexes it and queues it for the order.
    fn add(&mut self, hash: u32, resource: AnyResource) {
        let slot = match self.free.pop() {
            Some(slot) => {
                let free = self.slots.get_mut(slot as usize);
                free.value = Some(resource);
                free.hash = hash;
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 resources");
                self.slots.push(Slot { value: Some(resource), generation: 0, hash });
                slot
            }
        };
        self.index.insert(hash, slot, &self.slots);
        self.labels.insert(slot, stored(&self.slots, slot).metadata().labels());
        self.order_mut().added += 1;
    }

    /// Stores `resource` in the full `slot` (of the same id), in place of
    /// the one there.
    fn replace(&mut self, slot: u32, resource: AnyResource) {
        let old = stored(&self.slots, slot).metadata().labels();
        self.labels.replace(slot, old, resource.metadata().labels());
        self.slots.get_mut(slot as usize).value = Some(resource);
    }

    /// Frees `slot` (already out of the index) and returns what it held.
    fn free_slot(&mut self, slot: u32) -> AnyResource {
        let freed = self.slots.get_mut(slot as usize);
        let resource = freed.value.take().expect("a stored slot");
        freed.generation = freed.generation.wrapping_add(1);
        self.labels.remove(slot, resource.metadata().labels());
        self.free.push(slot);
        self.order_mut().removed += 1;
        resource
    }

    /// Stores `stamp(resource)` unless the id is taken (then `resource`
    /// comes back); returns what it stored.
    pub(crate) fn insert_new(
        &mut self,
        resource: AnyResource,
        stamp: impl FnOnce(AnyResource) -> AnyResource,
    ) -> Result<AnyResource, AnyResource> {
        let hash = hash_id(resource.id());
        if self.slot_of(hash, resource.id()).is_some() {
            return Err(resource);
        }
        let stamped = stamp(resource);
        self.add(hash, stamped.clone());
        Ok(stamped)
    }

    /// Stores `resource`, replacing the one with the same id.
    pub(crate) fn put(&mut self, resource: AnyResource) {
        let hash = hash_id(resource.id());
        match self.slot_of(hash, resource.id()) {
            Some(slot) => self.replace(slot, resource),
            None => self.add(hash, resource),
        }
    }

    /// Removes and returns the resource with this id.
    pub(crate) fn remove(&mut self, id: &str) -> Option<AnyResource> {
        let hash = hash_id(id);
        let slot = self.slot_of(hash, id)?;
        self.index.remove(hash, slot);
        Some(self.free_slot(slot))
    }

    /// Lets `f` decide what becomes of the resource with this id (`None`:
    /// there is none), with one lookup.
    pub(crate) fn edit<R>(
        &mut self,
        id: &str,
        f: impl FnOnce(Option<&AnyResource>) -> (SlotEdit, R),
    ) -> R {
        let hash = hash_id(id);
        let Some(slot) = self.slot_of(hash, id) else {
            let (edit, result) = f(None);
            if let SlotEdit::Put(resource) = edit {
                self.add(hash, resource);
            }
            return result;
        };
        let (edit, result) = f(Some(stored(&self.slots, slot)));
        match edit {
            SlotEdit::Keep => {}
            SlotEdit::Put(resource) => self.replace(slot, resource),
            SlotEdit::Remove => {
                self.index.remove(hash, slot);
                self.free_slot(slot);
            }
        }
        result
    }

    /// Every resource, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &AnyResource> {
        self.slots.iter().filter_map(|slot| slot.value.as_ref())
    }

    /// Visits every resource in id order.
    pub(crate) fn for_each_sorted(&self, mut f: impl FnMut(&AnyResource)) {
        // A reader that panicked while it held the order left it as its last
        // completed step did (every step keeps it consistent): carry on.
        let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        refresh(&mut order, &self.slots);
        for &(slot, _) in &order.sorted {
            f(stored(&self.slots, slot));
        }
    }

    /// Visits the resources matching `query` in id order: the candidates
    /// the label index names, when it names few enough that sorting them
    /// costs less than reading the kind in order; otherwise every resource.
    pub(crate) fn for_each_match(&self, query: &LabelQuery, mut f: impl FnMut(&AnyResource)) {
        let matches = |r: &AnyResource| query.matches(r.metadata().labels());
        match self.labels.candidates(query) {
            Some(mut slots) if slots.len() <= self.len() / NARROW => {
                let id = |slot: u32| stored(&self.slots, slot).id();
                slots.retain(|&slot| matches(stored(&self.slots, slot)));
                slots.sort_unstable_by(|&a, &b| id(a).cmp(id(b)));
                slots.into_iter().for_each(|slot| f(stored(&self.slots, slot)));
            }
            _ => self.for_each_sorted(|r| {
                if matches(r) {
                    f(r);
                }
            }),
        }
    }

    fn order_mut(&mut self) -> &mut Order {
        self.order.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Drops stale entries, sorts what was added and merges it into `sorted`.
fn refresh(order: &mut Order, slots: &Slab<AnyResource>) {
    if order.removed > 0 {
        let Order { sorted, in_sorted, .. } = &mut *order;
        sorted.retain(|&(slot, generation)| {
            let live = slots.get(slot as usize).generation == generation;
            if !live {
                // So that the slot's next resource is never taken for this
                // one, even once its generation wrapped around to it.
                in_sorted[slot as usize] = None;
            }
            live
        });
        order.removed = 0;
    }
    if order.added == 0 {
        return;
    }
    order.added = 0;
    order.in_sorted.resize(slots.len(), None);
    // Sorted with each id read once: a comparison through the slots reads
    // two resources (a pointer chase each) where one of the pairs compares
    // two slices, and a sort makes n log n comparisons.
    let mut keyed: Vec<(&str, Entry)> = Vec::new();
    for ((slot, stored), in_sorted) in slots.iter().enumerate().zip(&mut order.in_sorted) {
        if let Some(resource) = &stored.value
            && *in_sorted != Some(stored.generation)
        {
            *in_sorted = Some(stored.generation);
            let slot = u32::try_from(slot).expect("slot numbers fit in 32 bits");
            keyed.push((resource.id(), (slot, stored.generation)));
        }
    }
    keyed.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let added: Vec<Entry> = keyed.into_iter().map(|(_, e)| e).collect();
    let id = |&(slot, _): &Entry| stored(slots, slot).id();
    let starts_after = match (order.sorted.last(), added.first()) {
        (Some(last), Some(first)) => id(last) < id(first),
        _ => true,
    };
    if starts_after {
        order.sorted.extend(added);
        return;
    }
    let mut merged = Vec::with_capacity(order.sorted.len() + added.len());
    let (mut old, mut new) = (order.sorted.iter().peekable(), added.iter().peekable());
    while let (Some(a), Some(b)) = (old.peek(), new.peek()) {
        if id(a) <= id(b) {
            merged.push(**a);
            old.next();
        } else {
            merged.push(**b);
            new.next();
        }
    }
    merged.extend(old);
    merged.extend(new);
    order.sorted = merged;
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::resource::{Pointer, Resource, Spec};

    #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct N(i64);

    impl Spec for N {
        const TYPE: &'static str = "Ns.test.cosi.dev";
    }

    /// The label `g` a resource of value `value` carries, if any: one of 16
    /// values, so a list by one of them reads the label index's candidates.
    fn group(value: i64) -> Option<String> {
        (value % 5 != 0).then(|| (value % 16).to_string())
    }

    fn res(id: &str, value: i64) -> AnyResource {
        let mut r = Resource::at(Pointer::typed::<N>("ns", id).erase(), N(value));
        if let Some(g) = group(value) {
            r.metadata_mut().labels_mut().insert("g", g);
        }
        r.into_any()
    }

    fn ids(c: &Collection) -> Vec<String> {
        let mut out = Vec::new();
        c.for_each_sorted(|r| out.push(r.id().to_owned()));
        out
    }

    #[test]
    fn lookups_find_by_id_and_listing_comes_out_sorted() {
        let mut c = Collection::default();
        for id in ["b", "a", "c"] {
            assert!(c.insert_new(res(id, 1), |r| r).is_ok());
        }
        assert!(c.insert_new(res("a", 2), |r| r).is_err(), "a taken id is refused");
        assert_eq!(ids(&c), ["a", "b", "c"]);
        c.put(res("a", 3));
        assert_eq!(c.get("a").map(AnyResource::id), Some("a"));
        assert!(c.remove("b").is_some());
        assert!(c.get("b").is_none());
        assert!(c.insert_new(res("aa", 1), |r| r).is_ok(), "the freed slot is reused");
        assert_eq!(ids(&c), ["a", "aa", "c"]);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn a_mostly_emptied_collection_compacts_to_the_same_resources() {
        let mut c = Collection::default();
        for i in 0..100 {
            c.put(res(&format!("r{i:03}"), i));
        }
        assert!(c.compacted().is_none(), "a full collection stays as it is");
        for i in (0..100).filter(|i| i % 10 != 0) {
            c.remove(&format!("r{i:03}"));
        }
        let fresh = c.compacted().expect("a tenth of its slots are full");
        assert!(fresh.slots.len() < c.slots.len());
        assert_eq!(ids(&fresh), ids(&c));
        assert_eq!(fresh.len(), 10);
        let mut by_label = Vec::new();
        fresh.for_each_match(&LabelQuery::all().equal("g", "4"), |r| {
            by_label.push(r.id().to_owned())
        });
        let mut want = Vec::new();
        c.for_each_match(&LabelQuery::all().equal("g", "4"), |r| want.push(r.id().to_owned()));
        assert_eq!(by_label, want, "the label index is rebuilt too");
        assert_eq!(fresh.get("r050").map(AnyResource::id), Some("r050"));
    }

    #[test]
    fn a_write_to_the_slot_it_read_from_lands_there_and_a_stale_slot_is_looked_up_again() {
        let mut c = Collection::default();
        c.put(res("a", 1));
        c.put(res("b", 2));
        let (slot, read) = c.get_at("a").map(|(s, r)| (s, r.clone())).unwrap();
        c.put_at(slot, &read, res("a", 3));
        assert_eq!(c.get("a").unwrap().typed::<N>().unwrap().spec(), &N(3));
        // The slot now holds another resource (a was removed and b took its
        // slot): the write goes to a's id, wherever it is, not to the slot.
        c.remove("b");
        c.remove("a");
        c.put(res("b", 4));
        assert_eq!(c.get_at("b").unwrap().0, slot, "the freed slot is reused");
        c.put_at(slot, &read, res("a", 5));
        assert_eq!(c.get("a").unwrap().typed::<N>().unwrap().spec(), &N(5));
        assert_eq!(c.get("b").unwrap().typed::<N>().unwrap().spec(), &N(4));
        // A slot number past the end is no slot.
        c.put_at(u32::MAX, &read, res("c", 6));
        assert_eq!(ids(&c), ["a", "b", "c"]);
    }

    #[test]
    fn a_re_created_id_is_listed_once() {
        let mut c = Collection::default();
        c.put(res("x", 1));
        assert_eq!(ids(&c), ["x"]);
        c.remove("x");
        c.put(res("x", 2));
        assert_eq!(ids(&c), ["x"], "the old entry is stale, not listed twice");
    }

    #[test]
    fn a_kind_nobody_lists_keeps_no_order() {
        let mut c = Collection::default();
        for round in 0..10_000 {
            let id = format!("r{}", round % 8);
            c.put(res(&id, round));
            if round % 3 == 0 {
                c.remove(&id);
            }
        }
        let order = c.order.get_mut().unwrap();
        assert!(order.sorted.is_empty() && order.in_sorted.is_empty(), "{order:?}");
        assert_eq!(ids(&c).len(), c.len(), "the first list brings it up to date");
    }

    /// One step of the model test.
    #[derive(Clone, Debug)]
    enum Op {
        InsertNew(u8),
        Put(u8),
        Remove(u8),
        Edit(u8, u8),
        List,
        /// A list by `g == a`, or (with `b`) `g in (a, b)`.
        ListBy(u8, Option<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            any::<u8>().prop_map(Op::InsertNew),
            any::<u8>().prop_map(Op::Put),
            any::<u8>().prop_map(Op::Remove),
            (any::<u8>(), 0..3u8).prop_map(|(k, e)| Op::Edit(k, e)),
            Just(Op::List),
            (0..17u8, proptest::option::of(0..17u8)).prop_map(|(a, b)| Op::ListBy(a, b)),
        ]
    }

    proptest! {
        /// Against a sorted map: the same answers to every lookup, and the
        /// same listing (by label too), whatever the order of inserts,
        /// replacements, removals and lists.
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec(op(), 0..400)) {
            let mut c = Collection::default();
            let mut model: BTreeMap<String, i64> = BTreeMap::new();
            for (step, op) in ops.into_iter().enumerate() {
                let step = step as i64;
                // Few distinct ids (ids collide often) in a spread of lengths.
                let id = |k: u8| format!("{}{}", "k".repeat(usize::from(k % 3) + 1), k % 24);
                match op {
                    Op::InsertNew(k) => {
                        let fresh = !model.contains_key(&id(k));
                        prop_assert_eq!(c.insert_new(res(&id(k), step), |r| r).is_ok(), fresh);
                        model.entry(id(k)).or_insert(step);
                    }
                    Op::Put(k) => {
                        c.put(res(&id(k), step));
                        model.insert(id(k), step);
                    }
                    Op::Remove(k) => {
                        prop_assert_eq!(c.remove(&id(k)).is_some(), model.remove(&id(k)).is_some());
                    }
                    Op::Edit(k, e) => {
                        let existed = c.edit(&id(k), |current| {
                            let edit = match e {
                                0 => SlotEdit::Keep,
                                1 => SlotEdit::Put(res(&id(k), step)),
                                _ => SlotEdit::Remove,
                            };
                            match (&edit, current) {
                                (SlotEdit::Remove, None) => (SlotEdit::Keep, false),
                                (_, current) => (edit, current.is_some()),
                            }
                        });
                        prop_assert_eq!(existed, model.contains_key(&id(k)));
                        match e {
                            0 => {}
                            1 => { model.insert(id(k), step); }
                            _ => { model.remove(&id(k)); }
                        }
                    }
                    Op::List => {
                        let expected: Vec<String> = model.keys().cloned().collect();
                        prop_assert_eq!(ids(&c), expected);
                    }
                    Op::ListBy(a, b) => {
                        let values: Vec<String> = [Some(a), b].into_iter().flatten().map(|v| v.to_string()).collect();
                        let query = match b {
                            None => LabelQuery::all().equal("g", values[0].clone()),
                            Some(_) => LabelQuery::all().in_values("g", values.clone()),
                        };
                        let expected: Vec<String> = model
                            .iter()
                            .filter(|(_, v)| group(**v).is_some_and(|g| values.contains(&g)))
                            .map(|(k, _)| k.clone())
                            .collect();
                        let mut listed = Vec::new();
                        c.for_each_match(&query, |r| listed.push(r.id().to_owned()));
                        prop_assert_eq!(listed, expected);
                    }
                }
                prop_assert_eq!(c.len(), model.len());
                for (k, v) in &model {
                    let found = c.get(k).map(|r| r.typed::<N>().unwrap().spec().0);
                    prop_assert_eq!(found, Some(*v));
                }
            }
            let expected: Vec<String> = model.keys().cloned().collect();
            prop_assert_eq!(ids(&c), expected);
        }
    }
}
