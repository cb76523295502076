//! [`Collection`]: the resources of one kind, found by id in O(1) and listed
//! in id order.
//!
//! The state looks resources up by id on every request (a get, the current
//! copy a modify starts from, the existence check of a create) and lists a
//! kind far less often. A sorted tree pays for the order on every lookup: a
//! few dozen id comparisons, each a pointer chase to the id's bytes. Here
//! lookups go through a hash index, and the order is kept apart and brought
//! up to date only when someone lists (or when it would otherwise hold too
//! many stale entries):
//!
//! - resources live in a slab of slots; a freed slot is reused;
//! - the index hashes ids to slots;
//! - the order is a sorted list of `(slot, generation)` plus the slots added
//!   since it was last sorted; a slot's generation moves on when it is
//!   freed, so an entry that outlived its resource is recognised and dropped.
//!
//! A create, an update, a destroy and a lookup cost a hash and a probe; a
//! list sorts what was added since the last one, merges it in and reads the
//! slots in order. A list by an equality or set label term reads only the
//! slots a [`LabelIndex`] names for it, sorted by id.

use std::hash::BuildHasher;
use std::sync::{Mutex, PoisonError};

use hashbrown::HashTable;

use super::label_index::LabelIndex;
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

/// An entry of the index: a slot, and the hash of its id (32 bits), so the
/// index grows and probes without reading the resources.
type Indexed = (u32, u32);

/// The id order of a collection, brought up to date lazily.
#[derive(Debug, Default)]
struct Order {
    /// Sorted by id; may still hold entries of removed resources.
    sorted: Vec<Entry>,
    /// Added since `sorted` was last brought up to date, in no order.
    added: Vec<Entry>,
    /// Removals since then: entries of `sorted` and `added` that may be stale.
    removed: usize,
}

/// The resources of one kind (see the [module docs](self)).
#[derive(Default)]
pub(crate) struct Collection {
    slots: Vec<Option<AnyResource>>,
    /// Per slot: moves on each time the slot is freed.
    generations: Vec<u32>,
    free: Vec<u32>,
    /// Slot numbers, hashed by the id of the resource in the slot.
    index: HashTable<Indexed>,
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

/// The 32-bit hash of an id that the index keeps.
fn hash_id(id: &str) -> u32 {
    (rustc_hash::FxBuildHasher.hash_one(id) >> 32) as u32
}

/// The table's 64-bit hash, from the kept 32 bits alone (its top bits and
/// its low bits both depend on all of them).
fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The resource in `slot` (every slot the index or a live entry names is full).
fn stored(slots: &[Option<AnyResource>], slot: u32) -> &AnyResource {
    slots[slot as usize].as_ref().expect("an indexed slot holds a resource")
}

/// Whether an index entry is the one of `id` (of hash `hash`): the kept hash
/// first, so that most misses never read the resource.
fn is_id<'a>(
    slots: &'a [Option<AnyResource>],
    hash: u32,
    id: &'a str,
) -> impl Fn(&Indexed) -> bool + 'a {
    move |&(s, h)| h == hash && stored(slots, s).id() == id
}

