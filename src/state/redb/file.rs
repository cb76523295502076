//! The state file as [`RedbBackend`](super::RedbBackend) and its
//! [writer](super::writer) thread both use it: its tables, the keys and
//! bytes of its records, what a failure on it means, and bringing it up to
//! date with the write-ahead log (replay, checkpoints).

use std::path::Path;
use std::sync::Arc;

use redb::{Database, ReadableDatabase, TableDefinition, WriteTransaction};

use crate::resource::{AnyResource, DynamicResource, Pointer};
use crate::state::redb_log::{self, Entry, Log, Replayed};
use crate::{Error, StorageFailure};

/// `<namespace> NUL <type> NUL <id>` → 8-byte big-endian mod revision, then
/// the resource as JSON (`{"metadata": ..., "spec": ...}`).
pub(super) const RESOURCES: TableDefinition<'_, &str, &[u8]> =
    TableDefinition::new("cosi.resources");
/// `format` and `revision` (the store revision as of the last batch that
/// deleted, or wrote revisions out of order: the records hold the newer
/// ones; see `writer::stage`).
pub(super) const META: TableDefinition<'_, &str, u64> = TableDefinition::new("cosi.meta");
/// The meta key of the last batch of the write-ahead log that the file holds
/// durably (written by each checkpoint; see [`redb_log`](crate::state::redb_log)).
pub(super) const LOGGED: &str = "logged";

/// How a [`RedbBackend`](super::RedbBackend) opens its database (again).
pub(super) type Reopen = Arc<dyn Fn() -> Result<Database, redb::DatabaseError> + Send + Sync>;

pub(super) fn storage(
    resource: impl Into<String>,
    failure: StorageFailure,
    reason: impl ToString,
) -> Error {
    Error::Storage { resource: resource.into(), failure, reason: reason.to_string() }
}

/// What kind of failure a redb error is.
pub(super) fn classify(e: &redb::Error) -> StorageFailure {
    match e {
        redb::Error::DatabaseAlreadyOpen | redb::Error::LockProtocolMismatch => {
            StorageFailure::Locked
        }
        redb::Error::Corrupted(_) | redb::Error::TableTypeMismatch { .. } => {
            StorageFailure::Corrupt
        }
        redb::Error::UpgradeRequired(_) => StorageFailure::UnsupportedFormat,
        redb::Error::Io(io) => classify_redb_io(io),
        _ => StorageFailure::Io,
    }
}

/// What kind of failure an IO error that redb met on the file is. redb
/// reports a file that only starts like a redb file as IO errors: a magic
/// number that does not match ([`InvalidData`](std::io::ErrorKind::InvalidData))
/// and a header cut short ([`UnexpectedEof`](std::io::ErrorKind::UnexpectedEof)).
/// Both are about the bytes in the file, not about reaching them: corrupt.
fn classify_redb_io(e: &std::io::Error) -> StorageFailure {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::InvalidData | ErrorKind::UnexpectedEof => StorageFailure::Corrupt,
        _ => classify_io(e),
    }
}

pub(super) fn classify_io(e: &std::io::Error) -> StorageFailure {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => StorageFailure::ReadOnly,
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded | ErrorKind::FileTooLarge => {
            StorageFailure::Full
        }
        ErrorKind::WouldBlock => StorageFailure::Locked,
        _ => StorageFailure::Io,
    }
}

/// An IO error on the write-ahead log at `log`.
/// A record that does not parse ([`InvalidData`](std::io::ErrorKind::InvalidData))
/// is [`Corrupt`](StorageFailure::Corrupt).
pub(super) fn log_failure(log: &Path, e: &std::io::Error) -> Error {
    storage(log.display().to_string(), classify_redb_io(e), format!("write-ahead log: {e}"))
}

pub(super) fn redb_error(path: &Path, e: impl Into<redb::Error>) -> Error {
    let e = e.into();
    storage(path.display().to_string(), classify(&e), e)
}

pub(super) fn key_of(ptr: &Pointer) -> String {
    let mut key = String::new();
    write_key(ptr, &mut key);
    key
}

/// `ptr`'s key into `key` (cleared first): the batch reuses one buffer.
pub(super) fn write_key(ptr: &Pointer, key: &mut String) {
    // Validation forbids control characters in namespaces, types and ids, so
    // NUL separates them unambiguously.
    key.clear();
    key.push_str(ptr.namespace());
    key.push('\0');
    key.push_str(ptr.resource_type());
    key.push('\0');
    key.push_str(ptr.id());
}

