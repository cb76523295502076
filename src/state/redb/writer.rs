//! The writer thread of a [`RedbBackend`](super::RedbBackend) and its tree
//! thread.
//!
//! # Expected flow
//! The writer takes one batch at a time: it checks the batch's
//! preconditions against the mod revisions it keeps for every record (not
//! against the file), encodes the batch into one log record, appends and
//! syncs that record, and answers. The file's tree is brought up to date
//! afterwards, on the tree thread: one redb transaction per batch, committed
//! without a sync of its own, while the writer already logs the next batch.
//! So a batch's critical path is its encoding and its one synced append; the
//! redb work (the inserts and the commit, together comparable to the synced
//! append itself) runs beside it on another core.
//!
//! # Guarantees
//! - The tree thread applies the batches in their log order, each whole (one
//!   transaction). The writer waits for it to finish every batch it was
//!   given before it uses the file itself: a checkpoint (a batch too big for
//!   the log, and closing) and a reopen.
//! - A tree transaction that fails (a full disk, an IO error) leaves the
//!   batch in the log, which stays durable. The tree thread then applies
//!   nothing more; before its next batch (or at close) the writer reopens the
//!   file, whose recovery replays the log into it, and starts a new tree
//!   thread. A checkpoint never records a log position the file does not
//!   hold.
//! - A batch whose precondition does not hold, whose encoding fails or
//!   whose append fails changes nothing: neither the log (a failed append is
//!   taken back) nor the revisions the writer keeps.
//!
//! # Assumptions
//! The revisions are those of the file once the log is replayed (the thread
//! starts after the open replayed it); only this process writes the file
//! (redb's lock).
//!
//! # Caveats
//! - The revisions cost one key and one `u64` per record in memory (beside
//!   the state's cache, which holds every resource anyway).
//! - They are read from the file (keys and the first 8 bytes of each value,
//!   no JSON) when the thread starts, with the first write: that write waits
//!   for it (tens of milliseconds at 100,000 resources), once. Reading them
//!   there rather than in the state's load keeps them off the reopen, which
//!   every start pays, while a state that is only read never reads them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::file::{
    LOGGED, META, RESOURCES, Reopen, apply, checkpoint, classify, classify_io, encode, recover,
    redb_error, revision_of, storage, write_key,
};
use crate::state::backend::{CommitOutcome, Precondition, Write, WriteOp};
use crate::state::redb_log::{Log, Replayed};
use crate::{Error, StorageFailure};

/// The mod revision of each record, by its key in the file. Keys embed
/// client-chosen ids, so the map is seeded ([`crate::hashing`]); foldhash,
/// not SipHash: every write of a batch looks its key up on the writer's
/// critical path, and SipHash costs several times as much per lookup.
pub(super) type Revisions = crate::hashing::SeededMap<Box<str>, u64>;

/// The mod revisions of the records in `db` (a record too short to hold
/// one counts as revision 0: no precondition matches it).
pub(super) fn revisions_in(db: &Database, path: &Path) -> Result<Revisions, Error> {
    let read = db.begin_read().map_err(|e| redb_error(path, e))?;
    let table = read.open_table(RESOURCES).map_err(|e| redb_error(path, e))?;
    let capacity = table.len().unwrap_or(0) as usize;
    let mut revisions = Revisions::with_capacity_and_hasher(capacity, Default::default());
    for item in table.iter().map_err(|e| redb_error(path, e))? {
        let (key, value) = item.map_err(|e| redb_error(path, e))?;
        revisions.insert(key.value().into(), revision_of(value.value()).unwrap_or(0));
    }
    Ok(revisions)
}

/// The thread that brings the file's tree up to date, one batch at a time.
struct Tree {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<thread::JoinHandle<()>>,
    /// Set by the thread when a transaction failed; it applies nothing more.
    failed: Arc<AtomicBool>,
}

enum Job {
    /// Apply a logged batch, committed without durability.
    Apply(Replayed),
    /// Answer once every batch before this one is applied (or dropped).
    Drain(mpsc::SyncSender<()>),
}

impl Tree {
    fn start(db: Arc<Database>, path: PathBuf) -> Result<Tree, Error> {
        let (jobs, receiver) = mpsc::channel();
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let thread = thread::Builder::new()
            .name("cosi-redb-tree".into())
            .spawn(move || run_tree(&db, &path, &receiver, &flag))
            .map_err(|e| storage("cosi-redb-tree", StorageFailure::Io, e))?;
        Ok(Tree { jobs: Some(jobs), thread: Some(thread), failed })
    }

    fn apply(&self, batch: Replayed) {
        if let Some(jobs) = &self.jobs {
            // A thread that is gone dropped its database; `failed` says so.
            let _ = jobs.send(Job::Apply(batch));
        }
    }

