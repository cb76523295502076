//! Per-controller counters, shared by a controller's actor and its context.

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Where a controller is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControllerStatus {
    /// Idle, waiting for changes, or reconciling.
    Running,
    /// The last reconcile failed; a retry is scheduled.
    BackingOff,
    /// It failed more often than the restart-intensity limit allows and is not
    /// retried any more.
    Failed,
    /// The runtime stopped it.
    Stopped,
    /// Registered and watching, not reconciling: on a shared (etcd) state,
    /// another process holds the claim on its exclusive outputs.
    Standby,
}

impl ControllerStatus {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => ControllerStatus::BackingOff,
            2 => ControllerStatus::Failed,
            3 => ControllerStatus::Stopped,
            4 => ControllerStatus::Standby,
            _ => ControllerStatus::Running,
        }
    }

    fn as_u8(self) -> u8 {
        match self {
            ControllerStatus::Running => 0,
            ControllerStatus::BackingOff => 1,
            ControllerStatus::Failed => 2,
            ControllerStatus::Stopped => 3,
            ControllerStatus::Standby => 4,
        }
    }
}

impl fmt::Display for ControllerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ControllerStatus::Running => "running",
            ControllerStatus::BackingOff => "backing-off",
            ControllerStatus::Failed => "failed",
            ControllerStatus::Stopped => "stopped",
            ControllerStatus::Standby => "standby",
        })
    }
}

/// Live counters of one controller.
pub(crate) struct Counters {
    pub(crate) wakeups: AtomicU64,
    pub(crate) reconciles: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) terminal_errors: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) requeues: AtomicU64,
    pub(crate) requeues_after: AtomicU64,
    pub(crate) reads: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) active_workers: AtomicU64,
    max_concurrent: AtomicU64,
    pub(crate) reconcile_time: Histogram,
    /// The controller's work queue, in controller-runtime's terms (a plain
    /// controller's queue holds at most its one pending reconcile).
    pub(crate) work_queue: WorkQueueCounters,
    status: AtomicU8,
    /// Failed reconciles since the last success (errors and panics).
    failures_in_a_row: AtomicU64,
    /// The last failure's message, until a reconcile succeeds.
    last_error: std::sync::Mutex<Option<String>>,
    /// Reconciles in a row triggered only by the controller's own writes.
    pub(crate) self_triggered: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            wakeups: AtomicU64::new(0),
            reconciles: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            terminal_errors: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            requeues: AtomicU64::new(0),
            requeues_after: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            active_workers: AtomicU64::new(0),
            max_concurrent: AtomicU64::new(1),
            reconcile_time: Histogram::new(&RECONCILE_TIME_BUCKETS),
            work_queue: WorkQueueCounters::default(),
            status: AtomicU8::new(0),
            failures_in_a_row: AtomicU64::new(0),
            last_error: std::sync::Mutex::new(None),
            self_triggered: AtomicU64::new(0),
        }
    }
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// [`bump`](Counters::bump) for a counter only its controller's host
    /// actor writes (readers on other threads see whole values): a load and
    /// a store, not a read-modify-write.
    pub(crate) fn bump_own(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    pub(crate) fn set_status(&self, status: ControllerStatus) {
        self.status.store(status.as_u8(), Ordering::Relaxed);
    }

    /// How many reconciles of this controller may run at once.
    pub(crate) fn set_max_concurrent(&self, n: usize) {
        self.max_concurrent.store(n as u64, Ordering::Relaxed);
    }

    /// Records a successful reconcile that asked to run again after `delay`
    /// (none: it did not ask).
    pub(crate) fn requeued(&self, delay: Option<std::time::Duration>) {
        match delay {
            None => {}
            Some(d) if d.is_zero() => Counters::bump(&self.requeues),
            Some(_) => Counters::bump(&self.requeues_after),
        }
    }

    /// Records a failed reconcile (an error or a panic) for [`ControllerMetrics::last_error`].
    pub(crate) fn failed(&self, error: &str) {
        self.failures_in_a_row.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(error.to_owned());
    }

    /// Records a successful reconcile: the failure streak ends (unless the
    /// controller failed for good: a reconcile that was under way then does
    /// not clear why).
    pub(crate) fn succeeded(&self) {
        // Read first: after a success, usually nothing to reset.
        if self.failures_in_a_row.load(Ordering::Relaxed) > 0
            && self.status() != ControllerStatus::Failed
            && self.failures_in_a_row.swap(0, Ordering::Relaxed) > 0
        {
            *self.last_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        }
    }

    pub(crate) fn status(&self) -> ControllerStatus {
        ControllerStatus::from_u8(self.status.load(Ordering::Relaxed))
    }

    pub(crate) fn snapshot(
        &self,
        controller: &str,
        queue: Option<&QueueCounters>,
    ) -> ControllerMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ControllerMetrics {
            queue: queue.map(QueueCounters::snapshot),
            controller: controller.to_owned(),
            status: self.status(),
            wakeups: get(&self.wakeups),
            reconciles: get(&self.reconciles),
            errors: get(&self.errors),
            terminal_errors: get(&self.terminal_errors),
            panics: get(&self.panics),
            restarts: get(&self.restarts),
            retries: get(&self.retries),
            requeues: get(&self.requeues),
            requeues_after: get(&self.requeues_after),
            reads: get(&self.reads),
            writes: get(&self.writes),
            active_workers: get(&self.active_workers),
            max_concurrent_reconciles: get(&self.max_concurrent),
            reconcile_time: self.reconcile_time.snapshot(),
            work_queue: self.work_queue.snapshot(),
            failures_in_a_row: get(&self.failures_in_a_row),
            last_error: self
                .last_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
            self_triggered: get(&self.self_triggered),
        }
    }
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.snapshot("?", None).fmt(f)
    }
}

