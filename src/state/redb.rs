//! [`RedbBackend`]: a durable state in one file, on [redb](https://www.redb.org).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;

use futures::channel::oneshot;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::backend::{Backend, CloseFuture, CommitFuture, CommitOutcome, Snapshot, Write};
use super::redb_log::{self, Log};
use file::{
    META, RESOURCES, Reopen, classify_io, decode, log_failure, recover, redb_error, storage,
};
use writer::Writer;

mod file;
mod writer;
use crate::{Error, StorageFailure};

/// The format of the state file this build writes and reads. A file of a
/// newer format is refused at open and left untouched.
pub const FORMAT_VERSION: u64 = 1;

/// A durable backend: one redb file and its write-ahead log, one batch per
/// commit, on a dedicated writer thread so the state actor never blocks.
///
/// # Expected flow
/// Each batch is one record appended to the log (`NAME.wal` beside the
/// file) in one write synced as it completes (`O_DSYNC`) before it is
/// acknowledged, and one redb transaction committed without a sync of its
/// own after the answer, on a second thread while the writer logs the next
/// batch (the file's tree stays current; reads come from the state's cache
/// anyway). The writer checks preconditions against the mod revisions it
/// keeps for every record (read from the file, keys and revisions only, when
/// its thread starts with the first write), so no redb work is on a write's
/// path: the batch is acknowledged once its record is synced, whatever the
/// file's tree still has to do. A batch whose record does not fit in the
/// log (8 MiB) is committed to the file with immediate durability instead:
/// a checkpoint, after which the log starts again from its beginning.
/// Closing checkpoints too. Opening writes back into the file
/// the logged batches no checkpoint covers.
///
/// Why: a redb commit with immediate durability syncs twice and writes every
/// page the batch touched; the log costs one sync of one contiguous write,
/// several times cheaper for a typical batch. Immediate durability on
/// every batch would give the guarantee at the higher price; this backend
/// keeps the same guarantee (a batch is on disk before it is acknowledged,
/// and whole or absent after a crash) through the log, and uses immediate
/// durability only for its checkpoints (docs/ARCHITECTURE.md, 'Backends and
/// durability').
///
/// # Guarantees
/// - A write is acknowledged only after its batch is on disk (its log record
///   synced); a crash (even `SIGKILL` or a power cut on a disk that honours
///   fsync) loses nothing acknowledged, and never leaves a batch half
///   applied: a record is checksummed and replayed whole or not at all (a
///   torn last record was never acknowledged), and redb's commit is atomic.
/// - Replay is idempotent: a record holds the batch's stored bytes, and the
///   file records the last batch each checkpoint covers, so a crash during
///   replay or a checkpoint only replays again.
/// - Resources come back after a reopen exactly as stored (version,
///   [uid](crate::resource::Metadata::uid), owner, phase, finalizers, labels,
///   annotations, timestamps, mod revision). The uid is part of the stored
///   metadata (`"uid"` in the JSON); a resource in a file written before uids
///   has none there and gets one derived from its address and creation time
///   at every open (the same each time; stored with its next write), so such
///   a file needs no migration and stays format 1. A
///   spec comes back in its serialized form and reads back as its typed spec
///   on the first typed read ([`AnyResource::typed`](crate::resource::AnyResource::typed)), without registering
///   anything first.
/// - A new file is created whole or not at all: made under a temporary name
///   (`NAME.creating`) and renamed into place, so a crash at any moment of
///   its creation leaves either no file or one that opens.
/// - A full disk fails the batch with [`StorageFailure::Full`]: nothing of it
///   is written, what was acknowledged before is kept, reads go on (from the
///   cache), and writes succeed again by themselves once there is room (the
///   writer reopens the file after a failed write: redb refuses every write
///   after an IO error until then).
/// - Open fails with [`Error::Storage`] and leaves the file as it was when the
///   file is locked by another process ([`StorageFailure::Locked`]), is not a
///   state file or is damaged ([`StorageFailure::Corrupt`]: also a file that
///   starts with redb's magic and then holds something else, a state file
///   cut short, or a log record that passes its checksum but does not parse:
///   the error names `NAME.wal`, and nothing of the log is applied), was
///   written by a
///   newer format ([`StorageFailure::UnsupportedFormat`]), or cannot be
///   created or written ([`StorageFailure::ReadOnly`]).
///
/// # Caveats
/// - Specs are stored as JSON through their `Serialize` impl: a spec type whose
///   serialized form changes incompatibly reads back as a
///   [`TypeMismatch`](Error::TypeMismatch) naming the resource.
/// - Until the state is closed, the newest batches may be only in the log:
///   copy `NAME.wal` with `NAME` (or close first). A build from before the
///   log (same [`FORMAT_VERSION`]) reads a closed file whole, but not the
///   log of one that crashed.
/// - The log is an ordinary file on the same disk; [`testing::LimitedDisk`](crate::testing::LimitedDisk)
///   limits the state file only.
/// - A batch whose append to the log fails (its bytes written, their sync
///   failed) is answered with the error and taken back (its record's header
///   zeroed); if taking it back fails too, the batch may reappear at the next
///   open: the one case where a write answered with an error is kept.
pub struct RedbBackend {
    path: PathBuf,
    /// Opens the database again: after a failed write (redb refuses every
    /// write after an IO error until reopened), in the writer thread.
    reopen: Reopen,
    db: Option<Database>,
    /// The write-ahead log, until the writer thread takes it with `db`.
    log: Option<Log>,
    writer: Option<mpsc::Sender<Command>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl std::fmt::Debug for RedbBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbBackend").field("path", &self.path).finish_non_exhaustive()
    }
}

