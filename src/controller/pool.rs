//! The worker pool shared by every queue controller of a runtime: it caps how
//! many queue reconciles run at once across all of them.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The default pool size: sixteen reconciles in flight per core, at least
/// sixteen. Reconciles are async and mostly wait on the state or on IO; with
/// more of them in flight, the state actor serves several requests per turn
/// and each host handles several replies per wake-up. Measured on the
/// per-object chain (`benches/runtime.rs`, two queue controllers of
/// concurrency 16, 2 cores): 51 ms with 8 (four per core, the default
/// before), 46 ms with 32, 47 ms with 128. The pool only caps the total: each
/// queue controller's own concurrency still bounds it.
pub fn default_pool_size() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .saturating_mul(16)
        .max(16)
}

/// Permits for queue reconciles; waiters are served first come, first served,
/// so no queue controller starves another.
#[derive(Clone, Debug)]
pub(crate) struct WorkerPool(Arc<Semaphore>);

impl WorkerPool {
    pub(crate) fn new(size: usize) -> Self {
        WorkerPool(Arc::new(Semaphore::new(size.max(1))))
    }

    pub(crate) fn try_acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_owned().ok()
    }

    pub(crate) async fn acquire(self) -> Option<OwnedSemaphorePermit> {
        self.0.acquire_owned().await.ok()
    }
}