/// Appends `res`'s stored bytes at `revision` to `bytes`.
pub(super) fn encode(res: &AnyResource, revision: u64, bytes: &mut Vec<u8>) -> Result<(), Error> {
    bytes.extend_from_slice(&revision.to_be_bytes());
    res.write_json(bytes)
}

pub(super) fn revision_of(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?))
}

pub(super) fn decode(key: &str, bytes: &[u8], path: &Path) -> Result<AnyResource, Error> {
    let corrupt = |why: String| {
        storage(path.display().to_string(), StorageFailure::Corrupt, format!("{key:?}: {why}"))
    };
    let revision = revision_of(bytes).ok_or_else(|| corrupt("record too short".into()))?;
    let dynamic: DynamicResource =
        serde_json::from_slice(&bytes[8..]).map_err(|e| corrupt(e.to_string()))?;
    let mut res = dynamic.into_any();
    res.metadata_mut().set_revision(revision);
    if key_of(res.pointer()) != key {
        return Err(corrupt(format!("holds {}", res.pointer())));
    }
    Ok(res)
}

/// Makes every logged batch durable in the file (one commit with immediate
/// durability that records the last batch it covers), so that the file
/// alone holds the state and the log starts again. A failure leaves the log
/// as it was: the next open replays it.
pub(super) fn checkpoint(db: &Database, log: &mut Log, path: &Path) {
    if !log.pending() {
        return;
    }
    let done = (|| -> Result<(), redb::Error> {
        let txn = db.begin_write()?;
        txn.open_table(META)?.insert(LOGGED, log.seq() - 1)?;
        txn.commit()?;
        Ok(())
    })();
    match done {
        Ok(()) => log.restart(),
        Err(e) => {
            log::warn!("{}: checkpoint failed, the log keeps the writes: {e}", path.display())
        }
    }
}

/// Writes the logged batches that no checkpoint covers into the file (what
/// a crash or a failed write left only in the log), with immediate
/// durability, and starts the log again.
pub(super) fn recover(db: &Database, log: &mut Log, path: &Path) -> Result<(), Error> {
    let at = log.path().to_path_buf();
    let io = |e: std::io::Error| log_failure(&at, &e);
    let read = db.begin_read().map_err(|e| redb_error(path, e))?;
    let logged = match read.open_table(META) {
        Ok(meta) => meta.get(LOGGED).map_err(|e| redb_error(path, e))?.map_or(0, |v| v.value()),
        Err(redb::TableError::TableDoesNotExist(_)) => 0,
        Err(e) => return Err(redb_error(path, e)),
    };
    drop(read);
    if logged > redb_log::MAX_SEQ {
        let why = format!("the last logged batch is {logged}, beyond any log's numbers");
        return Err(storage(path.display().to_string(), StorageFailure::Corrupt, why));
    }
    let replayed = log.replay(logged).map_err(io)?;
    if let Some(last) = replayed.last() {
        log::info!(
            "{}: {} batch(es) replayed from the write-ahead log",
            path.display(),
            replayed.len()
        );
        let txn = db.begin_write().map_err(|e| redb_error(path, e))?;
        for batch in &replayed {
            apply(&txn, batch).map_err(|e| redb_error(path, e))?;
        }
        let mut meta = txn.open_table(META).map_err(|e| redb_error(path, e))?;
        meta.insert(LOGGED, last.seq).map_err(|e| redb_error(path, e))?;
        drop(meta);
        txn.commit().map_err(|e| redb_error(path, e))?;
    }
    log.restart();
    Ok(())
}

/// Writes one logged batch into `txn`: its records, and the store revision
/// when the batch carries one (the meta table is opened only then: opening a
/// second table costs more than the rest of a small batch).
pub(super) fn apply(txn: &WriteTransaction, batch: &Replayed) -> Result<(), redb::Error> {
    let mut table = txn.open_table(RESOURCES)?;
    for entry in batch.entries() {
        match entry {
            Entry::Put(key, value) => table.insert(key, value).map(drop)?,
            Entry::Delete(key) => table.remove(key).map(drop)?,
        }
    }
    if let Some(revision) = batch.revision {
        txn.open_table(META)?.insert("revision", revision)?;
    }
    Ok(())
}
