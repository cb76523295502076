//! [`Ring`]: virtual shards to live members by rendezvous hashing.

use super::hash;
use super::key::{ShardId, shard_of};
use crate::resource::Pointer;

/// The assignment of a fixed number of virtual shards to the live members
/// of a sharded controller, by rendezvous (highest random weight) hashing.
///
/// # Expected flow
/// Every member builds the ring from the same member set (read from the
/// store) and gets the same assignment, without talking to the others.
/// A key's shard is [`shard_of`]; its owner is [`owner`](Ring::owner).
///
/// # Guarantees
/// - Deterministic: the same shards and members (in any order, duplicates
///   ignored) give the same assignment in every process.
/// - A member joining takes only the shards it wins: about `shards / N` of
///   them (N members after the join); no shard moves between the others.
/// - A member leaving gives up only its own shards; every other shard stays.
///
/// # Caveats
/// With few shards per member the shares are uneven (a binomial spread):
/// keep `shards` at least 16 × the largest member count expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    shards: u32,
    members: Vec<String>,
    /// The owner of each shard: an index into `members`.
    owners: Vec<usize>,
}

impl Ring {
    /// `shards` virtual shards (at least 1) over `members`.
    pub fn new<M: Into<String>>(shards: u32, members: impl IntoIterator<Item = M>) -> Ring {
        let mut members: Vec<String> = members.into_iter().map(Into::into).collect();
        members.sort();
        members.dedup();
        let shards = shards.max(1);
        let owners = if members.is_empty() {
            Vec::new()
        } else {
            (0..shards)
                .map(|s| {
                    let mut best = 0;
                    let mut best_weight = 0;
                    for (i, m) in members.iter().enumerate() {
                        let w = hash::weight(s, m);
                        // Ties (never seen with 64-bit weights) go to the first name.
                        if i == 0 || w > best_weight {
                            best = i;
                            best_weight = w;
                        }
                    }
                    best
                })
                .collect()
        };
        Ring { shards, members, owners }
    }

    /// How many virtual shards.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The members, sorted.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// The member that owns `shard`; `None` with no member, or a shard out of range.
    pub fn owner(&self, shard: ShardId) -> Option<&str> {
        self.owners.get(shard.0 as usize).map(|&i| self.members[i].as_str())
    }

    /// The member that owns `key`'s shard.
    pub fn owner_of(&self, key: &Pointer) -> Option<&str> {
        self.owner(shard_of(key, self.shards))
    }

    /// The shards `member` owns, in order.
    pub fn shards_of(&self, member: &str) -> Vec<ShardId> {
        let Ok(i) = self.members.binary_search_by(|m| m.as_str().cmp(member)) else {
            return Vec::new();
        };
        (0..self.shards).filter(|&s| self.owners[s as usize] == i).map(ShardId).collect()
    }

    /// The owner of every shard, in shard order (empty with no member).
    pub fn assignment(&self) -> Vec<&str> {
        self.owners.iter().map(|&i| self.members[i].as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys(n: usize) -> Vec<Pointer> {
        (0..n).map(|i| Pointer::new("default", "Widgets.test", format!("w-{i}"))).collect()
    }

    fn owners<'a>(ring: &'a Ring, keys: &[Pointer]) -> Vec<&'a str> {
        keys.iter().map(|k| ring.owner_of(k).unwrap()).collect()
    }

    #[test]
    fn no_member_owns_nothing() {
        let ring = Ring::new(8, Vec::<String>::new());
        assert_eq!(ring.owner(ShardId(0)), None);
        assert!(ring.assignment().is_empty());
        assert!(ring.shards_of("a").is_empty());
    }

    #[test]
    fn one_member_owns_everything() {
        let ring = Ring::new(8, ["solo"]);
        assert_eq!(ring.shards_of("solo").len(), 8);
        assert_eq!(ring.owner(ShardId(8)), None, "out of range");
    }

    #[test]
    fn order_and_duplicates_do_not_matter() {
        let a = Ring::new(64, ["x", "y", "z"]);
        let b = Ring::new(64, ["z", "x", "y", "x"]);
        assert_eq!(a, b);
    }

    #[test]
    fn every_member_gets_a_fair_share() {
        let ring = Ring::new(256, ["a", "b", "c", "d"]);
        for m in ring.members() {
            let n = ring.shards_of(m).len();
            assert!((40..=90).contains(&n), "{m}: {n} of 256");
        }
    }

    #[test]
    fn a_fourth_member_moves_about_a_quarter_of_10000_keys() {
        let keys = keys(10_000);
        let before = Ring::new(super::super::DEFAULT_SHARDS, ["p-1", "p-2", "p-3"]);
        let after = Ring::new(super::super::DEFAULT_SHARDS, ["p-1", "p-2", "p-3", "p-4"]);
        let (b, a) = (owners(&before, &keys), owners(&after, &keys));
        let moved = b.iter().zip(&a).filter(|(x, y)| x != y).count();
        assert!(b.iter().zip(&a).all(|(x, y)| x == y || *y == "p-4"), "only to the newcomer");
        println!("a fourth member moved {moved} of 10000 keys");
        assert!(moved <= 10_000 * 12 / 40, "moved {moved} of 10000");
    }

    proptest! {
        // Rendezvous hashing moves exactly the shards the newcomer wins, a
        // binomial share: with 4096 shards, 1.2 × 1/4 is 7 standard
        // deviations away, so the bound holds for any names.
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn a_join_moves_at_most_1_2_over_n_and_a_leave_only_the_leavers_keys(
            names in proptest::collection::btree_set("[a-z]{1,8}-[0-9]{1,4}", 4),
            newcomer in 0usize..4,
        ) {
            let names: Vec<String> = names.into_iter().collect();
            let keys = keys(10_000);
            let three: Vec<&String> =
                names.iter().enumerate().filter(|(i, _)| *i != newcomer).map(|(_, n)| n).collect();
            let before = Ring::new(4096, three.iter().map(|s| s.as_str()));
            let after = Ring::new(4096, names.iter().map(String::as_str));
            let (b, a) = (owners(&before, &keys), owners(&after, &keys));
            let joined = names[newcomer].as_str();
            let moved = b.iter().zip(&a).filter(|(x, y)| x != y).count();
            prop_assert!(b.iter().zip(&a).all(|(x, y)| x == y || *y == joined));
            prop_assert!(moved * 40 <= 10_000 * 12, "a join moved {} of 10000", moved);
            // The newcomer leaves again: only its keys move, back where they were.
            prop_assert!(a.iter().zip(&b).all(|(x, y)| x == y || *x == joined));
        }
    }
}