enum Command {
    Commit(Vec<Write>, oneshot::Sender<Result<Vec<CommitOutcome>, Error>>),
    Close(oneshot::Sender<()>),
}

impl RedbBackend {
    /// Opens (or creates) the state file at `path`, creating missing parent
    /// directories. Blocking: call it off the arbiter (the
    /// [`StateBuilder`](super::StateBuilder) does).
    ///
    /// # Errors
    /// [`Error::Storage`], see the [type docs](RedbBackend); the file is left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<RedbBackend, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                storage(dir.display().to_string(), classify_io(&e), format!("cannot create: {e}"))
            })?;
        }
        check_magic(&path)?;
        check_existing(&path)?;
        if std::fs::metadata(&path).map_or(true, |m| m.len() == 0) {
            create_new(&path)?;
        }
        let file = path.clone();
        RedbBackend::open_with(path, Arc::new(move || Database::create(&file)))
    }

    /// Opens the database `reopen` makes (named `path` in errors), and
    /// writes the format version into it if it is new.
    pub(crate) fn open_with(path: PathBuf, reopen: Reopen) -> Result<RedbBackend, Error> {
        let db = reopen().map_err(|e| redb_error(&path, e))?;
        init_format(&db, &path)?;
        let mut log = Log::open(&path).map_err(|e| log_failure(&redb_log::log_path(&path), &e))?;
        recover(&db, &mut log, &path)?;
        Ok(RedbBackend { path, reopen, db: Some(db), log: Some(log), writer: None, thread: None })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn start_writer(&mut self) -> Result<mpsc::Sender<Command>, Error> {
        if let Some(w) = &self.writer {
            return Ok(w.clone());
        }
        let (Some(db), Some(log)) = (self.db.take(), self.log.take()) else {
            return Err(self.closed());
        };
        let (tx, rx) = mpsc::channel();
        let path = self.path.clone();
        let reopen = self.reopen.clone();
        let thread = thread::Builder::new()
            .name("cosi-redb-writer".into())
            .spawn(move || write(Writer::new(path, reopen, db, log), &rx))
            .map_err(|e| storage(self.path.display().to_string(), StorageFailure::Io, e))?;
        self.thread = Some(thread);
        self.writer = Some(tx.clone());
        Ok(tx)
    }

    fn closed(&self) -> Error {
        storage(self.path.display().to_string(), StorageFailure::Closed, "the backend is closed")
    }
}

/// Where a new state file is made before it is renamed into place.
fn creating_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".creating");
    path.with_file_name(name)
}

