//! Shard ownership across processes, for sharded queue controllers.
//!
//! A sharded queue controller (see [`shard`](crate::shard)) runs in every
//! process that shares an etcd store; each process reconciles only the keys
//! of the virtual shards it owns. The [`ShardService`] is the store's side:
//! membership, shard keys on leases, hand-offs, and the `Holds` by which
//! the store keeps only the held shards' keys of a sharded kind; the
//! controller's host is the other side (it keeps the masks of its shards,
//! resyncs and drains). The service rides on the
//! [`ClaimService`](super::ClaimService) of an etcd store
//! ([`ClaimService::shards`](super::ClaimService::shards)); the etcd
//! implementation is `state/etcd/shards.rs`.
//!
//! # Writers
//! A reconcile of a key of shard S writes as its controller, with an owner
//! name that is an allocation of its own, registered in [`Writers`] with S's
//! fence (the shard key and its create revision) for as long as the
//! reconcile runs. The store looks the owner up when it plans a write and
//! compares the fence in the write's own transaction. No sharded controller
//! registered: one atomic load per write, nothing else.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix::prelude::*;

use crate::shard::ShardMask;

/// The service that shares the virtual shards of sharded queue controllers
/// among the processes on one etcd store.
///
/// # Expected flow
/// Registering a queue controller with
/// [`Registering::sharded`](crate::controller::Registering::sharded) joins
/// its member set here; the service tells the controller's host which
/// shards it owns (`ShardEvent`) and hears from it when a shard it must
/// give up is drained.
///
/// # Guarantees
/// A shard is owned by at most one process at a time: a process acquires
/// a shard only by creating its key, which exists until the old owner
/// deleted it after draining or its lease expired.
///
/// # Caveats
/// Only an etcd store has one; a sharded registration on another state (or
/// with `RuntimeBuilder::claims` replacing the etcd claims) owns every shard.
#[derive(Clone)]
pub struct ShardService {
    join: Recipient<JoinShards>,
    drained: Recipient<Drained>,
    status: Recipient<GetShards>,
    resign: Recipient<Leave>,
    writers: Writers,
    holds: Holds,
    board: ShardBoard,
}

impl std::fmt::Debug for ShardService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShardService")
    }
}

impl ShardService {
    /// A service served by `actor`, fencing through `writers`, its store
    /// holding of the sharded kinds what `holds` says; `actor` publishes its
    /// status to `board`.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn of<A>(actor: &Addr<A>, writers: Writers, holds: Holds, board: ShardBoard) -> Self
    where
        A: Actor<Context = Context<A>>
            + Handler<JoinShards>
            + Handler<Drained>
            + Handler<GetShards>
            + Handler<Leave>,
    {
        ShardService {
            join: actor.clone().recipient(),
            drained: actor.clone().recipient(),
            status: actor.clone().recipient(),
            resign: actor.clone().recipient(),
            writers,
            holds,
            board,
        }
    }

    /// The shards of every sharded controller of this process: owned,
    /// draining, and the hand-offs so far.
    pub async fn status(&self) -> Vec<ShardStatus> {
        self.status.send(GetShards).await.unwrap_or_default()
    }

    /// [`status`](Self::status) as last published by the service (after
    /// each read of the store and each hand-off), without a round trip to
    /// it: what a metrics scrape, which cannot wait, reads.
    #[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
    pub(crate) fn snapshot(&self) -> Vec<ShardStatus> {
        self.board.read()
    }

    /// Joins `controller`'s members with `shards` virtual shards as `member`.
    pub(crate) fn join(
        &self,
        controller: Arc<str>,
        shards: u32,
        member: String,
        notify: Recipient<ShardEvent>,
    ) {
        self.join.do_send(JoinShards { controller, shards, member, notify });
    }

    /// `controller` finished every reconcile of `shard`, which it gives up.
    pub(crate) fn drained(&self, controller: Arc<str>, shard: u32) {
        self.drained.do_send(Drained { controller, shard });
    }

    /// Leaves every member set for good; resolves once the lease is revoked
    /// (the other members take the shards over at once).
    pub(crate) async fn resign(&self) {
        let _ = self.resign.send(Leave).await;
    }

    /// The writers' fences, for the hosts.
    pub(crate) fn writers(&self) -> &Writers {
        &self.writers
    }

    /// What the store holds of the sharded kinds, for the hosts.
    pub(crate) fn holds(&self) -> &Holds {
        &self.holds
    }
}

/// One sharded kind a process holds only part of: the keys of
/// `resource_type` (in `namespace`, or in every namespace) whose shard is in
/// `mask`. Set up by a sharded controller's host for each primary kind.
#[derive(Clone, Debug)]
pub(crate) struct Hold {
    pub(crate) resource_type: Box<str>,
    /// `None`: every namespace.
    pub(crate) namespace: Option<Box<str>>,
    /// The shards held: owned, or being drained.
    pub(crate) mask: Arc<ShardMask>,
}

impl Hold {
    /// Whether `ptr` is of this hold's kind (held or not).
    pub(crate) fn covers(&self, ptr: &crate::resource::Pointer) -> bool {
        *self.resource_type == *ptr.resource_type()
            && self.namespace.as_deref().is_none_or(|ns| ns == ptr.namespace())
    }
}

