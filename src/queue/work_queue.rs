//! [`WorkQueue`]: dedup, per-key exclusion, delays, backoff (see the
//! [module docs](super) for the contract).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

use crate::backoff::Backoff;

/// How the processing of a key ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Done; the failure count resets.
    Success,
    /// Done; process it again after this delay (the failure count resets).
    RequeueAfter(Duration),
    /// Failed; retry after the key's backoff.
    Failure,
    /// Failed for good: never retried (until the key is added again).
    Terminal,
}

/// A re-add that arrived while the key was processing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Again {
    No,
    Now,
    At(Instant),
}

impl Again {
    fn merge(self, other: Again) -> Again {
        match (self, other) {
            (Again::Now, _) | (_, Again::Now) => Again::Now,
            (Again::At(a), Again::At(b)) => Again::At(a.min(b)),
            (Again::At(a), Again::No) | (Again::No, Again::At(a)) => Again::At(a),
            (Again::No, Again::No) => Again::No,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    Ready { since: Instant },
    Delayed { due: Instant, seq: u64, backoff: bool },
    Processing { again: Again },
}

#[derive(Debug)]
struct KeyState {
    stage: Stage,
    failures: u32,
}

/// A key handed out by [`WorkQueue::take`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken<K> {
    /// The key.
    pub key: K,
    /// How long it waited since it became ready.
    pub waited: Duration,
    /// Its consecutive failures so far (0: this is not a retry).
    pub failures: u32,
}

/// The keys ready to hand out, oldest first.
#[derive(Debug)]
struct Ready<K> {
    keys: VecDeque<K>,
    /// How many times a key became ready so far ([`WorkQueue::adds`]).
    adds: u64,
}

impl<K> Ready<K> {
    /// `key` became ready.
    fn push(&mut self, key: K) {
        self.adds += 1;
        self.keys.push_back(key);
    }
}

/// The keys waiting for a time, in due order.
#[derive(Debug)]
struct Delays<K> {
    /// By due time, then by order of scheduling.
    by_due: BTreeMap<(Instant, u64), K>,
    /// The scheduling order given last.
    seq: u64,
    /// How many of them wait out a failure's backoff.
    backing_off: usize,
}

impl<K: Clone + Ord> Delays<K> {
    /// Schedules `key` at `due`; its stage in the queue.
    fn schedule(&mut self, key: &K, due: Instant, backoff: bool) -> Stage {
        self.seq += 1;
        let seq = self.seq;
        self.by_due.insert((due, seq), key.clone());
        if backoff {
            self.backing_off += 1;
        }
        Stage::Delayed { due, seq, backoff }
    }

    /// Takes back the schedule [`schedule`](Self::schedule) gave (its
    /// `Stage::Delayed` parts), keeping the count of backoffs right.
    fn cancel(&mut self, due: Instant, seq: u64, backoff: bool) {
        self.by_due.remove(&(due, seq));
        if backoff {
            self.backing_off -= 1;
        }
    }
}

/// Counts of keys by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Ready to hand out.
    pub ready: usize,
    /// Waiting for a requested time.
    pub delayed: usize,
    /// Waiting out a failure backoff.
    pub backing_off: usize,
    /// Handed out, not done.
    pub processing: usize,
}

/// A deduplicating work queue of keys with delays and per-key backoff.
///
/// ```
/// use std::time::Duration;
/// use cosi_runtime::queue::{Completion, WorkQueue};
/// use cosi_runtime::queue::Backoff;
/// use tokio::time::Instant;
///
/// let mut q = WorkQueue::new(Backoff::default());
/// let now = Instant::now();
/// q.add("eth0", now);
/// q.add("eth0", now); // deduplicated
/// let (key, _waited) = q.get(now).unwrap();
/// assert_eq!(key, "eth0");
/// q.add("eth0", now); // re-added while processing: runs once more after done
/// assert!(q.get(now).is_none(), "never handed out twice at once");
/// q.done(&key, Completion::Success, now);
/// assert_eq!(q.get(now).unwrap().0, "eth0");
/// ```
pub struct WorkQueue<K> {
    /// hashbrown's map rather than std's: `entry_ref` finishes a key (reads
    /// it, then removes or reschedules it) with one lookup. Keys are the
    /// clients' ids: seeded ([`crate::hashing`]).
    entries: hashbrown::HashMap<K, KeyState, crate::hashing::Seeded>,
    ready: Ready<K>,
    delays: Delays<K>,
    backoff: Backoff,
    rng: fastrand::Rng,
    processing: usize,
    /// Keys whose last run failed (a failure count above 0): backing off,
    /// ready for their retry, or retrying.
    failing: usize,
    retries: u64,
    shutdown: bool,
}

