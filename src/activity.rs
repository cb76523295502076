//! Activity accounting behind `settled()`.
//!
//! Every piece of runtime work in progress holds one unit of activity: a state
//! request awaiting its answer, a change message on its way to a controller, a
//! coalesced backlog, a pending or running reconcile, a retry waiting out its
//! backoff. Each hand-off takes the next unit before it releases the current
//! one, so the count reaches zero only when the whole system is quiescent, never
//! in the middle of a causal chain. `settled()` waits for zero.
//!
//! Delayed work that was *asked for* (`requeue_after`, a queue item with a
//! future due time) holds no unit: the system is settled until it comes due.
//! It holds a *timer* unit instead, which `idle()` waits for too.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

#[derive(Default)]
struct Inner {
    busy: AtomicUsize,
    timers: AtomicUsize,
    idle: Notify,
}

/// A shared counter of in-progress work with a "became idle" notification.
#[derive(Clone, Default)]
pub(crate) struct Activity(Arc<Inner>);

impl std::fmt::Debug for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Activity({})", self.busy())
    }
}

impl Activity {
    pub(crate) fn new() -> Self {
        Activity::default()
    }

    /// Takes one unit.
    pub(crate) fn enter(&self) {
        self.enter_many(1);
    }

    /// Releases one unit (wakes `settled()` waiters when it was the last).
    pub(crate) fn exit(&self) {
        self.exit_many(1);
    }

    /// Takes `n` units.
    pub(crate) fn enter_many(&self, n: usize) {
        self.0.busy.fetch_add(n, Ordering::SeqCst);
    }

    /// Releases `n` units (wakes `settled()` waiters when they were the last).
    pub(crate) fn exit_many(&self, n: usize) {
        let before = self.0.busy.fetch_sub(n, Ordering::SeqCst);
        debug_assert!(before >= n, "activity released more often than taken");
        if before == n && n > 0 {
            self.0.idle.notify_waiters();
        }
    }

    /// Takes one unit, released when the borrowed guard drops (no handle
    /// cloned: for work that cannot outlive the activity's owner).
    pub(crate) fn hold(&self) -> ActivityHold<'_> {
        self.enter();
        ActivityHold(self)
    }

    /// Takes one unit, released when the guard drops.
    pub(crate) fn guard(&self) -> ActivityGuard {
        self.enter();
        ActivityGuard(self.clone())
    }

    /// Units currently held.
    pub(crate) fn busy(&self) -> usize {
        self.0.busy.load(Ordering::SeqCst)
    }

    /// One armed timer of delayed work, released when the guard drops (the
    /// timer fired or was cancelled).
    pub(crate) fn timer(&self) -> TimerGuard {
        self.0.timers.fetch_add(1, Ordering::SeqCst);
        TimerGuard(self.clone())
    }

    /// Timers of delayed work currently armed.
    pub(crate) fn timers(&self) -> usize {
        self.0.timers.load(Ordering::SeqCst)
    }

    /// Resolves once no unit is held **and** no timer of delayed work is armed.
    pub(crate) async fn idle(&self) {
        loop {
            let idle = self.0.idle.notified();
            if self.busy() == 0 && self.timers() == 0 {
                tokio::task::yield_now().await;
                if self.busy() == 0 && self.timers() == 0 {
                    return;
                }
                continue;
            }
            idle.await;
        }
    }

    /// Resolves once no unit is held.
    ///
    /// Tasks that are ready to run but have not run yet (typically woken by a
    /// timer that just fired, e.g. after `tokio::time::advance`) hold no unit
    /// until they run, so an idle count is confirmed after yielding to them.
    pub(crate) async fn settled(&self) {
        loop {
            let idle = self.0.idle.notified();
            if self.busy() == 0 {
                tokio::task::yield_now().await;
                if self.busy() == 0 {
                    return;
                }
                continue;
            }
            idle.await;
        }
    }
}

/// One armed timer of delayed work, released on drop.
#[derive(Debug)]
pub(crate) struct TimerGuard(Activity);

impl Drop for TimerGuard {
    fn drop(&mut self) {
        let inner = &(self.0).0;
        if inner.timers.fetch_sub(1, Ordering::SeqCst) == 1 {
            inner.idle.notify_waiters();
        }
    }
}

/// One unit of activity, released on drop.
#[derive(Debug)]
pub(crate) struct ActivityGuard(Activity);

/// One unit of activity, released on drop; borrows its [`Activity`].
#[derive(Debug)]
pub(crate) struct ActivityHold<'a>(&'a Activity);

impl Drop for ActivityHold<'_> {
    fn drop(&mut self) {
        self.0.exit();
    }
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        self.0.exit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn settled_waits_for_the_last_guard() {
        let a = Activity::new();
        a.settled().await;
        let g1 = a.guard();
        let g2 = a.guard();
        let waiter = {
            let a = a.clone();
            tokio::spawn(async move { a.settled().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(g1);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(g2);
        waiter.await.unwrap();
        assert_eq!(a.busy(), 0);
    }
}