/// Makes a new state file whole or not at all: redb writes its header and
/// regions over several steps, and a crash between them leaves a file that
/// every later open refuses as corrupt. So the file is made, formatted and
/// synced under a temporary name ([`creating_path`]) and renamed into place
/// (an atomic replace of nothing, or of an empty file); the directory is
/// synced so that the rename survives a power cut. A temporary file found
/// here is what a crash left of an earlier creation: never renamed, so never
/// a state, and removed.
fn create_new(path: &Path) -> Result<(), Error> {
    let temp = creating_path(path);
    let io = |at: &Path, e: std::io::Error| storage(at.display().to_string(), classify_io(&e), e);
    match std::fs::remove_file(&temp) {
        Ok(()) => log::info!("removed {} (a creation cut short)", temp.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&temp, e)),
    }
    {
        // Committed with redb's default durability (synced), then closed.
        let db = Database::create(&temp).map_err(|e| redb_error(&temp, e))?;
        init_format(&db, &temp)?;
    }
    std::fs::rename(&temp, path).map_err(|e| io(path, e))?;
    redb_log::sync_parent(path);
    Ok(())
}

/// Refuses a non-empty file that is not a redb file before redb touches it.
fn check_magic(path: &Path) -> Result<(), Error> {
    use std::io::Read;
    const MAGIC: &[u8] = b"redb";
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(storage(path.display().to_string(), classify_io(&e), e)),
    };
    let mut head = [0u8; 4];
    let read = file
        .read(&mut head)
        .map_err(|e| storage(path.display().to_string(), classify_io(&e), e))?;
    if read == 0 || (read == 4 && head == MAGIC) {
        return Ok(());
    }
    Err(storage(
        path.display().to_string(),
        StorageFailure::Corrupt,
        "not a state file (no redb header)",
    ))
}

/// Checks an existing file read-only first: opening it for writing marks its
/// header, and a file we refuse must stay as it was. A file that needs repair
/// after a crash cannot be opened read-only; the read-write open repairs it.
fn check_existing(path: &Path) -> Result<(), Error> {
    if std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        return Ok(());
    }
    match redb::ReadOnlyDatabase::open(path) {
        Ok(db) => read_format(&db, path).map(|_| ()),
        Err(redb::DatabaseError::RepairAborted) => Ok(()),
        Err(e) => Err(redb_error(path, e)),
    }
}

/// The format version the file holds (`None`: a new, empty file).
fn read_format(db: &impl ReadableDatabase, path: &Path) -> Result<Option<u64>, Error> {
    let read = db.begin_read().map_err(|e| redb_error(path, e))?;
    let format = match read.open_table(META) {
        Ok(meta) => meta.get("format").map_err(|e| redb_error(path, e))?.map(|v| v.value()),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(redb_error(path, e)),
    };
    let has_tables = read.list_tables().map_err(|e| redb_error(path, e))?.next().is_some();
    match format {
        Some(FORMAT_VERSION) => Ok(format),
        Some(other) => Err(storage(
            path.display().to_string(),
            StorageFailure::UnsupportedFormat,
            format!("format version {other}; this build reads version {FORMAT_VERSION}"),
        )),
        None if has_tables => Err(storage(
            path.display().to_string(),
            StorageFailure::UnsupportedFormat,
            "a redb file, but not a cosi-runtime state (no format version)",
        )),
        None => Ok(None),
    }
}

/// Writes the format version into a new file; checks it in an existing one.
fn init_format(db: &Database, path: &Path) -> Result<(), Error> {
    match read_format(db, path)? {
        Some(_) => Ok(()),
        None => {
            let txn = db.begin_write().map_err(|e| redb_error(path, e))?;
            {
                let mut meta = txn.open_table(META).map_err(|e| redb_error(path, e))?;
                meta.insert("format", FORMAT_VERSION).map_err(|e| redb_error(path, e))?;
                meta.insert("revision", 0).map_err(|e| redb_error(path, e))?;
                txn.open_table(RESOURCES).map_err(|e| redb_error(path, e))?;
            }
            txn.commit().map_err(|e| redb_error(path, e))
        }
    }
}