impl<K> fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueue")
            .field("keys", &self.entries.len())
            .field("ready", &self.ready.keys.len())
            .field("delayed", &self.delays.by_due.len())
            .field("processing", &self.processing)
            .finish()
    }
}

impl<K: Clone + Eq + Hash + Ord> WorkQueue<K> {
    /// An empty queue retrying failures with `backoff`.
    pub fn new(backoff: Backoff) -> Self {
        WorkQueue::with_seed(backoff, fastrand::u64(..))
    }

    /// An empty queue whose backoff jitter is drawn from a seeded generator.
    pub fn with_seed(backoff: Backoff, seed: u64) -> Self {
        WorkQueue {
            entries: hashbrown::HashMap::default(),
            ready: Ready { keys: VecDeque::new(), adds: 0 },
            delays: Delays { by_due: BTreeMap::new(), seq: 0, backing_off: 0 },
            backoff,
            rng: fastrand::Rng::with_seed(seed),
            processing: 0,
            failing: 0,
            retries: 0,
            shutdown: false,
        }
    }

    /// Queues `key` now.
    ///
    /// Already ready: nothing. Waiting for a requested time: ready now.
    /// Waiting out a backoff: absorbed into the retry. Processing: one more run
    /// after it is done.
    pub fn add(&mut self, key: K, now: Instant) {
        if self.shutdown {
            return;
        }
        let mut entry = match self.entries.entry(key) {
            hashbrown::hash_map::Entry::Vacant(vacant) => {
                self.ready.push(vacant.key().clone());
                vacant.insert(KeyState { stage: Stage::Ready { since: now }, failures: 0 });
                return;
            }
            hashbrown::hash_map::Entry::Occupied(occupied) => occupied,
        };
        match entry.get().stage {
            Stage::Ready { .. } | Stage::Delayed { backoff: true, .. } => {}
            Stage::Delayed { due, seq, backoff: false } => {
                self.delays.cancel(due, seq, false);
                entry.get_mut().stage = Stage::Ready { since: now };
                self.ready.push(entry.key().clone());
            }
            Stage::Processing { again } => {
                entry.get_mut().stage = Stage::Processing { again: again.merge(Again::Now) };
            }
        }
    }

    /// Queues `key` to be ready at `now + delay`; several delayed adds collapse
    /// to the earliest time. A zero delay is an immediate [`add`](WorkQueue::add).
    pub fn add_after(&mut self, key: K, delay: Duration, now: Instant) {
        if delay.is_zero() {
            self.add(key, now);
            return;
        }
        if self.shutdown {
            return;
        }
        let due = now + delay;
        let stage = match self.entries.get(&key).map(|e| e.stage) {
            None => {
                let stage = self.delays.schedule(&key, due, false);
                self.entries.insert(key, KeyState { stage, failures: 0 });
                return;
            }
            Some(stage) => stage,
        };
        let new_slot = match stage {
            Stage::Ready { .. } | Stage::Delayed { backoff: true, .. } => return,
            Stage::Delayed { due: old, seq, backoff: false } => {
                if due >= old {
                    return;
                }
                self.delays.cancel(old, seq, false);
                self.delays.schedule(&key, due, false)
            }
            Stage::Processing { again } => Stage::Processing { again: again.merge(Again::At(due)) },
        };
        if let Some(e) = self.entries.get_mut(&key) {
            e.stage = new_slot;
        }
    }

    /// Moves every delayed key that is due by `now` to the ready list.
    fn promote(&mut self, now: Instant) {
        while let Some(entry) = self.delays.by_due.first_entry() {
            let (due, _) = *entry.key();
            if due > now {
                break;
            }
            let key = entry.remove();
            if let Some(e) = self.entries.get_mut(&key) {
                if let Stage::Delayed { backoff: true, .. } = e.stage {
                    self.delays.backing_off -= 1;
                }
                e.stage = Stage::Ready { since: due };
                self.ready.push(key);
            }
        }
    }

