//! What the host does around one reconcile, whatever the controller kind:
//! run it with panics caught and its span's `result` recorded, time it, and
//! account for how it ended.
//!
//! [`Plain`](super::plain) and [`Queued`](super::queue_host) differ in what
//! happens next (the restart policy, or per-key backoff); what a reconcile
//! is, and what it counts, is here once. It names nothing of the host
//! itself, which builds on it.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use tokio::time::Instant;

use super::ReconcileError;
use super::metrics::{Counters, Running, SELF_TRIGGER_LIMIT};
use super::queue::TerminalError;

/// How one reconcile ended.
#[derive(Debug)]
pub(crate) enum Ended<T> {
    /// It returned `Ok`.
    Succeeded(T),
    /// It returned a terminal error: not retried.
    Terminal(ReconcileError),
    /// It returned another error: retried after a backoff.
    Failed(ReconcileError),
    /// It was refused an access its declarations do not allow
    /// ([`Error::AccessDenied`](crate::Error::AccessDenied)): a bug in the
    /// program that no retry can fix, so the controller stops.
    Denied(ReconcileError),
    /// It panicked (the payload's text).
    Panicked(String),
}

impl<T> Ended<T> {
    fn of(result: Result<Result<T, ReconcileError>, String>) -> Self {
        match result {
            Ok(Ok(value)) => Ended::Succeeded(value),
            Ok(Err(e)) if is_access_denied(&*e) => Ended::Denied(e),
            Ok(Err(e)) if TerminalError::is_terminal(&e) => Ended::Terminal(e),
            Ok(Err(e)) => Ended::Failed(e),
            Err(panic) => Ended::Panicked(panic),
        }
    }

    /// The reconcile span's `result` field: what `success` says of a
    /// success (`success`, `requeue`), `terminal error`, `error` or `panic`.
    pub(crate) fn label(&self, success: impl Fn(&T) -> &'static str) -> &'static str {
        match self {
            Ended::Succeeded(value) => success(value),
            Ended::Terminal(_) | Ended::Denied(_) => "terminal error",
            Ended::Failed(_) => "error",
            Ended::Panicked(_) => "panic",
        }
    }

    /// Counts how it ended; for a failure, remembers `subject` and the reason
    /// (the last error of [`ControllerMetrics`](super::ControllerMetrics))
    /// and returns that text. A success ends the failure streak only when
    /// `ends_streak` (a queue controller's success of one key does not
    /// while other keys are still failing).
    pub(crate) fn account(
        &self,
        counters: &Counters,
        subject: Option<&dyn std::fmt::Display>,
        ends_streak: bool,
    ) -> Option<String> {
        let reason = |what: &dyn std::fmt::Display| match subject {
            Some(s) => format!("{s}: {what}"),
            None => what.to_string(),
        };
        let reason = match self {
            Ended::Succeeded(_) => {
                Counters::bump_own(&counters.reconciles);
                if ends_streak {
                    counters.succeeded();
                }
                return None;
            }
            Ended::Terminal(e) | Ended::Denied(e) => {
                Counters::bump(&counters.errors);
                Counters::bump(&counters.terminal_errors);
                reason(e)
            }
            Ended::Failed(e) => {
                Counters::bump(&counters.errors);
                reason(e)
            }
            Ended::Panicked(panic) => {
                Counters::bump(&counters.panics);
                reason(&format_args!("panicked: {panic}"))
            }
        };
        counters.failed(&reason);
        Some(reason)
    }
}

/// Counts the reconciles in a row that nothing but the controller's own
/// writes asked for, and says so once that run reaches
/// [`SELF_TRIGGER_LIMIT`] (log and [`health`](crate::Runtime::health)).
#[derive(Debug, Default)]
pub(crate) struct Echoes {
    in_a_row: u64,
}

impl Echoes {
    /// A reconcile of `object` starts; `own_only`: what asked for it was
    /// only changes the controller made itself.
    pub(crate) fn start(
        &mut self,
        own_only: bool,
        counters: &Counters,
        controller: &str,
        object: &dyn std::fmt::Display,
    ) {
        if !own_only {
            if self.in_a_row > 0 {
                self.in_a_row = 0;
                counters.self_triggered.store(0, Ordering::Relaxed);
            }
            return;
        }
        self.in_a_row += 1;
        counters.self_triggered.store(self.in_a_row, Ordering::Relaxed);
        if self.in_a_row == SELF_TRIGGER_LIMIT {
            tracing::warn!(
                controller = %controller,
                "object.ref" = %object,
                "controller {controller}: {SELF_TRIGGER_LIMIT} reconciles in a row were triggered \
                 only by its own writes (last: {object}); it keeps re-triggering itself. Is an \
                 output also a fully watched input, or does a write depend on something other \
                 than the inputs (a counter, a clock)? Watch own outputs as destroy-ready only, \
                 and make writes a function of the inputs"
            );
        }
    }
}

/// Whether `e`, or an error it wraps, is an
/// [`Error::AccessDenied`](crate::Error::AccessDenied).
fn is_access_denied(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.downcast_ref::<crate::Error>().is_some_and(crate::Error::is_access_denied) {
            return true;
        }
        next = e.source();
    }
    false
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// Runs a reconcile with panics caught. (A plain function: an `async fn`
/// would keep the reconcile's future twice in its own, as its argument and
/// as what it awaits, and futures are copied whole when moved.)
pub(crate) fn run_caught<T>(
    reconcile: impl Future<Output = Result<T, ReconcileError>>,
) -> impl Future<Output = Ended<T>> {
    AssertUnwindSafe(reconcile)
        .catch_unwind()
        .map(|caught| Ended::of(caught.map_err(|p| panic_message(&*p))))
}

/// Records that a reconcile starts at `now` after `waited` in the queue,
/// with `running` reconciles of the controller under way (this one included).
pub(crate) fn started(
    counters: &Counters,
    in_flight: &mut Running,
    now: Instant,
    waited: Option<Duration>,
) {
    if let Some(waited) = waited {
        counters.work_queue.queue_duration.observe(waited);
    }
    in_flight.started(now, &counters.work_queue);
    counters.active_workers.store(in_flight.len() as u64, Ordering::Relaxed);
}

/// Records that the reconcile started at `started` ended at `now`, with
/// `running` reconciles still under way; returns how long it took.
pub(crate) fn finished(
    counters: &Counters,
    in_flight: &mut Running,
    started: Instant,
    now: Instant,
) -> Duration {
    let took = now.saturating_duration_since(started);
    counters.reconcile_time.observe(took);
    counters.work_queue.finished(took);
    in_flight.finished(started, &counters.work_queue);
    counters.active_workers.store(in_flight.len() as u64, Ordering::Relaxed);
    took
}
