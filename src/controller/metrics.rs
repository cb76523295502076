//! Per-controller counters, shared by a controller's actor and its context.

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

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
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) wakeups: AtomicU64,
    pub(crate) reconciles: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) reads: AtomicU64,
    pub(crate) writes: AtomicU64,
    status: AtomicU8,
    /// Failed reconciles since the last success (errors and panics).
    failures_in_a_row: AtomicU64,
    /// The last failure's message, until a reconcile succeeds.
    last_error: std::sync::Mutex<Option<String>>,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn set_status(&self, status: ControllerStatus) {
        self.status.store(status.as_u8(), Ordering::Relaxed);
    }

    /// Records a failed reconcile (an error or a panic) for [`ControllerMetrics::last_error`].
    pub(crate) fn failed(&self, error: &str) {
        self.failures_in_a_row.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(error.to_owned());
    }

    /// Records a successful reconcile: the failure streak ends.
    pub(crate) fn succeeded(&self) {
        if self.failures_in_a_row.swap(0, Ordering::Relaxed) > 0 {
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
            panics: get(&self.panics),
            restarts: get(&self.restarts),
            reads: get(&self.reads),
            writes: get(&self.writes),
            failures_in_a_row: get(&self.failures_in_a_row),
            last_error: self
                .last_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.snapshot("?", None).fmt(f)
    }
}

/// A snapshot of one controller's counters.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerMetrics {
    /// The controller.
    pub controller: String,
    /// Its status.
    pub status: ControllerStatus,
    /// Change notifications that asked for a reconcile (before coalescing).
    pub wakeups: u64,
    /// Reconciles that completed successfully.
    pub reconciles: u64,
    /// Reconciles that returned an error.
    pub errors: u64,
    /// Reconciles that panicked.
    pub panics: u64,
    /// Retries after a failure (after a panic, with a fresh instance).
    pub restarts: u64,
    /// State reads through its context.
    pub reads: u64,
    /// State writes through its context.
    pub writes: u64,
    /// Failed reconciles (errors and panics) since the last success.
    pub failures_in_a_row: u64,
    /// The last failure's message while the controller is failing (cleared by
    /// a successful reconcile); for a failed controller, why it gave up.
    pub last_error: Option<String>,
    /// Queue figures, for queue controllers.
    pub queue: Option<QueueMetrics>,
}

/// Upper bounds of the latency histogram buckets, in seconds.
pub const LATENCY_BUCKETS: [f64; 7] = [0.000_1, 0.001, 0.01, 0.1, 1.0, 10.0, 60.0];

/// A latency histogram with fixed buckets ([`LATENCY_BUCKETS`]).
#[derive(Default)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
    max_nanos: AtomicU64,
}

impl Histogram {
    pub(crate) fn observe(&self, d: std::time::Duration) {
        let secs = d.as_secs_f64();
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            count: self.count.load(Ordering::Relaxed),
            sum: std::time::Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed)),
            max: std::time::Duration::from_nanos(self.max_nanos.load(Ordering::Relaxed)),
            cumulative: LATENCY_BUCKETS
                .iter()
                .zip(&self.buckets)
                .map(|(b, c)| (*b, c.load(Ordering::Relaxed)))
                .collect(),
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