    /// Hands out the next ready key and how long it waited since it became
    /// ready. It is not handed out again until [`done`](WorkQueue::done).
    pub fn get(&mut self, now: Instant) -> Option<(K, Duration)> {
        self.take(now).map(|t| (t.key, t.waited))
    }

    /// [`get`](WorkQueue::get), also telling the key's failures so far.
    pub fn take(&mut self, now: Instant) -> Option<Taken<K>> {
        if self.shutdown {
            return None;
        }
        self.promote(now);
        let key = self.ready.keys.pop_front()?;
        let entry = self.entries.get_mut(&key)?;
        let Stage::Ready { since } = entry.stage else {
            return None;
        };
        entry.stage = Stage::Processing { again: Again::No };
        self.processing += 1;
        let (waited, failures) = (now.saturating_duration_since(since), entry.failures);
        Some(Taken { key, waited, failures })
    }

    /// Whether a key is ready (or due) at `now`.
    pub fn has_ready(&mut self, now: Instant) -> bool {
        self.promote(now);
        !self.shutdown && !self.ready.keys.is_empty()
    }

    /// The earliest time a waiting key becomes due.
    pub fn next_due(&self) -> Option<Instant> {
        self.delays.by_due.keys().next().map(|(due, _)| *due)
    }

    /// Marks `key` done with `completion`. Returns the backoff delay when the
    /// key will be retried after a failure.
    pub fn done(&mut self, key: &K, completion: Completion, now: Instant) -> Option<Duration> {
        self.done_with(key, completion, None, now)
    }

    /// [`done`](Self::done), with the backoff delay of a failure set by the
    /// caller (`None`: the queue's own, from the key's failure count). A plain
    /// controller's host has its restart policy set it.
    #[inline]
    pub(crate) fn done_with(
        &mut self,
        key: &K,
        completion: Completion,
        backoff: Option<Duration>,
        now: Instant,
    ) -> Option<Duration> {
        let hashbrown::hash_map::EntryRef::Occupied(mut entry) = self.entries.entry_ref(key) else {
            return None;
        };
        let Stage::Processing { again } = entry.get().stage else {
            return None;
        };
        self.processing -= 1;
        let failures = entry.get().failures;
        let mut retry = None;
        let next = match completion {
            Completion::Success | Completion::Terminal => again,
            Completion::RequeueAfter(d) => again.merge(Again::At(now + d)),
            Completion::Failure => {
                let delay = backoff.unwrap_or_else(|| self.backoff.delay(failures, self.rng.f64()));
                retry = Some(delay);
                Again::At(now + delay)
            }
        };
        // Only a failure keeps the key failing; every other end clears it.
        self.failing -= usize::from(failures > 0);
        if self.shutdown {
            entry.remove();
            return retry;
        }
        match next {
            Again::No => {
                entry.remove();
                self.release_if_empty();
            }
            Again::Now => {
                *entry.get_mut() = KeyState { stage: Stage::Ready { since: now }, failures: 0 };
                self.ready.push(key.clone());
            }
            Again::At(due) => {
                let backoff = retry.is_some();
                if backoff {
                    self.retries += 1;
                    self.failing += 1;
                }
                *entry.get_mut() = KeyState {
                    stage: self.delays.schedule(key, due, backoff),
                    failures: if backoff { failures.saturating_add(1) } else { 0 },
                };
            }
        }
        retry
    }

    /// Gives back the memory of a burst once the queue is empty: a queue
    /// that once held 100,000 keys keeps their tables' capacity otherwise
    /// (megabytes per controller for nothing). Only past a size worth it,
    /// so that a queue going from 0 to a few keys and back costs no
    /// allocation.
    fn release_if_empty(&mut self) {
        const KEEP: usize = 1024;
        if self.entries.is_empty() && self.entries.capacity() > KEEP {
            self.entries.shrink_to(KEEP);
            self.ready.keys.shrink_to(KEEP);
        }
    }

