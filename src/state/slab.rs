//! [`Slab`]: the slots a [`Collection`](super::collection::Collection) keeps
//! its resources in, grown without moving them.
//!
//! A `Vec` that doubles copies everything it holds on the write that finds it
//! full: at a million resources of a kind, one write copies megabytes, on
//! the state actor, which every request waits for, so the slowest writes
//! fall at the powers of two. A slab adds a segment as large as all the segments before it and
//! moves nothing: each write costs the same, and a slot's address never changes.

/// One slot: the resource in it (if any), the generation that moves on each
/// time the slot is freed, and the kept 32-bit hash of its resource's id (so
/// the id index can rebuild itself from the slots without hashing ids again).
#[derive(Debug)]
pub(crate) struct Slot<T> {
    pub(crate) value: Option<T>,
    pub(crate) generation: u32,
    pub(crate) hash: u32,
}

/// How many slots the first segment holds (a power of two); segment `k ≥ 1`
/// holds `FIRST << (k - 1)`, so the segments before segment `k` hold as many
/// slots as segment `k` itself.
const FIRST_BITS: u32 = 4;
const FIRST: usize = 1 << FIRST_BITS;

/// Slots in segments that never move (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Slab<T> {
    segments: Vec<Vec<Slot<T>>>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { segments: Vec::new(), len: 0 }
    }
}

/// The segment slot `index` is in, and its place there.
fn locate(index: usize) -> (usize, usize) {
    if index < FIRST {
        return (0, index);
    }
    let segment = (usize::BITS - (index >> FIRST_BITS).leading_zeros()) as usize;
    (segment, index - (FIRST << (segment - 1)))
}

/// How many slots segment `segment` holds.
fn capacity_of(segment: usize) -> usize {
    if segment == 0 { FIRST } else { FIRST << (segment - 1) }
}

impl<T> Slab<T> {
    /// How many slots there are (full or free).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds a slot at the end; returns its number.
    #[inline]
    pub(crate) fn push(&mut self, slot: Slot<T>) -> usize {
        let index = self.len;
        let (segment, _) = locate(index);
        if segment == self.segments.len() {
            // Reserved whole now, so the segment never reallocates.
            self.segments.push(Vec::with_capacity(capacity_of(segment)));
        }
        self.segments[segment].push(slot);
        self.len += 1;
        index
    }

    /// Slot `index`.
    ///
    /// # Panics
    /// If there is no such slot (a bug of the caller: slot numbers come from
    /// [`push`](Self::push)).
    #[inline]
    pub(crate) fn get(&self, index: usize) -> &Slot<T> {
        let (segment, at) = locate(index);
        &self.segments[segment][at]
    }

    /// Slot `index`, to change.
    ///
    /// # Panics
    /// As [`get`](Self::get).
    #[inline]
    pub(crate) fn get_mut(&mut self, index: usize) -> &mut Slot<T> {
        let (segment, at) = locate(index);
        &mut self.segments[segment][at]
    }

    /// Every slot, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Slot<T>> {
        self.segments.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(n: usize) -> Slot<usize> {
        Slot { value: Some(n), generation: 0, hash: 0 }
    }

    #[test]
    fn slot_numbers_are_dense_and_each_segment_holds_what_came_before_it() {
        let mut previous = (0, 0);
        for index in 1..100_000 {
            let (segment, at) = locate(index);
            let expected = if previous.1 + 1 == capacity_of(previous.0) {
                (previous.0 + 1, 0)
            } else {
                (previous.0, previous.1 + 1)
            };
            assert_eq!((segment, at), expected, "slot {index}");
            previous = (segment, at);
        }
        for segment in 1..20 {
            let before: usize = (0..segment).map(capacity_of).sum();
            assert_eq!(before, capacity_of(segment), "segment {segment}");
        }
    }

    #[test]
    fn pushed_slots_are_found_by_number_and_never_move() {
        let mut slab = Slab::default();
        let first = slab.push(slot(0));
        let address = std::ptr::from_ref(slab.get(first));
        for n in 1..5_000 {
            assert_eq!(slab.push(slot(n)), n);
        }
        assert_eq!(slab.len(), 5_000);
        assert!(std::ptr::eq(address, slab.get(first)), "slot 0 stayed where it was");
        assert!((0..5_000).all(|n| slab.get(n).value == Some(n)));
        slab.get_mut(4_321).value = None;
        let values: Vec<Option<usize>> = slab.iter().map(|s| s.value).collect();
        assert_eq!(values.len(), 5_000);
        assert_eq!(values[4_321], None);
        assert_eq!(values[4_322], Some(4_322));
    }
}
