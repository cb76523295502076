//! [`Health`]: how every controller of a runtime is doing, in one answer.

use std::fmt;

use super::metrics::{ControllerMetrics, ControllerStatus};

/// One controller's health, from [`Runtime::health`](crate::Runtime::health).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerHealth {
    /// The controller.
    pub controller: String,
    /// Where it is in its life.
    pub status: ControllerStatus,
    /// Failed reconciles since the last success (the attempt count of a
    /// controller backing off). For a queue controller, since the last
    /// success that left no key failing, so a key that keeps failing stays
    /// in view (with its `last_error`) while other keys succeed.
    pub failures_in_a_row: u64,
    /// The last failure while failing; why it gave up once failed.
    pub last_error: Option<String>,
    /// Work waiting and work running: for a queue controller, keys; for a
    /// plain controller, its one pending reconcile and its one running.
    /// (`None` only in values built by hand.)
    pub queued: Option<(u64, u64)>,
    /// Reconciles in a row that only its own writes triggered: at
    /// [`SELF_TRIGGER_LIMIT`](super::SELF_TRIGGER_LIMIT) or more it keeps
    /// re-triggering itself.
    pub self_triggered: u64,
}

impl ControllerHealth {
    /// Whether it works as it should: running (or standing by), not
    /// failing, and not re-triggering itself.
    pub fn is_healthy(&self) -> bool {
        matches!(self.status, ControllerStatus::Running | ControllerStatus::Standby)
            && self.failures_in_a_row == 0
            && !self.is_looping()
    }

    /// Whether it keeps re-triggering itself: at least
    /// [`SELF_TRIGGER_LIMIT`](super::SELF_TRIGGER_LIMIT) reconciles in a row
    /// that nothing but its own writes asked for.
    pub fn is_looping(&self) -> bool {
        self.self_triggered >= super::SELF_TRIGGER_LIMIT
    }
}

impl From<&ControllerMetrics> for ControllerHealth {
    fn from(m: &ControllerMetrics) -> Self {
        ControllerHealth {
            controller: m.controller.clone(),
            status: m.status,
            failures_in_a_row: m.failures_in_a_row,
            last_error: m.last_error.clone(),
            queued: Some(match &m.queue {
                Some(q) => (q.depth, q.processing),
                None => (m.work_queue.depth, m.active_workers),
            }),
            self_triggered: m.self_triggered,
        }
    }
}

impl fmt::Display for ControllerHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.controller, self.status)?;
        if let Some((waiting, running)) = self.queued
            && waiting + running > 0
        {
            if running > 0 {
                write!(f, ", {waiting} queued, {running} reconciling now")?;
            } else {
                write!(f, ", {waiting} queued")?;
            }
        }
        if self.failures_in_a_row > 0 {
            write!(f, ", {} failures in a row", self.failures_in_a_row)?;
        }
        if self.is_looping() {
            write!(
                f,
                ", re-triggers itself: {} reconciles in a row caused only by its own writes",
                self.self_triggered
            )?;
        }
        if let Some(e) = &self.last_error {
            write!(f, ", last error: {e}")?;
        }
        Ok(())
    }
}

/// Every controller's health, in registration order.
///
/// ```
/// # actix::System::new().block_on(async {
/// let runtime = cosi_runtime::Runtime::start();
/// let health = runtime.health().await;
/// assert!(health.is_healthy()); // no controller yet: nothing is wrong
/// println!("{health}");         // one line per controller
/// # });
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// One entry per controller.
    pub controllers: Vec<ControllerHealth>,
}

impl Health {
    /// Whether every controller is healthy.
    pub fn is_healthy(&self) -> bool {
        self.controllers.iter().all(ControllerHealth::is_healthy)
    }

    /// The controllers that are not healthy (failed, backing off, failing, stopped).
    pub fn unhealthy(&self) -> impl Iterator<Item = &ControllerHealth> {
        self.controllers.iter().filter(|c| !c.is_healthy())
    }
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.controllers.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(status: ControllerStatus, failures: u64, error: Option<&str>) -> ControllerHealth {
        ControllerHealth {
            controller: "c".into(),
            status,
            failures_in_a_row: failures,
            last_error: error.map(str::to_owned),
            queued: None,
            self_triggered: 0,
        }
    }

    #[test]
    fn failing_or_failed_controllers_are_unhealthy_and_say_why() {
        let ok = health(ControllerStatus::Running, 0, None);
        let failing = health(ControllerStatus::BackingOff, 3, Some("boom"));
        let failed = health(ControllerStatus::Failed, 1, Some("terminal: bad spec"));
        assert!(ok.is_healthy());
        assert!(!failing.is_healthy() && !failed.is_healthy());
        assert_eq!(failing.to_string(), "c: backing-off, 3 failures in a row, last error: boom");
        let all = Health { controllers: vec![ok, failing, failed] };
        assert!(!all.is_healthy());
        assert_eq!(all.unhealthy().count(), 2);
        assert_eq!(all.to_string().lines().count(), 3);
    }

    #[test]
    fn a_controller_that_re_triggers_itself_is_unhealthy_and_says_so() {
        let mut looping = health(ControllerStatus::Running, 0, None);
        looping.self_triggered = crate::controller::SELF_TRIGGER_LIMIT - 1;
        assert!(looping.is_healthy(), "one short of the limit");
        looping.self_triggered = 250;
        assert!(!looping.is_healthy());
        assert_eq!(
            looping.to_string(),
            "c: running, re-triggers itself: 250 reconciles in a row caused only by its own writes"
        );
    }
}
