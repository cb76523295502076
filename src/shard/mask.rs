//! [`ShardMask`]: the shards one process owns, read where changes are
//! delivered.

use std::sync::atomic::{AtomicU64, Ordering};

use super::key::shard_of;
use crate::resource::Pointer;

/// The set of virtual shards a sharded controller owns in this process,
/// shared by its host (which sets and clears shards as it acquires and gives
/// them up) and the state actor (which delivers to the controller's primary
/// watch only the changes of keys in the set, so changes of other processes'
/// shards never reach the controller's mailbox).
///
/// One bit per shard; a set or a clear is one atomic operation, and a
/// lookup is a hash of the key and one atomic load.
#[derive(Debug)]
pub(crate) struct ShardMask {
    shards: u32,
    bits: Box<[AtomicU64]>,
}

impl ShardMask {
    /// An empty mask over `shards` shards (at least 1).
    pub(crate) fn new(shards: u32) -> Self {
        let shards = shards.max(1);
        let words = shards.div_ceil(64) as usize;
        ShardMask { shards, bits: (0..words).map(|_| AtomicU64::new(0)).collect() }
    }

    fn at(&self, shard: u32) -> Option<(&AtomicU64, u64)> {
        (shard < self.shards).then(|| (&self.bits[(shard / 64) as usize], 1u64 << (shard % 64)))
    }

    /// How many shards there are (set or not).
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn shards(&self) -> u32 {
        self.shards
    }

    /// Adds `shard` (ignored past the shard count).
    pub(crate) fn insert(&self, shard: u32) {
        if let Some((word, bit)) = self.at(shard) {
            word.fetch_or(bit, Ordering::Release);
        }
    }

    /// Removes `shard`.
    pub(crate) fn remove(&self, shard: u32) {
        if let Some((word, bit)) = self.at(shard) {
            word.fetch_and(!bit, Ordering::Release);
        }
    }

    /// Whether `shard` is in the set.
    pub(crate) fn contains(&self, shard: u32) -> bool {
        self.at(shard).is_some_and(|(word, bit)| word.load(Ordering::Acquire) & bit != 0)
    }

    /// Whether the shard of `key` is in the set.
    pub(crate) fn admits(&self, key: &Pointer) -> bool {
        self.contains(shard_of(key, self.shards).0)
    }

    /// How many shards are in the set.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn len(&self) -> u32 {
        self.bits.iter().map(|w| w.load(Ordering::Acquire).count_ones()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_admits_the_keys_of_its_shards_only() {
        let mask = ShardMask::new(130);
        assert_eq!(mask.len(), 0);
        let keys: Vec<Pointer> =
            (0..2_000).map(|i| Pointer::new("ns", "T", format!("k{i}"))).collect();
        assert!(keys.iter().all(|k| !mask.admits(k)), "an empty mask admits nothing");
        for s in [0, 63, 64, 129] {
            mask.insert(s);
        }
        mask.insert(500); // past the shard count: ignored
        assert_eq!(mask.len(), 4);
        for k in &keys {
            let s = shard_of(k, 130).0;
            assert_eq!(mask.admits(k), [0, 63, 64, 129].contains(&s), "{k}");
        }
        mask.remove(64);
        assert!(!mask.contains(64) && mask.contains(63) && mask.contains(129));
        assert_eq!(mask.len(), 3);
    }
}