    /// Drops `key` if it is ready or waiting (not while it is processing),
    /// as if it had never been added: a plain controller that stands by
    /// drops its pending reconcile.
    pub(crate) fn forget(&mut self, key: &K) {
        let Some(entry) = self.entries.get(key) else {
            return;
        };
        match entry.stage {
            Stage::Processing { .. } => return,
            Stage::Ready { .. } => self.ready.keys.retain(|k| k != key),
            Stage::Delayed { due, seq, backoff } => self.delays.cancel(due, seq, backoff),
        }
        self.failing -= usize::from(entry.failures > 0);
        self.entries.remove(key);
    }

    /// Stops handing out keys and drops every key that is not processing.
    /// Keys in flight may still be marked done.
    pub fn shutdown(&mut self) {
        self.shutdown = true;
        self.ready.keys.clear();
        self.delays.by_due.clear();
        self.delays.backing_off = 0;
        self.entries.retain(|_, e| matches!(e.stage, Stage::Processing { .. }));
        self.failing = self.entries.values().filter(|e| e.failures > 0).count();
    }

    /// Whether the queue is shut down and nothing is in flight.
    pub fn is_drained(&self) -> bool {
        self.shutdown && self.processing == 0
    }

    /// Whether the queue was shut down.
    pub fn is_shutdown(&self) -> bool {
        self.shutdown
    }

    /// Keys known to the queue in any state.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the queue holds no key at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Counts of keys by state.
    pub fn stats(&self) -> QueueStats {
        QueueStats {
            ready: self.ready.keys.len(),
            delayed: self.delays.by_due.len() - self.delays.backing_off,
            backing_off: self.delays.backing_off,
            processing: self.processing,
        }
    }

    /// Failed keys scheduled for a retry so far.
    pub fn retries(&self) -> u64 {
        self.retries
    }

    /// How many times a key became ready so far (client-go counts these as
    /// adds: a duplicate add of a ready key, or an add absorbed into a
    /// running key or a backoff, is not one).
    pub fn adds(&self) -> u64 {
        self.ready.adds
    }

    /// The number of consecutive failures of `key` (0 if unknown).
    pub fn failures(&self, key: &K) -> u32 {
        self.entries.get(key).map_or(0, |e| e.failures)
    }

    /// How many keys are failing: their last run failed and they have not
    /// succeeded since (waiting out their backoff, ready for their retry,
    /// or retrying now). A key that ends otherwise (success, requeue,
    /// terminal error) or is dropped stops counting.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cosi_runtime::queue::{Completion, WorkQueue};
    /// use tokio::time::Instant;
    /// use cosi_runtime::queue::Backoff;
    ///
    /// let mut q = WorkQueue::new(Backoff::default());
    /// let now = Instant::now();
    /// q.add("bad", now);
    /// q.add("good", now);
    /// let (bad, _) = q.get(now).unwrap();
    /// let (good, _) = q.get(now).unwrap();
    /// q.done(&bad, Completion::Failure, now);
    /// q.done(&good, Completion::Success, now);
    /// assert_eq!(q.failing_keys(), 1, "a success of another key does not clear it");
    /// let later = now + Duration::from_secs(60);
    /// let (bad, _) = q.get(later).unwrap();
    /// assert_eq!(q.failing_keys(), 1, "still failing while it retries");
    /// q.done(&bad, Completion::Success, later);
    /// assert_eq!(q.failing_keys(), 0);
    /// ```
    pub fn failing_keys(&self) -> usize {
        self.failing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff() -> Backoff {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(100),
            multiplier: 2.0,
            jitter: 0.0,
        }
    }

    fn queue() -> WorkQueue<&'static str> {
        WorkQueue::with_seed(backoff(), 7)
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn take(q: &mut WorkQueue<&'static str>, now: Instant) -> Vec<&'static str> {
        let mut out = vec![];
        while let Some((k, _)) = q.get(now) {
            out.push(k);
        }
        out
    }

    #[test]
    fn a_burst_gives_its_memory_back_once_the_queue_is_empty() {
        let mut q: WorkQueue<u32> = WorkQueue::new(Backoff::default());
        let t = Instant::now();
        for k in 0..10_000 {
            q.add(k, t);
        }
        assert!(q.entries.capacity() >= 10_000);
        while let Some((k, _)) = q.get(t) {
            q.done(&k, Completion::Success, t);
        }
        assert!(q.is_empty());
        assert!(q.entries.capacity() <= 2048, "{}", q.entries.capacity());
        assert!(q.ready.keys.capacity() <= 2048, "{}", q.ready.keys.capacity());
    }

    #[test]
    fn a_key_queued_twice_is_handed_out_once() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.add("b", t);
        q.add("a", t);
        assert_eq!(take(&mut q, t), ["a", "b"]);
    }

