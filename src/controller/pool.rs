//! The worker pool shared by every queue controller of a runtime: it caps how
//! many queue reconciles run at once across all of them.

use std::sync::Arc;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use futures::channel::oneshot;

/// The default pool size: sixteen reconciles in flight per core, at least
/// sixteen. Reconciles are async and mostly wait on the state or on IO; with
/// more of them in flight, the state actor serves several requests per turn
/// and each host handles several replies per wake-up. Beyond sixteen per
/// core more slots gain nothing measurable on the per-object chain
/// (`benches/runtime.rs`), and fewer leave the state idle between passes.
/// The pool only caps the total: each queue controller's own concurrency
/// still bounds it.
pub fn default_pool_size() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .saturating_mul(16)
        .max(16)
}

/// Permits for queue reconciles; waiters are served first come, first served,
/// so no queue controller starves another.
///
/// Taking and returning a permit is one atomic operation each while the pool
/// has permits (and no lock): a host takes one per reconcile. The waiters'
/// queue, behind a lock, is touched only when the pool ran out.
#[derive(Clone, Debug)]
pub(crate) struct WorkerPool(Arc<Pool>);

#[derive(Debug)]
struct Pool {
    /// Permits nobody holds.
    free: AtomicUsize,
    /// How many wait in `waiters` (read without the lock on every return).
    waiting: AtomicUsize,
    /// Who waits for a permit, oldest first.
    waiters: Mutex<VecDeque<oneshot::Sender<Permit>>>,
}

/// One reconcile's share of the pool, returned on drop.
#[derive(Debug)]
pub(crate) struct Permit(Option<Arc<Pool>>);

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            pool.release();
        }
    }
}

impl Pool {
    /// Takes a free permit, if there is one.
    fn take_free(&self) -> bool {
        self.free.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }

    fn waiters(&self) -> MutexGuard<'_, VecDeque<oneshot::Sender<Permit>>> {
        // Only pushes and pops happen under it: a panic there (none can)
        // would leave a consistent queue.
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn release(self: Arc<Self>) {
        self.free.fetch_add(1, Ordering::SeqCst);
        // Seen after the permit is back: a waiter that registers meanwhile
        // finds it free itself (see `dispatch`).
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let mut waiters = self.waiters();
            self.dispatch(&mut waiters);
        }
    }

    /// Hands free permits to the oldest waiters (with the queue locked).
    fn dispatch(self: &Arc<Self>, waiters: &mut VecDeque<oneshot::Sender<Permit>>) {
        while !waiters.is_empty() && self.take_free() {
            let waiter = waiters.pop_front().expect("not empty");
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            if let Err(mut unwanted) = waiter.send(Permit(Some(self.clone()))) {
                // It stopped waiting: the permit goes back, without a
                // release that would lock the queue again.
                unwanted.0 = None;
                self.free.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

impl WorkerPool {
    pub(crate) fn new(size: usize) -> Self {
        WorkerPool(Arc::new(Pool {
            free: AtomicUsize::new(size.max(1)),
            waiting: AtomicUsize::new(0),
            waiters: Mutex::new(VecDeque::new()),
        }))
    }

    /// A permit now, if one is free and nobody waits for one.
    pub(crate) fn try_acquire(&self) -> Option<Permit> {
        if self.0.waiting.load(Ordering::SeqCst) > 0 || !self.0.take_free() {
            return None;
        }
        Some(Permit(Some(self.0.clone())))
    }

    /// A permit, after those who asked before.
    pub(crate) async fn acquire(self) -> Option<Permit> {
        let (tx, rx) = oneshot::channel();
        {
            let mut waiters = self.0.waiters();
            waiters.push_back(tx);
            self.0.waiting.fetch_add(1, Ordering::SeqCst);
            // A permit returned while this one registered is handed out here.
            self.0.dispatch(&mut waiters);
        }
        rx.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn permits_are_capped_and_waiters_served_in_order() {
        let pool = WorkerPool::new(2);
        let a = pool.try_acquire().expect("a free permit");
        let b = pool.try_acquire().expect("another");
        assert!(pool.try_acquire().is_none(), "the pool is empty");
        let first = tokio::spawn(pool.clone().acquire());
        let second = tokio::spawn(pool.clone().acquire());
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        assert!(pool.try_acquire().is_none(), "waiters come first");
        drop(a);
        let first = first.await.unwrap().expect("the first waiter's permit");
        assert!(!second.is_finished());
        drop(b);
        let second = second.await.unwrap().expect("the second waiter's permit");
        drop((first, second));
        assert!(pool.try_acquire().is_some(), "every permit is back");
    }

    #[tokio::test]
    async fn a_waiter_that_gave_up_does_not_keep_a_permit() {
        let pool = WorkerPool::new(1);
        let held = pool.try_acquire().unwrap();
        let waiting = tokio::spawn(pool.clone().acquire());
        tokio::task::yield_now().await;
        waiting.abort();
        let _ = waiting.await;
        drop(held);
        assert!(pool.try_acquire().is_some(), "the permit came back to the pool");
    }
}