/// The writer thread: one batch at a time until closed (or dropped), then
/// a checkpoint (see [`Writer`]).
fn write(mut writer: Writer, commands: &mpsc::Receiver<Command>) {
    let mut closed = None;
    while let Ok(command) = commands.recv() {
        match command {
            Command::Commit(batch, reply) => {
                let _ = reply.send(writer.commit(&batch));
            }
            Command::Close(reply) => {
                closed = Some(reply);
                break;
            }
        }
    }
    writer.close();
    // Answered once the file is released.
    if let Some(reply) = closed {
        let _ = reply.send(());
    }
}

impl Backend for RedbBackend {
    fn describe(&self) -> String {
        format!("redb at {}", self.path.display())
    }

    fn load(&mut self) -> Result<Snapshot, Error> {
        let db = self.db.as_ref().ok_or_else(|| self.closed())?;
        let path = &self.path;
        let read = db.begin_read().map_err(|e| redb_error(path, e))?;
        let revision = read
            .open_table(META)
            .map_err(|e| redb_error(path, e))?
            .get("revision")
            .map_err(|e| redb_error(path, e))?
            .map_or(0, |v| v.value());
        let table = read.open_table(RESOURCES).map_err(|e| redb_error(path, e))?;
        let mut resources = Vec::with_capacity(table.len().unwrap_or(0) as usize);
        for item in table.iter().map_err(|e| redb_error(path, e))? {
            let (key, value) = item.map_err(|e| redb_error(path, e))?;
            resources.push(decode(key.value(), value.value(), path)?);
        }
        Ok(Snapshot { revision, resources })
    }

    fn commit(&mut self, batch: Vec<Write>) -> CommitFuture {
        let (reply, result) = oneshot::channel();
        let sent = self
            .start_writer()
            .and_then(|w| w.send(Command::Commit(batch, reply)).map_err(|_| self.closed()));
        let closed = self.closed();
        Box::pin(async move {
            sent?;
            result.await.unwrap_or(Err(closed))
        })
    }