impl Collection {
    /// How many resources it holds.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    fn slot_of(&self, hash: u32, id: &str) -> Option<u32> {
        self.index.find(spread(hash), is_id(&self.slots, hash, id)).map(|e| e.0)
    }

    /// The resource with this id.
    pub(crate) fn get(&self, id: &str) -> Option<&AnyResource> {
        self.slot_of(hash_id(id), id).map(|s| stored(&self.slots, s))
    }

    /// Stores `resource` in a free slot, indexes it and queues it for the order.
    fn add(&mut self, hash: u32, resource: AnyResource) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(resource);
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 resources");
                self.slots.push(Some(resource));
                self.generations.push(0);
                slot
            }
        };
        self.index.insert_unique(spread(hash), (slot, hash), |&(_, h)| spread(h));
        self.labels.insert(slot, stored(&self.slots, slot).metadata().labels());
        let generation = self.generations[slot as usize];
        self.order_mut().added.push((slot, generation));
        self.compact_if_stale();
    }

    /// Stores `resource` in the full `slot` (of the same id), in place of
    /// the one there.
    fn replace(&mut self, slot: u32, resource: AnyResource) {
        let old = stored(&self.slots, slot).metadata().labels();
        self.labels.replace(slot, old, resource.metadata().labels());
        self.slots[slot as usize] = Some(resource);
    }

    /// Frees `slot` (already out of the index) and returns what it held.
    fn free_slot(&mut self, slot: u32) -> AnyResource {
        let resource = self.slots[slot as usize].take().expect("a stored slot");
        self.labels.remove(slot, resource.metadata().labels());
        let generation = &mut self.generations[slot as usize];
        *generation = generation.wrapping_add(1);
        self.free.push(slot);
        self.order_mut().removed += 1;
        self.compact_if_stale();
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
        let found = self.index.find_entry(spread(hash), is_id(&self.slots, hash, id)).ok()?;
        let ((slot, _), _) = found.remove();
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
        let Ok(found) = self.index.find_entry(spread(hash), is_id(&self.slots, hash, id)) else {
            let (edit, result) = f(None);
            if let SlotEdit::Put(resource) = edit {
                self.add(hash, resource);
            }
            return result;
        };
        let slot = found.get().0;
        let (edit, result) = f(Some(stored(&self.slots, slot)));
        match edit {
            SlotEdit::Keep => {}
            SlotEdit::Put(resource) => self.replace(slot, resource),
            SlotEdit::Remove => {
                found.remove();
                self.free_slot(slot);
            }
        }
        result
    }

    /// Every resource, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &AnyResource> {
        self.slots.iter().flatten()
    }

    /// Visits every resource in id order.
    pub(crate) fn for_each_sorted(&self, mut f: impl FnMut(&AnyResource)) {
        // A reader that panicked while it held the order left it as its last
        // completed step did (every step keeps it consistent): carry on.
        let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        refresh(&mut order, &self.slots, &self.generations);
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

    /// Brings the order up to date when it holds more pending and stale
    /// entries than twice the live ones: a kind that is written and never
    /// listed keeps a bounded order (amortized O(1) a write).
    fn compact_if_stale(&mut self) {
        let live = self.index.len();
        let order = self.order.get_mut().unwrap_or_else(PoisonError::into_inner);
        if order.added.len() + order.removed > 2 * live + 64 {
            refresh(order, &self.slots, &self.generations);
        }
    }
}

/// Drops stale entries, sorts what was added and merges it into `sorted`.
fn refresh(order: &mut Order, slots: &[Option<AnyResource>], generations: &[u32]) {
    if order.removed > 0 {
        let live = |&(slot, generation): &Entry| generations[slot as usize] == generation;
        order.sorted.retain(live);
        order.added.retain(live);
        order.removed = 0;
    }
    if order.added.is_empty() {
        return;
    }
    let id = |&(slot, _): &Entry| stored(slots, slot).id();
    // Sorted with each id read once: a comparison through the slots reads
    // two resources (a pointer chase each) where one of the pairs compares
    // two slices. A first list of 100,000 ids: 34 -> 24 ms.
    let mut keyed: Vec<(&str, Entry)> = order.added.iter().map(|e| (id(e), *e)).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(b.0));
    order.added.clear();
    order.added.extend(keyed.into_iter().map(|(_, e)| e));
    let starts_after = match (order.sorted.last(), order.added.first()) {
        (Some(last), Some(first)) => id(last) < id(first),
        _ => true,
    };
    if starts_after {
        order.sorted.append(&mut order.added);
        return;
    }
    let mut merged = Vec::with_capacity(order.sorted.len() + order.added.len());
    let (mut old, mut new) = (order.sorted.iter().peekable(), order.added.iter().peekable());
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
    order.added.clear();
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
        let mut r = Resource::at(Pointer::of::<N>("ns", id), N(value));
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
    fn a_re_created_id_is_listed_once() {
        let mut c = Collection::default();
        c.put(res("x", 1));
        assert_eq!(ids(&c), ["x"]);
        c.remove("x");
        c.put(res("x", 2));
        assert_eq!(ids(&c), ["x"], "the old entry is stale, not listed twice");
    }

    #[test]
    fn an_order_nobody_reads_stays_bounded() {
        let mut c = Collection::default();
        for round in 0..10_000 {
            let id = format!("r{}", round % 8);
            c.put(res(&id, round));
            if round % 3 == 0 {
                c.remove(&id);
            }
        }
        let order = c.order.get_mut().unwrap();
        assert!(order.sorted.len() + order.added.len() <= 2 * 8 + 64 + 1, "{order:?}");
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
