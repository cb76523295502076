//! [`IdIndex`]: a [`Collection`](super::collection::Collection)'s ids hashed
//! to its slots, grown a few entries per insert.
//!
//! A hash table that is full rehashes every entry into a table twice its size
//! on the insert that found it full: tens of milliseconds on the state actor
//! at a million resources of a kind, and every request waits for the state
//! actor. This index instead starts the larger table then, inserts
//! there, and copies a few entries of the old one over on each insert (which
//! ones it reads from the slots, in slot order, each carrying its id's kept
//! hash), so that the old table is copied, and dropped, well before the new
//! one is full. Meanwhile a lookup probes the new table and then the old one.

use hashbrown::HashTable;

use super::slab::Slab;

/// An entry: a slot, and the 32-bit hash of its id that the slot keeps too.
type Indexed = (u32, u32);

/// The table's 64-bit hash, from the kept 32 bits alone (its top bits and
/// its low bits both depend on all of them).
fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn rehash(&(_, hash): &Indexed) -> u64 {
    spread(hash)
}

/// The table being copied into the new one.
#[derive(Debug)]
struct Growing {
    old: HashTable<Indexed>,
    /// The next slot to copy. Below it, every indexed slot is in the new
    /// table (and may be in the old one still); from it up to `end`, in the
    /// old table only (see [`IdIndex::insert`]).
    next: usize,
    /// The slots when growing began: every entry of `old` names one below it.
    end: usize,
    /// Slots copied per insert: enough that the copy ends long before the
    /// inserts since growing began could fill the new table.
    step: usize,
    /// The slot whose insert began growing (into the new table already),
    /// unless it was removed since.
    skip: Option<u32>,
}

/// Ids hashed to slots (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct IdIndex {
    table: HashTable<Indexed>,
    growing: Option<Growing>,
    /// How many slots are indexed (while growing, some are in both tables).
    len: usize,
}

impl IdIndex {
    /// How many ids it holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The slot of the id of hash `hash` for which `is` says yes.
    #[inline]
    pub(crate) fn find(&self, hash: u32, is: impl Fn(u32) -> bool) -> Option<u32> {
        let matches = |&(slot, h): &Indexed| h == hash && is(slot);
        let found = self.table.find(spread(hash), matches);
        let found = found.or_else(|| self.growing.as_ref()?.old.find(spread(hash), matches));
        found.map(|&(slot, _)| slot)
    }

    /// Indexes `slot` (not indexed yet) under `hash`, and moves on any
    /// growing under way; `slots` are the collection's, `slot` among them.
    #[inline]
    pub(crate) fn insert<T>(&mut self, hash: u32, slot: u32, slots: &Slab<T>) {
        self.len += 1;
        let entry = (slot, hash);
        match &mut self.growing {
            // A slot the copy has not reached (freed, then filled again) is
            // indexed where the copy will find it.
            Some(g) if (g.next..g.end).contains(&(slot as usize)) => {
                g.old.insert_unique(spread(hash), entry, rehash);
            }
            growing => {
                // Full: this insert would rehash everything; grow instead.
                if growing.is_none()
                    && self.table.len() == self.table.capacity()
                    && !self.table.is_empty()
                {
                    self.start_growing(slots.len(), slot);
                }
                debug_assert!(
                    self.growing.is_none() || self.table.len() < self.table.capacity(),
                    "the copy ends before the new table fills"
                );
                self.table.insert_unique(spread(hash), entry, rehash);
            }
        }
        self.grow_step(slots);
    }

    /// Removes the entry of `slot`, indexed under `hash`; whether there was one.
    pub(crate) fn remove(&mut self, hash: u32, slot: u32) -> bool {
        let is_slot = |&(s, _): &Indexed| s == slot;
        let mut found = false;
        if let Ok(entry) = self.table.find_entry(spread(hash), is_slot) {
            entry.remove();
            found = true;
        }
        if let Some(g) = &mut self.growing {
            // Copied slots are in the old table too.
            if let Ok(entry) = g.old.find_entry(spread(hash), is_slot) {
                entry.remove();
                found = true;
            }
            if g.skip == Some(slot) {
                g.skip = None; // filled again, it is indexed like any other
            }
        }
        self.len -= usize::from(found);
        found
    }

    /// Begins copying the full table into one twice its size, which
    /// `inserting` (one of the `slots`) goes into at once.
    fn start_growing(&mut self, slots: usize, inserting: u32) {
        let held = self.table.len();
        let old = std::mem::replace(&mut self.table, HashTable::with_capacity(2 * held));
        // The new table holds at least `2 * held`: the `held` copied and as
        // many inserted. Copying `slots / held` slots per insert would end
        // just in time; eight times that keeps lookups probing two tables
        // for an eighth of the inserts only.
        let step = 8 * slots.div_ceil(held);
        debug_assert!((inserting as usize) < slots, "the slot inserted is one of the slots");
        self.growing = Some(Growing { old, next: 0, end: slots, step, skip: Some(inserting) });
    }