/// The kinds a shared store holds only part of (see [`Hold`]), shared by
/// the hosts that set them, the feed that filters by them and the store's
/// commits that refuse a write outside them. The lock is held for one
/// vector operation, never across an `.await`; with no hold, a lookup is
/// one atomic load.
#[derive(Clone, Default, Debug)]
pub(crate) struct Holds(Arc<HoldsInner>);

#[derive(Default, Debug)]
struct HoldsInner {
    count: AtomicUsize,
    list: Mutex<Vec<Hold>>,
    changed: tokio::sync::Notify,
}

impl Holds {
    /// Holds `hold`'s kind from now on: only its mask's shards.
    pub(crate) fn add(&self, hold: Hold) {
        self.0.list.lock().unwrap_or_else(PoisonError::into_inner).push(hold);
        self.0.count.fetch_add(1, Ordering::Release);
        self.changed();
    }

    /// A mask changed: the store catches up (loads what it now holds,
    /// forgets what it gave up).
    pub(crate) fn changed(&self) {
        self.0.changed.notify_one();
    }

    /// Resolves at the next [`changed`](Self::changed) (or at once, if one
    /// came since the last wait).
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) async fn wait(&self) {
        self.0.changed.notified().await;
    }

    /// The holds, as they are now.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn list(&self) -> Vec<Hold> {
        if self.0.count.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        self.0.list.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The hold `ptr` falls outside of, if any: a kind held in part whose
    /// held shards do not include `ptr`'s.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn refusing(&self, ptr: &crate::resource::Pointer) -> Option<Hold> {
        if self.0.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let list = self.0.list.lock().unwrap_or_else(PoisonError::into_inner);
        let mut covering = list.iter().filter(|h| h.covers(ptr));
        let first = covering.clone().next()?;
        // Several controllers may hold one kind: a key any of them holds is held.
        (!covering.any(|h| h.mask.admits(ptr))).then(|| first.clone())
    }
}

/// What a sharded controller's host hears from the service.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
#[rtype(result = "()")]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) enum ShardEvent {
    /// This process owns `shard` now: its key `key`, created at revision
    /// `token` (the fencing token).
    Acquired { shard: u32, key: String, token: i64 },
    /// Another member should own `shard`: stop starting its reconciles,
    /// and say [`Drained`] once none runs.
    Release { shard: u32 },
    /// `shard` is lost (the lease lapsed): its writes are refused already.
    Lost { shard: u32 },
}

/// Joins a controller's members (see [`ShardService::join`]).
#[derive(Message)]
#[rtype(result = "()")]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) struct JoinShards {
    pub(crate) controller: Arc<str>,
    pub(crate) shards: u32,
    pub(crate) member: String,
    pub(crate) notify: Recipient<ShardEvent>,
}

/// A host drained a shard it was asked to release.
#[derive(Message)]
#[rtype(result = "()")]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) struct Drained {
    pub(crate) controller: Arc<str>,
    pub(crate) shard: u32,
}

/// Leaves every member set for good (the runtime stops): the lease is
/// revoked, so the other members take the shards at once.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Leave;

/// The status of every sharded controller, for [`ShardService::status`].
#[derive(Message)]
#[rtype(result = "Vec<ShardStatus>")]
pub(crate) struct GetShards;

/// Upper bounds, in seconds, of the buckets of [`TakeoverTimes`]: from a
/// shard key created at once (a few ms) to a shard waiting out a dead
/// owner's lease (the lease TTL, 10 s by default) or a long drain.
pub const TAKEOVER_BUCKETS: [f64; 12] =
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// How long this process took to take over the shards it acquired: for
/// each, from the read of the members in which the ring first gave it the
/// shard, to the answer that its shard key was created. Includes the wait
/// for the previous owner to drain and release the shard, or for its lease
/// to expire.
///
/// ```
/// use cosi_runtime::state::{TAKEOVER_BUCKETS, TakeoverTimes};
///
/// let none = TakeoverTimes::default();
/// assert_eq!(none.count, 0);
/// assert_eq!(none.cumulative.len(), TAKEOVER_BUCKETS.len());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TakeoverTimes {
    /// Shards taken over.
    pub count: u64,
    /// Their takeover times added up.
    pub sum: Duration,
    /// The longest.
    pub max: Duration,
    /// Per bound of [`TAKEOVER_BUCKETS`], the takeovers that took at most
    /// that long (cumulative, as Prometheus buckets are).
    pub cumulative: Vec<u64>,
}

impl Default for TakeoverTimes {
    fn default() -> Self {
        TakeoverTimes {
            count: 0,
            sum: Duration::ZERO,
            max: Duration::ZERO,
            cumulative: vec![0; TAKEOVER_BUCKETS.len()],
        }
    }
}

