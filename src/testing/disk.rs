//! A disk that fills up: [`LimitedDisk`] for tests of a durable state whose
//! disk runs out of space.

use std::fs::OpenOptions;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

use crate::Error;
use crate::state::RedbBackend;

/// A disk with room for a file of at most `limit` bytes: the state file
/// cannot grow past it. Growing past it (redb extends its file to write)
/// fails as a full disk does, with `ENOSPC`; writes inside the file's
/// length go on, as on a real disk. [`set_limit`](Self::set_limit) frees
/// space (or takes it), at any time, from any thread.
///
/// The file is a real file: what was acknowledged before the disk filled
/// can be checked by reopening it with
/// [`State::open_durable`](crate::State::open_durable).
///
/// ```no_run
/// use cosi_runtime::state::StateBuilder;
/// use cosi_runtime::testing::LimitedDisk;
/// # #[actix::main]
/// # async fn main() -> Result<(), cosi_runtime::Error> {
/// let disk = LimitedDisk::new(u64::MAX);
/// let state = StateBuilder::new().backend(["config"], disk.backend("/tmp/state.redb")?).open().await?;
/// disk.set_limit(disk.used()); // full: the next write that needs room fails with StorageFailure::Full
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct LimitedDisk {
    limit: Arc<AtomicU64>,
    used: Arc<AtomicU64>,
}

impl LimitedDisk {
    /// A disk with room for `limit` bytes of state file.
    pub fn new(limit: u64) -> Self {
        LimitedDisk { limit: Arc::new(AtomicU64::new(limit)), used: Arc::new(AtomicU64::new(0)) }
    }

    /// Changes the room the file may take (more: space freed).
    pub fn set_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::SeqCst);
    }

    /// The size of the state file now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// A redb state backend on the file at `path` (created if missing), on
    /// this disk.
    ///
    /// # Errors
    /// [`Error::Storage`] as [`RedbBackend::open`], and
    /// [`StorageFailure::Full`](crate::StorageFailure::Full) when the new
    /// file does not fit.
    pub fn backend(&self, path: impl AsRef<Path>) -> Result<RedbBackend, Error> {
        let path = path.as_ref().to_path_buf();
        let disk = self.clone();
        let file = path.clone();
        RedbBackend::open_with(
            path,
            Arc::new(move || {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&file)?;
                disk.used.store(f.metadata()?.len(), Ordering::SeqCst);
                let inner = FileBackend::new(f)?;
                redb::Database::builder().create_with_backend(Limited { inner, disk: disk.clone() })
            }),
        )
    }
}

/// redb's file backend, refusing to grow the file past the disk's limit.
#[derive(Debug)]
struct Limited {
    inner: FileBackend,
    disk: LimitedDisk,
}

impl Limited {
    fn room_for(&self, len: u64) -> std::io::Result<()> {
        if len > self.disk.limit.load(Ordering::SeqCst) {
            // What a full disk answers: ENOSPC, "No space left on device".
            return Err(std::io::Error::from_raw_os_error(28));
        }
        Ok(())
    }
}

impl StorageBackend for Limited {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        if len > self.inner.len()? {
            self.room_for(len)?;
        }
        self.inner.set_len(len)?;
        self.disk.used.store(len, Ordering::SeqCst);
        Ok(())
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        let end = offset + data.len() as u64;
        let len = self.inner.len()?;
        if end > len {
            self.room_for(end)?;
        }
        self.inner.write(offset, data)?;
        self.disk.used.fetch_max(end, Ordering::SeqCst);
        Ok(())
    }

    fn close(&self) -> Result<(), std::io::Error> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}