/// A snapshot of one controller's counters.
///
/// The Prometheus rendering ([`prometheus`](crate::prometheus)) maps these
/// onto controller-runtime's series: `controller_runtime_reconcile_total`
/// with `result="success"` is `reconciles - requeues - requeues_after`,
/// `"requeue"` is `requeues`, `"requeue_after"` is `requeues_after`, and
/// `"error"` is `errors + panics`.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerMetrics {
    /// The controller.
    pub controller: String,
    /// Its status.
    pub status: ControllerStatus,
    /// Change notifications that asked for a reconcile (before coalescing).
    pub wakeups: u64,
    /// Reconciles that completed successfully (those that asked to run again
    /// included).
    pub reconciles: u64,
    /// Reconciles that returned an error (terminal errors included).
    pub errors: u64,
    /// Reconciles that returned a [`TerminalError`](crate::controller::TerminalError)
    /// (also counted in `errors`).
    pub terminal_errors: u64,
    /// Reconciles that panicked.
    pub panics: u64,
    /// Fresh instances built from the factory to replace one that panicked.
    pub restarts: u64,
    /// Failed reconciles (errors and panics) scheduled to run again after a
    /// backoff.
    pub retries: u64,
    /// Successful reconciles that asked to run again at once (a zero delay).
    pub requeues: u64,
    /// Successful reconciles that asked to run again after a delay.
    pub requeues_after: u64,
    /// State reads through its context.
    pub reads: u64,
    /// State writes through its context.
    pub writes: u64,
    /// Reconciles running now.
    pub active_workers: u64,
    /// How many reconciles may run at once (1 for a plain controller, the
    /// concurrency of a queue controller).
    pub max_concurrent_reconciles: u64,
    /// How long reconciles took (buckets: [`RECONCILE_TIME_BUCKETS`]).
    pub reconcile_time: HistogramSnapshot,
    /// The work queue, in controller-runtime's terms.
    pub work_queue: WorkQueueMetrics,
    /// Failed reconciles (errors and panics) since the last success. For a
    /// queue controller, since the last success that left no key failing:
    /// one key's success does not hide another key that keeps failing.
    pub failures_in_a_row: u64,
    /// The last failure's message while the controller is failing (cleared
    /// by a successful reconcile as `failures_in_a_row` is); for a failed
    /// controller, why it gave up.
    pub last_error: Option<String>,
    /// Queue figures, for queue controllers.
    pub queue: Option<QueueMetrics>,
    /// Reconciles in a row that only the controller's own writes triggered
    /// (0 once anything else triggers one). At [`SELF_TRIGGER_LIMIT`] the
    /// controller is reported as re-triggering itself: a loop.
    pub self_triggered: u64,
}

