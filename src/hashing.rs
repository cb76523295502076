//! Hashing of keys that clients choose: ids, kinds, labels, work-queue keys,
//! the identities of KRM items.
//!
//! Every table keyed by such text is filled by requests that may come over
//! the network (the Kubernetes API, the admin endpoint) or from a file (a
//! ResourceList, a package). With an unseeded hash such as FxHash, the same
//! text hashes the same way in every process, so a client can compute
//! offline a set of ids that all share one hash and send them: every insert
//! and lookup in that table then compares against all of them, and one
//! client's writes cost the state actor (which serves everybody) quadratic
//! time. A server must bound what one client can cost
//! (docs/ARCHITECTURE.md, 'Hostile input').
//!
//! These tables hash with foldhash (the hasher hashbrown uses by default)
//! seeded at random once per process, from the clock and the address-space
//! layout: a set of colliding keys cannot be computed ahead of time.
//! foldhash's `fast` variant costs about what FxHash does on the state's hot
//! path, so the protection is close to free.
//! Tables keyed by numbers the runtime itself hands out (slots, watch ids)
//! keep FxHash.
//!
//! A hash kept beside its key ([`Kind`](crate::resource::Kind)'s, a
//! collection's per-id hash) comes from [`kept`], one seeded hasher for the
//! whole process, so that equal keys keep equal hashes everywhere in it.
//! None of these hashes is ever written to disk or sent anywhere.

use std::hash::{BuildHasher, Hash};
use std::sync::LazyLock;

/// The [`BuildHasher`] of the tables keyed by client-chosen text: foldhash,
/// seeded at random (each table gets its own seed on top of the process's).
pub(crate) type Seeded = foldhash::fast::RandomState;

/// A [`HashMap`](std::collections::HashMap) keyed by client-chosen text.
pub(crate) type SeededMap<K, V> = std::collections::HashMap<K, V, Seeded>;

/// A [`HashSet`](std::collections::HashSet) of client-chosen text.
pub(crate) type SeededSet<K> = std::collections::HashSet<K, Seeded>;

/// The one hasher of the hashes kept beside their keys, seeded at random
/// when the process first hashes such a key.
static KEPT: LazyLock<Seeded> = LazyLock::new(Seeded::default);

/// The hash of `key` that the process keeps beside it: equal keys get equal
/// hashes for the life of the process, and another process (or another run)
/// hashes them otherwise.
#[inline]
pub(crate) fn kept<T: Hash + ?Sized>(key: &T) -> u64 {
    KEPT.hash_one(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ids that share FxHash's 32 top bits, found by a birthday search
    /// (as an attacker would, once, for every process that hashes with it).
    fn fx_colliding_pair() -> (String, String) {
        let mut seen = std::collections::HashMap::new();
        for i in 0u64.. {
            let id = format!("id-{i}");
            let top = (rustc_hash::FxBuildHasher.hash_one(id.as_str()) >> 32) as u32;
            if let Some(other) = seen.insert(top, id.clone()) {
                return (other, id);
            }
        }
        unreachable!("u64 ids run out before a 32-bit collision")
    }

    #[test]
    fn ids_that_collide_under_an_unseeded_hash_do_not_collide_when_kept() {
        let (a, b) = fx_colliding_pair();
        let fx = |id: &str| rustc_hash::FxBuildHasher.hash_one(id) >> 32;
        assert_eq!(fx(&a), fx(&b), "the search found a collision");
        // The same 32 bits the state keeps per id; a chance collision of the
        // seeded hash is 1 in 2^32.
        assert_ne!(kept(a.as_str()) >> 32, kept(b.as_str()) >> 32, "{a} and {b}");
    }

    #[test]
    fn kept_hashes_are_stable_within_the_process_and_seeded() {
        assert_eq!(kept("ns/T/a"), kept(&String::from("ns/T/a")));
        // Another seed (another process) hashes the same key otherwise.
        let other = foldhash::fast::SeedableRandomState::random();
        assert_ne!(other.hash_one("ns/T/a"), kept("ns/T/a"));
        // Each seeded table gets its own seed too.
        assert_ne!(Seeded::default().hash_one("x"), Seeded::default().hash_one("x"));
    }
}
