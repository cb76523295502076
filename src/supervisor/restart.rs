//! The restart policy (pure): exponential backoff with jitter, and an optional
//! restart-intensity limit.

pub use crate::backoff::Backoff;

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// At most `max_restarts` failed reconciles within any window of `within`
/// (the restart intensity of Erlang/OTP supervisors, whose name the field
/// keeps).
///
/// What it counts is every failure of a plain controller's reconcile, an
/// error or a panic: each is followed by a retry after a backoff, and that
/// retry is what the limit allows or refuses. In the metrics
/// ([`ControllerMetrics`](crate::controller::ControllerMetrics)) these are
/// `retries`; `restarts` counts only the fresh instances built from the
/// factory after a panic, a subset of the same failures. The limit is there
/// to stop a controller that keeps failing from looping forever. Queue
/// controllers back off per key instead, and are not limited by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intensity {
    /// Failed reconciles (so retries) allowed in the window.
    pub max_restarts: u32,
    /// The window.
    pub within: Duration,
}

/// What happens when a controller exceeds its restart intensity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnExceeded {
    /// Mark the controller failed, log it, and stop retrying it; the rest of
    /// the runtime goes on.
    #[default]
    MarkFailed,
    /// Stop the whole runtime (every controller), so that the process can exit
    /// and be restarted by its own supervisor (systemd, Kubernetes, ...).
    StopRuntime,
}

/// How failed reconciles are retried.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RestartPolicy {
    /// The delay before each retry.
    pub backoff: Backoff,
    /// An optional limit on failed reconciles (retries) in a time window
    /// (none by default: retry forever).
    pub intensity: Option<Intensity>,
    /// What to do past the limit.
    pub on_exceeded: OnExceeded,
}

/// The verdict on one failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Retry after this delay.
    Retry(Duration),
    /// The intensity limit is exceeded.
    GiveUp,
}

/// Failure bookkeeping of one controller.
#[derive(Debug, Default)]
pub(crate) struct RestartTracker {
    consecutive: u32,
    recent: VecDeque<Instant>,
}

impl RestartTracker {
    /// Records a failure at `now` and decides what happens next.
    pub(crate) fn on_failure(
        &mut self,
        policy: &RestartPolicy,
        now: Instant,
        unit: f64,
    ) -> Decision {
        if let Some(limit) = policy.intensity {
            while self.recent.front().is_some_and(|t| now.duration_since(*t) >= limit.within) {
                self.recent.pop_front();
            }
            if self.recent.len() >= limit.max_restarts as usize {
                return Decision::GiveUp;
            }
            self.recent.push_back(now);
        }
        let delay = policy.backoff.delay(self.consecutive, unit);
        self.consecutive = self.consecutive.saturating_add(1);
        Decision::Retry(delay)
    }

    /// A reconcile succeeded: the next failure starts from the initial delay.
    pub(crate) fn on_success(&mut self) {
        self.consecutive = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::tests::no_jitter;

    #[test]
    fn success_resets_the_backoff() {
        let policy = RestartPolicy { backoff: no_jitter(), ..RestartPolicy::default() };
        let mut t = RestartTracker::default();
        let now = Instant::now();
        assert_eq!(t.on_failure(&policy, now, 0.0), Decision::Retry(Duration::from_millis(10)));
        assert_eq!(t.on_failure(&policy, now, 0.0), Decision::Retry(Duration::from_millis(20)));
        t.on_success();
        assert_eq!(t.on_failure(&policy, now, 0.0), Decision::Retry(Duration::from_millis(10)));
    }

    #[test]
    fn intensity_gives_up_past_n_restarts_in_the_window() {
        let policy = RestartPolicy {
            backoff: no_jitter(),
            intensity: Some(Intensity { max_restarts: 2, within: Duration::from_secs(10) }),
            on_exceeded: OnExceeded::MarkFailed,
        };
        let mut t = RestartTracker::default();
        let t0 = Instant::now();
        assert!(matches!(t.on_failure(&policy, t0, 0.0), Decision::Retry(_)));
        assert!(matches!(
            t.on_failure(&policy, t0 + Duration::from_secs(1), 0.0),
            Decision::Retry(_)
        ));
        assert_eq!(t.on_failure(&policy, t0 + Duration::from_secs(2), 0.0), Decision::GiveUp);
        // Once the window has moved past the old restarts, retries are allowed again.
        assert!(matches!(
            t.on_failure(&policy, t0 + Duration::from_secs(12), 0.0),
            Decision::Retry(_)
        ));
    }
}
