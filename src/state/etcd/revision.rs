//! State revisions of an etcd namespace: an etcd revision and a write's place
//! among the changes of that revision, in one number.

/// How many low bits of a state revision hold a write's place among the
/// changes of its etcd revision.
const PLACE_BITS: u32 = 12;
const LAST_PLACE: u64 = (1 << PLACE_BITS) - 1;

/// The state revision of the change at `place` of etcd revision `main`.
///
/// The changes of one etcd revision reach the feed together (etcd never
/// splits a revision over two watch responses), so "the feed is at
/// `rev_at(main, 0)` or later" means every change of `main` is in.
pub(crate) fn rev_at(main: u64, place: u64) -> u64 {
    // A transaction holds at most 64 writes; more changes in one revision
    // (none this runtime makes) would share the last place.
    (main << PLACE_BITS) | place.min(LAST_PLACE)
}

/// The etcd revision of a state revision.
pub(crate) fn etcd_rev(revision: u64) -> i64 {
    (revision >> PLACE_BITS) as i64
}

/// The etcd revision a state revision of an etcd namespace belongs to (see
/// [Guarantees](super#guarantees)): what etcd's own tools (`etcdctl`,
/// compaction) know it by.
///
/// ```
/// # #[cfg(feature = "etcd")] {
/// use cosi_runtime::state::etcd::etcd_revision;
/// assert_eq!(etcd_revision(42 * 4096 + 3), 42);
/// # }
/// ```
pub fn etcd_revision(revision: u64) -> u64 {
    revision >> PLACE_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_revisions_order_writes_within_and_across_etcd_revisions() {
        assert!(rev_at(7, 0) < rev_at(7, 1));
        assert!(rev_at(7, 63) < rev_at(8, 0));
        assert!(rev_at(7, 1 << 20) < rev_at(8, 0), "places saturate within their revision");
        assert_eq!(etcd_rev(rev_at(7, 5)), 7);
        assert_eq!(etcd_revision(rev_at(7, 5)), 7);
    }
}