    /// Waits until every batch given so far is applied; whether all were.
    fn drain(&self) -> bool {
        let (done, wait) = mpsc::sync_channel(1);
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send(Job::Drain(done)).is_ok());
        sent && wait.recv().is_ok() && !self.failed.load(Ordering::Acquire)
    }

    fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }
}

impl Drop for Tree {
    /// Lets the thread finish what it was given and joins it, so that its
    /// handle on the database is released.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run_tree(db: &Database, path: &Path, jobs: &mpsc::Receiver<Job>, failed: &AtomicBool) {
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Apply(batch) => {
                if failed.load(Ordering::Acquire) {
                    continue;
                }
                let applied = (|| {
                    let mut txn = db.begin_write()?;
                    txn.set_durability(redb::Durability::None)?;
                    apply(&txn, &batch)?;
                    txn.commit()?;
                    Ok::<_, redb::Error>(())
                })();
                if let Err(e) = applied {
                    // The batch stays in the log; the writer reopens the
                    // file, which replays it, before its next batch.
                    log::warn!(
                        "{}: the tree transaction of logged batch {} failed: {e}",
                        path.display(),
                        batch.seq
                    );
                    failed.store(true, Ordering::Release);
                }
            }
            Job::Drain(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Everything the writer thread owns.
pub(super) struct Writer {
    path: PathBuf,
    reopen: Reopen,
    db: Result<Arc<Database>, Error>,
    log: Log,
    /// `None` until read from the file, before the first batch (and after a
    /// failed read, before each next one).
    revisions: Option<Revisions>,
    tree: Option<Tree>,
}

impl Writer {
    pub(super) fn new(path: PathBuf, reopen: Reopen, db: Database, log: Log) -> Writer {
        let db = Ok(Arc::new(db));
        let mut writer = Writer { path, reopen, db, log, revisions: None, tree: None };
        writer.start_tree();
        writer
    }

    fn start_tree(&mut self) {
        if let Ok(db) = &self.db {
            match Tree::start(db.clone(), self.path.clone()) {
                Ok(tree) => self.tree = Some(tree),
                Err(e) => self.db = Err(e),
            }
        }
    }

    /// The tree thread stopped (joined), the file closed and opened again:
    /// its recovery replays the log into it, with immediate durability, and
    /// starts the log again.
    fn reopen(&mut self) {
        drop(self.tree.take());
        let closed = storage(self.path.display().to_string(), StorageFailure::Closed, "");
        // Closed before it is opened again (redb holds a lock).
        drop(std::mem::replace(&mut self.db, Err(closed)));
        let path = &self.path;
        let opened = (self.reopen)().map_err(|e| redb_error(path, e)).and_then(|db| {
            recover(&db, &mut self.log, path)?;
            Ok(db)
        });
        self.db = opened.map(Arc::new);
        match &self.db {
            Ok(_) => self.start_tree(),
            Err(e) => log::warn!("{}: cannot reopen after a failed write: {e}", path.display()),
        }
    }

    /// The file, usable by the writer itself: nothing pending on the tree
    /// thread, and reopened first when a tree transaction failed or an
    /// earlier reopen did.
    fn settled_db(&mut self) -> Result<Arc<Database>, Error> {
        let healthy = self.tree.as_ref().is_some_and(Tree::drain);
        if !healthy || self.db.is_err() {
            self.reopen();
        }
        self.db.clone()
    }

    /// Makes `batch` durable; the answer for its callers.
    pub(super) fn commit(&mut self, batch: &[Write]) -> Result<Vec<CommitOutcome>, Error> {
        let Some(first) = batch.first() else {
            return Ok(Vec::new());
        };
        if self.db.is_err() || self.tree.as_ref().is_none_or(Tree::failed) {
            self.reopen();
        }
        if let Err(e) = &self.db {
            return Err(e.clone());
        }
        if self.revisions.is_none() {
            let db = self.db.clone()?;
            self.revisions = Some(revisions_in(&db, &self.path)?);
        }
        let revisions = self.revisions.as_mut().expect("known");
        let undo = stage(batch, revisions, &mut self.log, &self.path)?;
        let outcomes = batch.iter().map(|w| CommitOutcome::Committed(w.revision)).collect();
        let result = if self.log.fits() { self.append() } else { self.checkpoint_with(first) };
        match result {
            Ok(()) => Ok(outcomes),
            Err(e) => {
                let revisions = self.revisions.as_mut().expect("known");
                unstage(batch, &undo, revisions);
                Err(e)
            }
        }
    }

    /// Appends the staged record; once synced, hands the batch to the tree.
    fn append(&mut self) -> Result<(), Error> {
        if let Err(e) = self.log.append() {
            // Not acknowledged, so not to be replayed: what reached the disk of
            // the record (the write may have, where the sync failed) is taken back.
            if let Err(retract) = self.log.retract() {
                let at = self.log.path().display();
                log::warn!("{at}: cannot take back a failed batch: {retract}");
            }
            let reason = format!("{}: {e}", self.log.path().display());
            return Err(storage(self.path.display().to_string(), classify_io(&e), reason));
        }
        let batch = self.log.batch(self.log.seq() - 1);
        if let Some(tree) = &self.tree {
            tree.apply(batch);
        }
        self.log.shrink();
        Ok(())
    }

    /// A batch too big for the log: committed with immediate durability by
    /// itself, which makes every logged batch durable in the file too (a
    /// checkpoint); the log starts again.
    fn checkpoint_with(&mut self, first: &Write) -> Result<(), Error> {
        let db = self.settled_db()?;
        let batch = self.log.batch(self.log.seq());
        let committed = (|| {
            let txn = db.begin_write()?;
            apply(&txn, &batch)?;
            txn.open_table(META)?.insert(LOGGED, self.log.seq())?;
            txn.commit()?;
            Ok::<_, redb::Error>(())
        })();
        self.log.shrink();
        match committed {
            Ok(()) => {
                self.log.skip();
                self.log.restart();
                Ok(())
            }
            Err(e) => {
                let failure = classify(&e);
                if matches!(failure, StorageFailure::Io | StorageFailure::Full) {
                    drop(db);
                    self.reopen();
                }
                Err(storage(first.pointer.to_string(), failure, e))
            }
        }
    }

    /// Closing: the tree thread finishes, then a checkpoint (or, after a
    /// failed tree transaction, a reopen, whose recovery is one).
    pub(super) fn close(mut self) {
        if let Ok(db) = self.settled_db() {
            checkpoint(&db, &mut self.log, &self.path);
        }
        drop(self.tree.take());
    }

    /// The log, for tests.
    #[cfg(test)]
    pub(super) fn log(&mut self) -> &mut Log {
        &mut self.log
    }

    /// Waits for the tree thread, for tests.
    #[cfg(test)]
    pub(super) fn drain(&mut self) {
        let _ = self.settled_db();
    }
}

/// Checks `batch`'s preconditions against `revisions` (each write against
/// what the writes before it in the batch left) and encodes it into the
/// log's record; `revisions` then holds the batch's. Returns what each
/// write replaced, for [`unstage`]. On an error nothing of the batch is
/// left in `revisions`.
fn stage(
    batch: &[Write],
    revisions: &mut Revisions,
    log: &mut Log,
    path: &Path,
) -> Result<Vec<Option<u64>>, Error> {
    log.begin();
    let mut undo = Vec::with_capacity(batch.len());
    // One buffer for the batch's keys.
    let mut key = String::new();
    for w in batch {
        write_key(&w.pointer, &mut key);
        let stored = revisions.get(key.as_str()).copied();
        let holds = match (w.precondition, stored) {
            (Precondition::Absent, None) => true,
            (Precondition::Revision(r), Some(s)) => r == s,
            _ => false,
        };
        let encoded = if !holds {
            Err(storage(
                w.pointer.to_string(),
                StorageFailure::Conflict,
                format!(
                    "{}: expected {:?}, the file holds {stored:?}",
                    path.display(),
                    w.precondition
                ),
            ))
        } else if let WriteOp::Put(res) = &w.op {
            log.put(&key, |bytes| encode(res, w.revision, bytes)).map(drop)
        } else {
            log.delete(&key);
            Ok(())
        };
        if let Err(e) = encoded {
            unstage(batch, &undo, revisions);
            return Err(e);
        }
        match &w.op {
            WriteOp::Put(_) => match revisions.get_mut(key.as_str()) {
                Some(r) => *r = w.revision,
                None => drop(revisions.insert(key.as_str().into(), w.revision)),
            },
            WriteOp::Delete => drop(revisions.remove(key.as_str())),
        }
        undo.push(stored);
    }
    // The store revision at open is the larger of `revision` and the
    // records' own (`Store::load`), so it is written only when the batch's
    // last revision may not survive in a record: a batch that deletes (a
    // destroyed record takes its revision with it), or one whose revisions
    // do not rise in batch order (a later write to a key could replace the
    // newest). Otherwise the put of the last revision is the final write to
    // its key, and a later batch replaces it only with a newer revision.
    let deletes = batch.iter().any(|w| matches!(w.op, WriteOp::Delete));
    let rising = batch.windows(2).all(|p| p[0].revision < p[1].revision);
    if deletes || !rising {
        log.set_revision(batch.iter().map(|w| w.revision).max().unwrap_or(0));
    }
    Ok(undo)
}

/// Takes the first `undo.len()` writes of `batch` back out of `revisions`,
/// newest first.
fn unstage(batch: &[Write], undo: &[Option<u64>], revisions: &mut Revisions) {
    let mut key = String::new();
    for (w, before) in batch[..undo.len()].iter().zip(undo).rev() {
        write_key(&w.pointer, &mut key);
        match before {
            Some(r) => drop(revisions.insert(key.as_str().into(), *r)),
            None => drop(revisions.remove(key.as_str())),
        }
    }
}
