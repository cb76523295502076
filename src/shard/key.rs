//! [`ShardId`] and [`shard_of`]: keys to virtual shards.

use std::fmt;

use super::hash;
use crate::resource::Pointer;

/// How many virtual shards a sharded controller spreads its keys over unless
/// told otherwise: enough that N members each get ≈ 1/N of them (± 10 % of
/// a share for 3 members) up to about 16 members, few enough that one etcd
/// key per shard is cheap.
pub const DEFAULT_SHARDS: u32 = 256;

/// A virtual shard: `0..shards`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShardId(pub u32);

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The shard of `key` among `shards` (at least 1): the stable hash of its
/// namespace, type and id, modulo `shards`. The same in every process.
///
/// ```
/// use cosi_runtime::resource::Pointer;
/// use cosi_runtime::shard::{ShardId, shard_of};
///
/// let key = Pointer::new("default", "Widgets.example.com", "w-1");
/// assert_eq!(shard_of(&key, 64), shard_of(&key, 64));
/// assert!(shard_of(&key, 64) < ShardId(64));
/// ```
#[must_use]
pub fn shard_of(key: &Pointer, shards: u32) -> ShardId {
    let h = hash::stable(&[
        key.namespace().as_bytes(),
        key.resource_type().as_bytes(),
        key.id().as_bytes(),
    ]);
    // Multiply-shift instead of a modulo: unbiased enough, no division.
    ShardId(((u128::from(h) * u128::from(shards.max(1))) >> 64) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_every_shard() {
        let mut counts = [0u32; 16];
        for i in 0..16_000 {
            let key = Pointer::new("default", "T", format!("k{i}"));
            counts[shard_of(&key, 16).0 as usize] += 1;
        }
        for c in counts {
            assert!((700..1300).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn the_address_decides_not_its_display() {
        let a = Pointer::new("a", "T", "b");
        let b = Pointer::new("a", "T", "b");
        assert_eq!(shard_of(&a, 64), shard_of(&b, 64));
        assert_eq!(shard_of(&a, 1), ShardId(0));
        assert_eq!(shard_of(&a, 0), ShardId(0), "0 shards is 1");
    }
}