    #[test]
    fn a_processing_key_is_never_handed_out_again_and_does_not_block_others() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        assert_eq!(q.get(t).unwrap().0, "a");
        q.add("a", t);
        q.add("b", t);
        assert_eq!(take(&mut q, t), ["b"]);
    }

    #[test]
    fn re_adds_while_processing_run_exactly_once_more() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.get(t).unwrap();
        for _ in 0..5 {
            q.add("a", t);
        }
        q.add_after("a", secs(5), t);
        assert!(q.get(t).is_none());
        q.done(&"a", Completion::Success, t);
        assert_eq!(take(&mut q, t), ["a"]);
        q.done(&"a", Completion::Success, t);
        assert!(q.is_empty(), "the delayed re-add merged into the immediate one");
    }

    #[test]
    fn a_delayed_re_add_while_processing_waits_for_its_time() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.get(t).unwrap();
        q.add_after("a", secs(5), t);
        q.add_after("a", secs(3), t);
        q.done(&"a", Completion::Success, t);
        assert!(q.get(t + secs(2)).is_none());
        assert_eq!(q.get(t + secs(3)).unwrap().0, "a");
    }

    #[test]
    fn delayed_adds_collapse_to_the_earliest_time() {
        let mut q = queue();
        let t = Instant::now();
        q.add_after("a", secs(10), t);
        q.add_after("a", secs(5), t);
        q.add_after("a", secs(20), t);
        assert_eq!(q.next_due(), Some(t + secs(5)));
        assert!(q.get(t + secs(4)).is_none());
        assert_eq!(take(&mut q, t + secs(5)), ["a"]);
        q.done(&"a", Completion::Success, t + secs(5));
        assert!(q.get(t + secs(30)).is_none(), "collapsed: it runs once");
        assert!(q.is_empty());
    }

    #[test]
    fn an_immediate_add_makes_a_delayed_key_ready_now() {
        let mut q = queue();
        let t = Instant::now();
        q.add_after("a", secs(10), t);
        q.add("a", t + secs(1));
        assert_eq!(take(&mut q, t + secs(1)), ["a"]);
        assert_eq!(q.next_due(), None, "no leftover timer");
    }

    #[test]
    fn failures_back_off_exponentially_and_success_resets() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.get(t).unwrap();
        assert_eq!(q.done(&"a", Completion::Failure, t), Some(secs(1)));
        assert!(q.get(t).is_none());
        let t1 = t + secs(1);
        q.get(t1).unwrap();
        assert_eq!(q.done(&"a", Completion::Failure, t1), Some(secs(2)));
        let t2 = t1 + secs(2);
        q.get(t2).unwrap();
        assert_eq!(q.done(&"a", Completion::Failure, t2), Some(secs(4)));
        let t3 = t2 + secs(4);
        q.get(t3).unwrap();
        assert_eq!(q.failures(&"a"), 3);
        assert_eq!(q.done(&"a", Completion::Success, t3), None);
        assert!(q.is_empty(), "success left no per-key state");
        q.add("a", t3);
        q.get(t3).unwrap();
        assert_eq!(q.done(&"a", Completion::Failure, t3), Some(secs(1)), "reset");
        assert_eq!(q.retries(), 4);
    }

    #[test]
    fn triggers_during_a_backoff_neither_cut_it_short_nor_inflate_it() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.get(t).unwrap();
        q.done(&"a", Completion::Failure, t);
        // A storm of triggers while backing off.
        for i in 0..100 {
            q.add("a", t + Duration::from_millis(i));
            q.add_after("a", Duration::from_millis(1), t);
        }
        assert!(q.get(t + Duration::from_millis(999)).is_none(), "not cut short");
        assert_eq!(q.stats().backing_off, 1);
        let t1 = t + secs(1);
        q.get(t1).unwrap();
        assert_eq!(q.done(&"a", Completion::Failure, t1), Some(secs(2)), "not inflated");
    }

    #[test]
    fn adds_count_keys_becoming_ready_not_duplicate_or_absorbed_adds() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.add("a", t); // already ready
        q.add_after("b", secs(5), t); // not ready yet
        assert_eq!(q.adds(), 1);
        q.get(t).unwrap();
        q.add("a", t); // absorbed into the running key: one more run later
        q.done(&"a", Completion::Failure, t); // the backoff wins
        assert_eq!(q.adds(), 1);
        assert_eq!(take(&mut q, t + secs(5)), ["a", "b"]);
        assert_eq!(q.adds(), 3, "the retry and the delayed key became ready");
    }

    #[test]
    fn a_terminal_failure_is_never_retried() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.get(t).unwrap();
        assert_eq!(q.done(&"a", Completion::Terminal, t), None);
        assert!(q.get(t + secs(1000)).is_none());
        assert!(q.is_empty());
        q.add("a", t);
        assert_eq!(take(&mut q, t), ["a"], "a new add processes it again");
    }

    #[test]
    fn requeue_after_schedules_and_resets_failures() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.get(t).unwrap();
        q.done(&"a", Completion::Failure, t);
        q.get(t + secs(1)).unwrap();
        q.done(&"a", Completion::RequeueAfter(secs(30)), t + secs(1));
        assert_eq!(q.failures(&"a"), 0);
        assert!(q.get(t + secs(30)).is_none());
        assert_eq!(take(&mut q, t + secs(31)), ["a"]);
    }

    #[test]
    fn a_backoff_set_by_the_caller_replaces_the_queues_own() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.get(t).unwrap();
        assert_eq!(q.done_with(&"a", Completion::Failure, Some(secs(7)), t), Some(secs(7)));
        assert_eq!(q.stats().backing_off, 1);
        assert!(q.get(t + secs(6)).is_none());
        assert_eq!(q.get(t + secs(7)).unwrap().0, "a");
        assert_eq!(q.failures(&"a"), 1, "it counts as a failure all the same");
    }

    #[test]
    fn forget_drops_a_ready_or_waiting_key_but_not_one_in_flight() {
        let mut q = queue();
        let t = Instant::now();
        q.add("ready", t);
        q.add_after("delayed", secs(1), t);
        q.add("failing", t);
        q.add("running", t);
        assert_eq!(q.get(t).unwrap().0, "ready");
        q.done(&"ready", Completion::Success, t);
        q.add("ready", t);
        q.get(t).unwrap(); // failing
        q.done(&"failing", Completion::Failure, t);
        q.get(t).unwrap(); // running
        for key in ["ready", "delayed", "failing", "running"] {
            q.forget(&key);
        }
        assert_eq!(q.stats(), QueueStats { processing: 1, ..QueueStats::default() });
        assert_eq!(q.len(), 1, "only the key in flight is left");
        assert!(q.get(t + secs(10)).is_none());
        q.done(&"running", Completion::Success, t);
        assert!(q.is_empty());
    }

    #[test]
    fn ready_keys_come_out_in_the_order_they_became_ready() {
        let mut q = queue();
        let t = Instant::now();
        q.add_after("late", secs(2), t);
        q.add_after("early", secs(1), t);
        q.add("now", t);
        assert_eq!(take(&mut q, t + secs(3)), ["now", "early", "late"]);
    }

    #[test]
    fn time_in_queue_counts_from_becoming_ready() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.add_after("b", secs(5), t);
        assert_eq!(q.get(t + secs(2)).unwrap(), ("a", secs(2)));
        assert_eq!(q.get(t + secs(6)).unwrap(), ("b", secs(1)));
    }

    #[test]
    fn shutdown_drains_in_flight_work_and_drops_the_rest() {
        let mut q = queue();
        let t = Instant::now();
        q.add("a", t);
        q.add("b", t);
        q.add_after("c", secs(1), t);
        q.get(t).unwrap();
        q.shutdown();
        assert!(!q.is_drained(), "a is in flight");
        assert!(q.get(t + secs(5)).is_none());
        q.add("d", t);
        q.done(&"a", Completion::Failure, t);
        assert!(q.is_drained());
        assert!(q.is_empty());
    }
}
