//! A stable hash: the same value for the same bytes in every process, on
//! every machine, in every build (unlike `std`'s `DefaultHasher` or the
//! runtime's seeded tables). Sharding needs it: every process must agree on
//! a key's shard and on a shard's owner without talking.
//!
//! FNV-1a over the bytes, then a SplitMix64 finalizer to spread the bits
//! (FNV-1a alone clusters on short keys that differ in their last byte).

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// SplitMix64's finalizer: a bijection that spreads every input bit.
#[must_use]
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The stable hash of `parts`, each followed by a separator byte (0xff,
/// which no UTF-8 text holds), so `("ab", "c")` and `("a", "bc")` differ.
#[must_use]
pub fn stable(parts: &[&[u8]]) -> u64 {
    let mut h = FNV_OFFSET;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
        h ^= 0xff;
        h = h.wrapping_mul(FNV_PRIME);
    }
    mix(h)
}

/// The rendezvous weight of `member` for `shard`: the highest wins the shard.
#[must_use]
pub fn weight(shard: u32, member: &str) -> u64 {
    stable(&[&shard.to_le_bytes(), member.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `stable(&[b"default", b"T", b"x"])` as this build computes it.
    const PINNED: u64 = 0x59df_9179_fae4_bf68;

    #[test]
    fn is_stable_across_builds() {
        // Pinned values: a change here reshuffles every sharded deployment.
        assert_eq!(stable(&[]), mix(FNV_OFFSET));
        assert_eq!(stable(&[b"a"]), stable(&[b"a"]));
        assert_ne!(stable(&[b"ab", b"c"]), stable(&[b"a", b"bc"]));
        assert_eq!(stable(&[b"default", b"T", b"x"]), PINNED);
    }
}
