//! The worker pool shared by every queue controller of a runtime: it caps how
//! many queue reconciles run at once across all of them.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The default pool size: four reconciles in flight per core (reconciles are
/// async and mostly wait on the state or on IO, so a few per core keep the
/// arbiter busy without unbounded fan-out), at least four.
pub fn default_pool_size() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get).saturating_mul(4).max(4)
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