impl TakeoverTimes {
    /// Records one takeover that took `took`.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn observe(&mut self, took: Duration) {
        self.count += 1;
        self.sum = self.sum.saturating_add(took);
        self.max = self.max.max(took);
        let secs = took.as_secs_f64();
        for (bound, n) in TAKEOVER_BUCKETS.iter().zip(self.cumulative.iter_mut()) {
            if secs <= *bound {
                *n += 1;
            }
        }
    }

    /// The mean takeover time, or zero with none.
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.count) {
            Ok(0) => Duration::ZERO,
            Ok(n) => self.sum / n,
            Err(_) => Duration::from_secs_f64(self.sum.as_secs_f64() / self.count as f64),
        }
    }
}

/// One sharded controller of this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardStatus {
    /// The controller.
    pub controller: String,
    /// This process's member name.
    pub member: String,
    /// How many virtual shards the controller has.
    pub shards: u32,
    /// The live members, as last read from the store.
    pub members: Vec<String>,
    /// The shards this process owns, with their fencing tokens.
    pub owned: Vec<(u32, i64)>,
    /// The shards being drained before they are given up.
    pub draining: Vec<u32>,
    /// Shards acquired so far.
    pub acquired: u64,
    /// Shards given up after draining so far.
    pub released: u64,
    /// Shards lost with the lease so far.
    pub lost: u64,
    /// How long the shards acquired so far took to take over.
    pub takeover: TakeoverTimes,
}

/// Where the shard service publishes its [`ShardStatus`]es for readers
/// that cannot wait for an answer (a metrics scrape). The service writes it
/// after each change; the lock is held for one copy, never across an
/// `.await`.
#[derive(Clone, Default, Debug)]
pub(crate) struct ShardBoard(Arc<Mutex<Vec<ShardStatus>>>);

impl ShardBoard {
    /// Replaces what is published.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn publish(&self, status: Vec<ShardStatus>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    /// What is published.
    #[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
    pub(crate) fn read(&self) -> Vec<ShardStatus> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A shard's fence, as a write carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ShardFence {
    /// The shard key.
    pub(crate) key: String,
    /// Its create revision when this process created it.
    pub(crate) token: i64,
}

/// The writers of running sharded reconciles and their fences, by the
/// address of the owner name each writes as (see the module doc). Written
/// by the hosts, read by the store's commits; the lock is held for one map
/// operation, never across an `.await`.
#[derive(Clone, Default, Debug)]
pub(crate) struct Writers(Arc<WritersInner>);

#[derive(Default, Debug)]
struct WritersInner {
    /// How many are registered: the store skips the lock at 0.
    count: AtomicUsize,
    map: Mutex<HashMap<usize, (Arc<str>, ShardFence)>>,
}

/// Keeps a writer registered; unregisters it when dropped.
#[derive(Debug)]
pub(crate) struct WriterGuard {
    writers: Writers,
    addr: usize,
}

fn addr(writer: &Arc<str>) -> usize {
    Arc::as_ptr(writer).cast::<u8>() as usize
}

impl Writers {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<usize, (Arc<str>, ShardFence)>> {
        self.0.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `writer` (an owner name allocated for one reconcile) with
    /// `fence` until the guard is dropped. The map keeps a clone, so the
    /// address is not reused meanwhile.
    pub(crate) fn register(&self, writer: &Arc<str>, fence: ShardFence) -> WriterGuard {
        let a = addr(writer);
        self.map().insert(a, (writer.clone(), fence));
        self.0.count.fetch_add(1, Ordering::Release);
        WriterGuard { writers: self.clone(), addr: a }
    }

    /// The fence a write by `owner` must pass, if it is a sharded writer.
    #[inline]
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn fence(&self, owner: &Arc<str>) -> Option<ShardFence> {
        if self.0.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.map().get(&addr(owner)).map(|(_, f)| f.clone())
    }
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        if self.writers.map().remove(&self.addr).is_some() {
            self.writers.0.count.fetch_sub(1, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_is_fenced_by_its_allocation_not_its_name() {
        let writers = Writers::default();
        let fence = ShardFence { key: "/p~shards/c/s/3".into(), token: 9 };
        let writer: Arc<str> = Arc::from("c");
        let same_name: Arc<str> = Arc::from("c");
        let guard = writers.register(&writer, fence.clone());
        assert_eq!(writers.fence(&writer.clone()), Some(fence));
        assert_eq!(writers.fence(&same_name), None, "another reconcile, another fence");
        drop(guard);
        assert_eq!(writers.fence(&writer), None);
    }

    #[test]
    fn takeovers_fill_cumulative_buckets() {
        let mut t = TakeoverTimes::default();
        t.observe(Duration::from_millis(3));
        t.observe(Duration::from_millis(300));
        t.observe(Duration::from_secs(40));
        assert_eq!(t.count, 3);
        assert_eq!(t.max, Duration::from_secs(40));
        assert_eq!(t.sum, Duration::from_millis(40_303));
        let at =
            |bound: f64| t.cumulative[TAKEOVER_BUCKETS.iter().position(|b| *b == bound).unwrap()];
        assert_eq!((at(0.005), at(0.25), at(0.5), at(30.0)), (1, 1, 2, 2));
        assert_eq!(t.mean(), Duration::from_nanos(13_434_333_333));
    }
}