    fn close(&mut self) -> CloseFuture {
        self.db = None;
        let thread = self.thread.take();
        let Some(writer) = self.writer.take() else {
            return Box::pin(std::future::ready(()));
        };
        let (tx, rx) = oneshot::channel();
        let _ = writer.send(Command::Close(tx));
        Box::pin(async move {
            let _ = rx.await;
            // The thread has dropped the database; joining is immediate.
            if let Some(t) = thread {
                let _ = actix_rt::task::spawn_blocking(move || t.join()).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::file::{classify, encode, key_of};
    use super::*;
    use crate::resource::Pointer;
    use crate::state::backend::{Precondition, WriteOp};

    #[test]
    fn io_errors_map_to_failures() {
        use std::io::{Error as IoError, ErrorKind};
        assert_eq!(
            classify_io(&IoError::from(ErrorKind::PermissionDenied)),
            StorageFailure::ReadOnly
        );
        assert_eq!(
            classify_io(&IoError::from(ErrorKind::ReadOnlyFilesystem)),
            StorageFailure::ReadOnly
        );
        assert_eq!(classify_io(&IoError::from(ErrorKind::StorageFull)), StorageFailure::Full);
        assert_eq!(classify_io(&IoError::from_raw_os_error(28)), StorageFailure::Full, "ENOSPC");
        assert_eq!(classify(&redb::Error::DatabaseAlreadyOpen), StorageFailure::Locked);
        assert_eq!(classify(&redb::Error::UpgradeRequired(1)), StorageFailure::UnsupportedFormat);
        // A magic number that does not match, a header cut short: the file, not the disk.
        for kind in [ErrorKind::InvalidData, ErrorKind::UnexpectedEof] {
            let e = redb::Error::Io(IoError::new(kind, "from redb's header parsing"));
            assert_eq!(classify(&e), StorageFailure::Corrupt, "{kind:?}");
        }
        let e = redb::Error::Io(IoError::from(ErrorKind::StorageFull));
        assert_eq!(classify(&e), StorageFailure::Full);
        let e = redb::Error::Io(IoError::from(ErrorKind::PermissionDenied));
        assert_eq!(classify(&e), StorageFailure::ReadOnly);
    }

    #[test]
    fn a_new_file_is_made_under_a_temporary_name_and_a_leftover_one_removed() {
        let dir = crate::testing::conformance::ScratchDir::new();
        let path = dir.path().join("state.redb");
        let temp = creating_path(&path);
        assert_eq!(temp.file_name().unwrap(), "state.redb.creating");
        // What a creation killed midway leaves: not a redb file at all.
        std::fs::write(&temp, vec![0u8; 73_728]).unwrap();
        let backend = RedbBackend::open(&path).unwrap();
        assert!(!temp.exists(), "the leftover is gone");
        drop(backend);
        let db = redb::ReadOnlyDatabase::open(&path).unwrap();
        assert_eq!(read_format(&db, &path).unwrap(), Some(FORMAT_VERSION));
        drop(db);
        // An empty file (touched by a user) is replaced by a whole one.
        let empty = dir.path().join("empty.redb");
        std::fs::write(&empty, b"").unwrap();
        drop(RedbBackend::open(&empty).unwrap());
        let db = redb::ReadOnlyDatabase::open(&empty).unwrap();
        assert_eq!(read_format(&db, &empty).unwrap(), Some(FORMAT_VERSION));
    }

    /// A write of a fresh resource `ns/<id>` at `revision`.
    fn put(id: &str, precondition: Precondition, revision: u64) -> Write {
        use crate::resource::test_specs::Num;
        let res = crate::resource::Resource::new("ns", id, Num(1)).into_any();
        Write {
            pointer: res.pointer().clone(),
            precondition,
            op: WriteOp::Put(res),
            revision,
            owner: None,
        }
    }

    /// A delete of `ns/<id>` at `revision`.
    fn delete(id: &str, precondition: Precondition, revision: u64) -> Write {
        Write { op: WriteOp::Delete, revision, ..put(id, precondition, 0) }
    }

    #[test]
    fn a_precondition_that_does_not_hold_fails_the_whole_batch() {
        let delete = |id: &str, precondition| delete(id, precondition, 9);
        let conflict = |r: Result<Vec<CommitOutcome>, Error>| {
            matches!(r, Err(Error::Storage { failure: StorageFailure::Conflict, .. }))
        };
        let dir = crate::testing::conformance::ScratchDir::new();
        let mut backend = RedbBackend::open(dir.path().join("state.redb")).unwrap();
        let mut commit = |batch| futures::executor::block_on(backend.commit(batch));
        assert!(commit(vec![put("a", Precondition::Absent, 1)]).is_ok());
        // `a` exists: the batch fails, and `b`, before it in the batch, is not written.
        let batch = vec![put("b", Precondition::Absent, 2), put("a", Precondition::Absent, 3)];
        assert!(conflict(commit(batch)));
        assert!(commit(vec![put("b", Precondition::Absent, 2)]).is_ok(), "b was not written");
        assert!(conflict(commit(vec![put("a", Precondition::Revision(7), 3)])));
        assert!(conflict(commit(vec![delete("c", Precondition::Revision(1))])));
        assert!(conflict(commit(vec![delete("a", Precondition::Revision(7))])));
        assert!(commit(vec![delete("a", Precondition::Revision(1))]).is_ok());
    }

    /// The writer checks preconditions against the revisions it keeps, not
    /// against the file (whose tree the tree thread updates after the
    /// answer): a write sees the batch's earlier writes to its key, and a
    /// batch that fails leaves no trace for the next one.
    #[test]
    fn preconditions_see_the_batch_before_them_and_a_failed_batch_leaves_nothing() {
        use Precondition::{Absent, Revision};
        let dir = crate::testing::conformance::ScratchDir::new();
        let path = dir.path().join("state.redb");
        let mut writer = open_writer(&path);
        let conflict = |r: Result<Vec<CommitOutcome>, Error>| {
            matches!(r, Err(Error::Storage { failure: StorageFailure::Conflict, .. }))
        };
        // Created and updated in one batch (one mailbox drain).
        assert!(writer.commit(&[put("a", Absent, 1), put("a", Revision(1), 2)]).is_ok());
        assert!(conflict(writer.commit(&[put("a", Revision(1), 3)])), "a is at 2 now");
        // The first two writes of this batch hold, the third does not: none stays.
        let batch = [put("b", Absent, 3), delete("a", Revision(2), 4), put("c", Revision(9), 5)];
        assert!(conflict(writer.commit(&batch)));
        assert!(writer.commit(&[put("b", Absent, 3), put("a", Revision(2), 4)]).is_ok());
        writer.close();
        assert_eq!(loaded(&path).0, ["a", "b"]);
        let db = Database::create(&path).unwrap();
        let revisions = writer::revisions_in(&db, &path).unwrap();
        assert_eq!(revisions.get("ns\0Nums.test.cosi.dev\0a").copied(), Some(4), "{revisions:?}");
    }

    /// What the state's load takes as its store revision (the larger of the
    /// meta table's and the records') equals the newest committed revision
    /// after each batch, whichever writes it held.
    #[test]
    fn the_store_revision_at_load_is_the_newest_committed_one() {
        use Precondition::{Absent, Revision};
        let batches = vec![
            vec![put("a", Absent, 1), put("b", Absent, 2)],
            vec![put("a", Revision(1), 3)],
            // The newest record goes.
            vec![delete("a", Revision(3), 4)],
            // Puts only, older than the meta table's revision's record was.
            vec![put("c", Absent, 5)],
            // A put and a delete of it in one batch.
            vec![put("d", Absent, 6), delete("d", Revision(6), 7)],
            // Revisions that do not rise in batch order (the state never
            // sends these; the backend does not rely on it).
            vec![put("e", Absent, 9), put("e", Revision(9), 8)],
        ];
        let dir = crate::testing::conformance::ScratchDir::new();
        let path = dir.path().join("state.redb");
        // Closing joins the writer thread off the arbiter: a runtime.
        actix::System::new().block_on(async {
            for batch in batches {
                let newest = batch.iter().map(|w| w.revision).max().unwrap();
                let mut backend = RedbBackend::open(&path).unwrap();
                backend.commit(batch).await.unwrap();
                backend.close().await;
                let snapshot = RedbBackend::open(&path).unwrap().load().unwrap();
                let at_load = snapshot
                    .resources
                    .iter()
                    .map(|r| r.metadata().revision())
                    .fold(snapshot.revision, u64::max);
                assert_eq!(at_load, newest);
            }
        });
    }

    /// Opens the state at `path` as the backend does, and its writer (which
    /// reads the revisions from the file).
    fn open_writer(path: &Path) -> Writer {
        drop(RedbBackend::open(path).unwrap());
        let db = Database::create(path).unwrap();
        let mut log = Log::open(path).unwrap();
        recover(&db, &mut log, path).unwrap();
        let file = path.to_path_buf();
        Writer::new(path.to_path_buf(), Arc::new(move || Database::create(&file)), db, log)
    }

    /// `batch` through the writer, its tree transaction committed.
    fn commit(writer: &mut Writer, batch: &[Write]) -> Result<(), Error> {
        writer.commit(batch)?;
        writer.drain();
        Ok(())
    }

    /// The ids and the store revision a fresh open of `path` loads.
    fn loaded(path: &Path) -> (Vec<String>, u64) {
        let snapshot = RedbBackend::open(path).unwrap().load().unwrap();
        let ids = snapshot.resources.iter().map(|r| r.id().to_string()).collect();
        (ids, snapshot.revision)
    }

    /// What a crash may leave: the file as of its last durable commit (the
    /// batches after it were committed without durability) and the log.
    #[test]
    fn batches_only_in_the_log_come_back_at_open() {
        use Precondition::{Absent, Revision};
        let dir = crate::testing::conformance::ScratchDir::new();
        let path = dir.path().join("state.redb");
        drop(RedbBackend::open(&path).unwrap());
        let durable = std::fs::read(&path).unwrap();
        {
            let mut writer = open_writer(&path);
            let batch = [put("a", Absent, 1), put("b", Absent, 2)];
            commit(&mut writer, &batch).unwrap();
            commit(&mut writer, &[delete("a", Revision(1), 3)]).unwrap();
            // A batch whose precondition fails is neither committed nor logged.
            assert!(commit(&mut writer, &[put("b", Absent, 4)]).is_err());
            assert!(writer.log().pending());
            // Dropped without closing: no checkpoint, as in a crash.
        }
        std::fs::write(&path, durable).unwrap();
        assert_eq!(loaded(&path), (vec!["b".to_string()], 3));
        // Replayed and checkpointed: the next open finds the same.
        assert_eq!(loaded(&path), (vec!["b".to_string()], 3));
    }

    #[test]
    fn a_log_record_that_does_not_parse_is_corrupt_at_open_and_nothing_applies() {
        use Precondition::Absent;
        let dir = crate::testing::conformance::ScratchDir::new();
        let path = dir.path().join("state.redb");
        {
            let mut writer = open_writer(&path);
            commit(&mut writer, &[put("a", Absent, 1)]).unwrap();
        }
        // The record's write of "a" made unknown, its checksum recomputed.
        let wal = redb_log::log_path(&path);
        let mut bytes = std::fs::read(&wal).unwrap();
        bytes[16 + 9] = 9;
        let seq = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize;
        let crc = redb_log::checksum(seq, &bytes[16..16 + len]);
        bytes[4..8].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&wal, &bytes).unwrap();
        let err = RedbBackend::open(&path).unwrap_err();
        assert!(
            matches!(&err, Error::Storage { failure: StorageFailure::Corrupt, resource, .. }
            if resource.ends_with("state.redb.wal")),
            "{err}"
        );
        assert_eq!(std::fs::read(&wal).unwrap(), bytes, "the log is left as it was");
    }

    /// A batch whose record does not fit in the log is committed durably by
    /// itself, with every logged batch before it; replay then skips those.
    #[test]
    fn a_batch_too_big_for_the_log_is_a_checkpoint() {
        use Precondition::{Absent, Revision};
        let dir = crate::testing::conformance::ScratchDir::new();
        let path = dir.path().join("state.redb");
        {
            let mut writer = open_writer(&path);
            writer.log().set_capacity(600);
            commit(&mut writer, &[put("a", Absent, 1)]).unwrap();
            assert!(writer.log().pending());
            let big: Vec<_> = (0..8).map(|i| put(&format!("k{i}"), Absent, 2 + i)).collect();
            commit(&mut writer, &big).unwrap();
            assert!(!writer.log().pending(), "the log starts again");
            commit(&mut writer, &[delete("a", Revision(1), 10)]).unwrap();
            assert!(writer.log().pending());
        }
        let (ids, revision) = loaded(&path);
        assert_eq!(ids.len(), 8, "{ids:?}");
        assert!(!ids.contains(&"a".to_string()));
        assert_eq!(revision, 10);
    }

    #[test]
    fn keys_keep_the_parts_apart() {
        let a = key_of(&Pointer::new("a", "b/c", "d"));
        let b = key_of(&Pointer::new("a", "b", "c/d"));
        assert_ne!(a, b);
    }

    #[test]
    fn records_round_trip_with_their_revision() {
        use crate::resource::test_specs::Num;
        let mut res = crate::resource::Resource::new("ns", "a", Num(7)).into_any();
        res.metadata_mut().set_revision(41);
        let mut bytes = b"left over".to_vec();
        encode(&res, 42, &mut bytes).unwrap();
        let bytes = &bytes[b"left over".len()..];
        let back = decode(&key_of(res.pointer()), bytes, Path::new("x")).unwrap();
        assert_eq!(back.metadata().revision(), 42);
        assert_eq!(back.typed::<Num>().unwrap().spec(), &Num(7));
        let err = decode("ns\0other\0a", bytes, Path::new("x")).unwrap_err();
        assert!(matches!(err, Error::Storage { failure: StorageFailure::Corrupt, .. }), "{err}");
        assert!(decode("k", b"abc", Path::new("x")).is_err());
    }
}
