//! Sharding: which process of a scaled-out controller reconciles which key.
//!
//! # Map
//! - [`hash`]: a stable 64-bit hash of a key (the same in every process, in
//!   every build), and of a (shard, member) pair.
//! - [`ShardId`] and [`shard_of`] (`key.rs`): a key — an object's address,
//!   namespace/type/id — goes to one of a fixed number of **virtual shards**
//!   by its stable hash. A key's shard never changes.
//! - [`Sharding`] (`settings.rs`): how a queue controller is sharded (shard
//!   count, member name), given to
//!   [`Registering::sharded`](crate::controller::Registering::sharded).
//! - `ShardMask` (`mask.rs`): the shards this process owns, which the
//!   state reads to deliver a sharded controller only its own keys' changes.
//! - [`Ring`] (`ring.rs`): the shards go to the live **members** by
//!   rendezvous (highest random weight) hashing: each shard goes to the
//!   member whose hash with it is the highest. A join moves to the newcomer
//!   only the shards it wins (≈ 1/N of them); a leave moves only the
//!   leaver's shards, each to the member that was second for it.
//!
//! The module is pure: no clock, no IO. The etcd side (membership, shard
//! keys on leases, fencing) is in `state::etcd::shards`, and the feed that
//! brings a process only its shards' keys in `state::etcd::feed`; the queue
//! controller's side (the masks of its shards, resync, draining) in the
//! controller host.
//! See docs/ARCHITECTURE.md, "Sharded controllers".
//!
//! # Operations
//! [`Runtime::shards`](crate::Runtime::shards) reports, per sharded
//! controller of the process, its member name, the ring's members, the
//! shards it owns with their fencing tokens, those draining, its hand-offs
//! and takeover times ([`ShardStatus`](crate::state::ShardStatus)). The same
//! figures are metrics (`cosi_shard*`, see the `prometheus` module); the admin
//! endpoint's `GET /api/v1/shards` (feature `admin`) adds the keys of each
//! owned shard, and `cosictl shards` prints it. `examples/sharded.rs` runs
//! three members on one etcd.
//!
//! ```
//! use cosi_runtime::resource::Pointer;
//! use cosi_runtime::shard::{Ring, shard_of};
//!
//! let ring = Ring::new(64, ["a", "b", "c"]);
//! let key = Pointer::new("default", "Widgets.example.com", "w-1");
//! let shard = shard_of(&key, ring.shards());
//! let owner = ring.owner(shard).unwrap();
//! assert!(["a", "b", "c"].contains(&owner));
//! // Every shard has exactly one owner.
//! assert_eq!(ring.assignment().len(), 64);
//! ```

pub mod hash;
mod key;
mod mask;
mod ring;
mod settings;

pub use key::{DEFAULT_SHARDS, ShardId, shard_of};
pub(crate) use mask::ShardMask;
pub use ring::Ring;
pub use settings::Sharding;
