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
}

impl ControllerStatus {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => ControllerStatus::BackingOff,
            2 => ControllerStatus::Failed,
            3 => ControllerStatus::Stopped,
            _ => ControllerStatus::Running,
        }
    }

    fn as_u8(self) -> u8 {
        match self {
            ControllerStatus::Running => 0,
            ControllerStatus::BackingOff => 1,
            ControllerStatus::Failed => 2,
            ControllerStatus::Stopped => 3,
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
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn set_status(&self, status: ControllerStatus) {
        self.status.store(status.as_u8(), Ordering::Relaxed);
    }

    pub(crate) fn status(&self) -> ControllerStatus {
        ControllerStatus::from_u8(self.status.load(Ordering::Relaxed))
    }

    pub(crate) fn snapshot(&self, controller: &str) -> ControllerMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ControllerMetrics {
            controller: controller.to_owned(),
            status: self.status(),
            wakeups: get(&self.wakeups),
            reconciles: get(&self.reconciles),
            errors: get(&self.errors),
            panics: get(&self.panics),
            restarts: get(&self.restarts),
            reads: get(&self.reads),
            writes: get(&self.writes),
        }
    }
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.snapshot("?").fmt(f)
    }
}

/// A snapshot of one controller's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
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
}