/// How many reconciles in a row a controller may cause by its own writes
/// alone before it is reported as re-triggering itself (a loop: a mapping
/// that is not a pure function of its inputs, or an output that is also a
/// fully watched input). A controller that converges takes one or two.
///
/// The run is counted in [`ControllerMetrics::self_triggered`]; reaching the
/// limit is logged once at WARN and shown by [`health`](crate::Runtime::health).
pub const SELF_TRIGGER_LIMIT: u64 = 100;

/// Upper bounds of the latency histogram buckets of [`QueueMetrics`], in seconds.
pub const LATENCY_BUCKETS: [f64; 7] = [0.000_1, 0.001, 0.01, 0.1, 1.0, 10.0, 60.0];

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`.
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// client-go's buckets for `workqueue_queue_duration_seconds` and
/// `workqueue_work_duration_seconds` (10 ns to 1000 s, by powers of ten).
pub const WORKQUEUE_DURATION_BUCKETS: [f64; 12] =
    [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];

/// A latency histogram with fixed buckets.
pub(crate) struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative); one more for above the last bound.
    buckets: Box<[AtomicU64]>,
    /// The bounds in nanoseconds: an observation is placed by integer
    /// comparisons (no conversion to seconds).
    bounds_nanos: Box<[u64]>,
    count: AtomicU64,
    sum_nanos: AtomicU64,
    max_nanos: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new(&LATENCY_BUCKETS)
    }
}

impl Histogram {
    pub(crate) fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            // Bounds are whole nanoseconds (decimal fractions of a second):
            // an observation goes to the first bound not below it.
            bounds_nanos: bounds.iter().map(|b| (b * 1e9).round() as u64).collect(),
            count: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
            max_nanos: AtomicU64::new(0),
        }
    }

    /// Records one observation.
    ///
    /// Single writer: every histogram is observed only by its controller's
    /// host actor (one thread at a time), so each figure is a plain load and
    /// store, not an atomic read-modify-write (five histograms are observed
    /// per queue reconcile, so with many short reconciles the atomics would
    /// show in a profile).
    /// Readers on other threads still see whole values.
    pub(crate) fn observe(&self, d: std::time::Duration) {
        fn add(figure: &AtomicU64, n: u64) {
            figure.store(figure.load(Ordering::Relaxed).saturating_add(n), Ordering::Relaxed);
        }
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let bucket = self.bounds_nanos.partition_point(|bound| *bound < nanos);
        if let Some(b) = self.buckets.get(bucket) {
            add(b, 1);
        }
        add(&self.count, 1);
        add(&self.sum_nanos, nanos);
        if nanos > self.max_nanos.load(Ordering::Relaxed) {
            self.max_nanos.store(nanos, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let mut below = 0;
        let cumulative = self
            .bounds
            .iter()
            .zip(self.buckets.iter())
            .map(|(bound, c)| {
                below += c.load(Ordering::Relaxed);
                (*bound, below)
            })
            .collect();
        HistogramSnapshot {
            count: self.count.load(Ordering::Relaxed),
            sum: std::time::Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed)),
            max: std::time::Duration::from_nanos(self.max_nanos.load(Ordering::Relaxed)),
            cumulative,
        }
    }
}

/// A snapshot of a latency histogram.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramSnapshot {
    /// Observations.
    pub count: u64,
    /// Their sum.
    pub sum: std::time::Duration,
    /// The largest.
    pub max: std::time::Duration,
    /// (upper bound in seconds, observations ≤ bound), cumulative as in Prometheus.
    pub cumulative: Vec<(f64, u64)>,
}

impl HistogramSnapshot {
    /// The mean, or zero with no observation.
    pub fn mean(&self) -> std::time::Duration {
        if self.count == 0 {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_secs_f64(self.sum.as_secs_f64() / self.count as f64)
        }
    }
}

/// Live figures of a controller's work queue, in client-go's terms.
pub(crate) struct WorkQueueCounters {
    /// Items ready to be handed out.
    pub(crate) depth: AtomicU64,
    /// Items that became ready.
    pub(crate) adds: AtomicU64,
    /// Items queued with a delay (a backoff or a requested requeue).
    pub(crate) retries: AtomicU64,
    /// From ready to handed out.
    pub(crate) queue_duration: Histogram,
    /// Handed out to done.
    pub(crate) work_duration: Histogram,
    /// Items being processed (written only by the controller's host).
    running: AtomicU64,
    /// The sum of their hand-out times, in nanoseconds since `base`.
    start_sum: AtomicU64,
    /// The earliest of their hand-out times, in nanoseconds since `base`.
    oldest: AtomicU64,
    base: tokio::time::Instant,
}

/// The items a host is processing, by hand-out time: kept by the host (one
/// writer, no lock), published to its [`WorkQueueCounters`] as the three
/// figures the metrics need (how many, the sum of their start times, the
/// earliest).
#[derive(Debug, Default)]
pub(crate) struct Running {
    /// Hand-out times in nanoseconds since the counters' base, oldest first
    /// (a host hands out with a monotonic clock, so pushing keeps the order).
    starts: std::collections::VecDeque<u64>,
}

impl Running {
    /// An item was handed out at `at`.
    pub(crate) fn started(&mut self, at: tokio::time::Instant, counters: &WorkQueueCounters) {
        let at = counters.nanos(at);
        self.starts.push_back(at);
        counters.publish(self.starts.len(), i128::from(at), self.starts.front());
    }

    /// How many are being processed.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The item handed out at `at` is done.
    pub(crate) fn finished(&mut self, at: tokio::time::Instant, counters: &WorkQueueCounters) {
        let at = counters.nanos(at);
        // Sorted (see `starts`): found in O(log n), where a scan cost a
        // comparison per item in flight (a pool of 1,024 workers). The scan
        // stays behind it, should a start ever be recorded out of order.
        let found = self.starts.binary_search(&at).ok();
        if let Some(i) = found.or_else(|| self.starts.iter().position(|t| *t == at)) {
            self.starts.remove(i);
        }
        counters.publish(self.starts.len(), -i128::from(at), self.starts.front());
    }
}

impl Default for WorkQueueCounters {
    fn default() -> Self {
        WorkQueueCounters {
            depth: AtomicU64::new(0),
            adds: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            queue_duration: Histogram::new(&WORKQUEUE_DURATION_BUCKETS),
            work_duration: Histogram::new(&WORKQUEUE_DURATION_BUCKETS),
            running: AtomicU64::new(0),
            start_sum: AtomicU64::new(0),
            oldest: AtomicU64::new(0),
            base: tokio::time::Instant::now(),
        }
    }
}

impl WorkQueueCounters {
    fn nanos(&self, at: tokio::time::Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Publishes what [`Running`] holds after a change of `delta` to the sum
    /// of start times (one writer: loads and stores).
    fn publish(&self, running: usize, delta: i128, oldest: Option<&u64>) {
        let sum = i128::from(self.start_sum.load(Ordering::Relaxed)) + delta;
        self.start_sum.store(u64::try_from(sum.max(0)).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.oldest.store(oldest.copied().unwrap_or(0), Ordering::Relaxed);
        self.running.store(running as u64, Ordering::Relaxed);
    }

    /// An item handed out `took` ago is done.
    pub(crate) fn finished(&self, took: Duration) {
        self.work_duration.observe(took);
    }

    pub(crate) fn snapshot(&self) -> WorkQueueMetrics {
        let now = self.nanos(tokio::time::Instant::now());
        let running = self.running.load(Ordering::Relaxed);
        let (unfinished, longest) = if running == 0 {
            (Duration::ZERO, Duration::ZERO)
        } else {
            let sum = self.start_sum.load(Ordering::Relaxed);
            let oldest = self.oldest.load(Ordering::Relaxed);
            (
                Duration::from_nanos(running.saturating_mul(now).saturating_sub(sum)),
                Duration::from_nanos(now.saturating_sub(oldest)),
            )
        };
        WorkQueueMetrics {
            depth: self.depth.load(Ordering::Relaxed),
            adds: self.adds.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            queue_duration: self.queue_duration.snapshot(),
            work_duration: self.work_duration.snapshot(),
            unfinished_work: unfinished,
            longest_running: longest,
        }
    }
}

/// A controller's work queue, in client-go's terms (its `workqueue_*`
/// series). A plain controller's queue holds at most its one pending
/// reconcile; a queue controller's holds its keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkQueueMetrics {
    /// Items ready to be handed out now (not those waiting for a time, nor
    /// those being processed).
    pub depth: u64,
    /// Items that became ready.
    pub adds: u64,
    /// Items queued with a delay: a retry after a failure, a requested
    /// requeue, a delayed enqueue.
    pub retries: u64,
    /// How long items waited between becoming ready and being handed out
    /// (buckets: [`WORKQUEUE_DURATION_BUCKETS`]).
    pub queue_duration: HistogramSnapshot,
    /// How long processing took, from hand-out to done (same buckets).
    pub work_duration: HistogramSnapshot,
    /// How long the items being processed now have been running, added up.
    pub unfinished_work: Duration,
    /// How long the longest-running item being processed now has run.
    pub longest_running: Duration,
}

/// Live queue figures of one queue controller.
#[derive(Default)]
pub(crate) struct QueueCounters {
    pub(crate) depth: AtomicU64,
    pub(crate) processing: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) time_in_queue: Histogram,
    pub(crate) latency: Histogram,
}

impl QueueCounters {
    pub(crate) fn snapshot(&self) -> QueueMetrics {
        QueueMetrics {
            depth: self.depth.load(Ordering::Relaxed),
            processing: self.processing.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            time_in_queue: self.time_in_queue.snapshot(),
            reconcile_latency: self.latency.snapshot(),
        }
    }
}

/// Queue figures of a queue controller.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueMetrics {
    /// Keys waiting: ready, delayed or backing off.
    pub depth: u64,
    /// Keys being reconciled now.
    pub processing: u64,
    /// Retries scheduled after failures.
    pub retries: u64,
    /// How long keys waited between becoming ready and being handed out.
    pub time_in_queue: HistogramSnapshot,
    /// How long reconciles took.
    pub reconcile_latency: HistogramSnapshot,
}

/// One registered controller's live counters.
#[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
struct Registered {
    name: Arc<str>,
    counters: Arc<Counters>,
    queue: Option<Arc<QueueCounters>>,
}

/// The live counters of every controller of a runtime, in registration
/// order: the supervisor adds to it, a metrics collector reads it at scrape
/// time (a short read lock, never held across an await).
#[derive(Clone, Default)]
pub(crate) struct ControllerSet(Arc<RwLock<Vec<Registered>>>);

impl ControllerSet {
    pub(crate) fn add(
        &self,
        name: &str,
        counters: Arc<Counters>,
        queue: Option<Arc<QueueCounters>>,
    ) {
        let entry = Registered { name: Arc::from(name), counters, queue };
        self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner).push(entry);
    }

    /// Every controller's counters now.
    #[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
    pub(crate) fn snapshot(&self) -> Vec<ControllerMetrics> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|r| r.counters.snapshot(&r.name, r.queue.as_deref()))
            .collect()
    }
    /// How many reconciles have ended, in all (successes, errors, panics),
    /// and whether a controller keeps re-triggering itself: what
    /// [`Runtime::settled`](crate::Runtime::settled) watches for progress.
    pub(crate) fn progress(&self) -> (u64, bool) {
        let all = self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        all.iter().fold((0, false), |(ended, looping), r| {
            let c = &r.counters;
            (
                ended + get(&c.reconciles) + get(&c.errors) + get(&c.panics),
                looping || get(&c.self_triggered) >= SELF_TRIGGER_LIMIT,
            )
        })
    }
}

impl fmt::Debug for ControllerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        f.debug_list().entries(all.iter().map(|r| &*r.name)).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn running_forgets_each_finished_start_in_any_order() {
        let counters = WorkQueueCounters::default();
        let base = counters.base;
        let at = |ms: u64| base + Duration::from_millis(ms);
        let mut running = Running::default();
        for ms in [1, 2, 2, 3, 5] {
            running.started(at(ms), &counters);
        }
        // Out of order, and one recorded out of order (4 after 5).
        running.started(at(4), &counters);
        for (ms, left) in [(2, 5), (5, 4), (1, 3), (4, 2), (2, 1), (3, 0)] {
            running.finished(at(ms), &counters);
            assert_eq!(running.len(), left, "after finishing {ms} ms");
        }
        running.finished(at(9), &counters);
        assert_eq!(running.len(), 0, "an unknown start changes nothing");
    }
}