    /// Copies the entries of the next `step` slots into the new table.
    #[inline]
    fn grow_step<T>(&mut self, slots: &Slab<T>) {
        let IdIndex { table, growing, .. } = self;
        let Some(g) = growing else {
            return;
        };
        let stop = g.end.min(g.next + g.step);
        for index in g.next..stop {
            let slot = slots.get(index);
            // Every indexed slot from `next` on is in the old table only
            // (but the one whose insert began growing): copied without a
            // lookup there.
            let number = u32::try_from(index).expect("slot numbers fit in 32 bits");
            if slot.value.is_some() && g.skip != Some(number) {
                table.insert_unique(spread(slot.hash), (number, slot.hash), rehash);
            }
        }
        g.next = stop;
        if g.next == g.end {
            *growing = None; // every entry of the old table is in the new one
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::slab::Slot;

    /// A slab of `n` numbers, each its own hash (weak, so many collide).
    fn filled(index: &mut IdIndex, slab: &mut Slab<u32>, from: u32, to: u32) {
        for n in from..to {
            let slot =
                u32::try_from(slab.push(Slot { value: Some(n), generation: 0, hash: n % 97 }))
                    .unwrap();
            index.insert(n % 97, slot, slab);
        }
    }

    fn find(index: &IdIndex, slab: &Slab<u32>, n: u32) -> Option<u32> {
        index.find(n % 97, |slot| slab.get(slot as usize).value == Some(n))
    }

    #[test]
    fn a_growing_index_finds_every_entry_in_either_table_and_ends_with_one() {
        let (mut index, mut slab) = (IdIndex::default(), Slab::default());
        let mut seen_growing = false;
        for n in 0..20_000 {
            filled(&mut index, &mut slab, n, n + 1);
            seen_growing |= index.growing.is_some();
            if n % 1_000 == 0 {
                assert!((0..=n).all(|k| find(&index, &slab, k) == Some(k)), "after {n}");
            }
        }
        assert!(seen_growing, "the index grew a few entries at a time");
        assert_eq!(index.len(), 20_000);
        assert!((0..20_000).all(|k| find(&index, &slab, k) == Some(k)));
        assert_eq!(find(&index, &slab, 20_000), None);
    }

    #[test]
    fn growing_ends_before_the_new_table_fills_even_among_many_freed_slots() {
        // (The debug assertion in `insert` fails the test if the new table
        // ever had to rehash itself while the old one was still emptying.)
        let (mut index, mut slab) = (IdIndex::default(), Slab::default());
        filled(&mut index, &mut slab, 0, 20_000);
        for n in 0..19_000u32 {
            index.remove(n % 97, n);
            slab.get_mut(n as usize).value = None;
        }
        filled(&mut index, &mut slab, 20_000, 120_000);
        assert_eq!(index.len(), 101_000);
        assert!((19_000..120_000).all(|k| find(&index, &slab, k) == Some(k)));
    }

    #[test]
    fn removals_while_growing_leave_no_entry_behind() {
        let (mut index, mut slab) = (IdIndex::default(), Slab::default());
        filled(&mut index, &mut slab, 0, 3_000);
        for n in (0..3_000u32).step_by(3) {
            assert!(index.remove(n % 97, n), "{n} was indexed");
            slab.get_mut(n as usize).value = None;
        }
        filled(&mut index, &mut slab, 3_000, 6_000);
        assert_eq!(index.len(), 5_000);
        for n in 0..6_000 {
            let expected = (n >= 3_000 || n % 3 != 0).then_some(n);
            assert_eq!(find(&index, &slab, n), expected, "{n}");
        }
        assert!(!index.remove(0, 0), "a removed entry is gone");
    }

    #[test]
    fn a_slot_freed_and_filled_again_while_growing_is_found_once() {
        let (mut index, mut slab) = (IdIndex::default(), Slab::default());
        let mut n = 0;
        while index.growing.is_none() {
            filled(&mut index, &mut slab, n, n + 1);
            n += 1;
        }
        let (next, end) = index.growing.as_ref().map(|g| (g.next, g.end)).unwrap();
        // One slot not copied yet, one copied already: each freed, then
        // filled again with another value.
        for slot in [end as u32 - 1, 0] {
            assert!(slot as usize >= next || slot == 0);
            let old = slab.get(slot as usize).value.unwrap();
            assert!(index.remove(old % 97, slot));
            let new = 1_000_000 + slot;
            *slab.get_mut(slot as usize) = Slot { value: Some(new), generation: 1, hash: new % 97 };
            index.insert(new % 97, slot, &slab);
            assert_eq!(find(&index, &slab, new), Some(slot));
            assert_eq!(find(&index, &slab, old), None);
        }
        assert_eq!(index.len(), n as usize);
        while index.growing.is_some() {
            filled(&mut index, &mut slab, n, n + 1);
            n += 1;
        }
        assert_eq!(index.len(), n as usize);
        for slot in 0..n {
            let value = slab.get(slot as usize).value.unwrap();
            assert_eq!(find(&index, &slab, value), Some(slot), "slot {slot}");
            assert!(index.remove(value % 97, slot));
        }
        assert_eq!(index.len(), 0);
        assert_eq!(index.table.len(), 0, "no entry was left in the table twice");
    }
}
