//! The durable state's write-ahead log: what makes a batch durable in one
//! synced append (`O_DSYNC`), where a redb commit with immediate durability
//! costs two syncs and a copy of every page the batch touched.
//!
//! Expected flow (the writer thread of a [`RedbBackend`](super::RedbBackend)):
//! a batch's writes go into a redb transaction committed *without*
//! durability and, as one record, into this log, appended and synced before
//! the batch is acknowledged. When the log is full the next batch is
//! committed with immediate durability instead, which makes every earlier
//! batch durable in the file too (a checkpoint), and the log starts again
//! from its beginning. At open, the records that no checkpoint covers are
//! written into the file again.
//!
//! Guarantees:
//! - Every record carries its batch's sequence number, counting from the
//!   first batch the file ever took; a checkpoint stores the number of the
//!   last batch it covers in the file (`logged`). Replay takes the records
//!   after it, in order, and stops at the first that is cut short, fails its
//!   checksum or does not follow its predecessor's number: what a crash
//!   leaves after the last synced record, and the older records a log that
//!   started again has not overwritten yet (all covered by the checkpoint).
//! - A record is whole redb records (key and stored bytes), so replaying one
//!   the file already holds writes the same bytes again: replay is idempotent.
//!
//! Assumptions: nothing but this log's owner (which holds redb's lock on the
//! state file) writes it.

use std::fs::{File, OpenOptions};
use std::io;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The log grows in steps of this many zeroed bytes: a sync of a record
/// written over blocks already allocated has no metadata to write, so each
/// append costs one data sync; growth pays the metadata once per step.
const GROW: u64 = 1 << 20;
/// A batch whose record would end past this is committed with immediate
/// durability instead (a checkpoint), and the log starts again.
const CAPACITY: u64 = 8 << 20;
/// A record: payload length (u32), CRC-32 of the sequence number and the
/// payload (u32), sequence number (u64), payload.
const HEADER: usize = 16;

/// The largest sequence number a record may carry.
pub(super) const MAX_SEQ: u64 = 1 << 62;

const PUT: u8 = 1;
const DELETE: u8 = 2;

/// One write of a replayed record.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Entry<'a> {
    /// Insert or replace `key` with these stored bytes.
    Put(&'a str, &'a [u8]),
    /// Remove `key`.
    Delete(&'a str),
}

/// A record read back: its batch's writes and the store revision it set.
#[derive(Debug)]
pub(super) struct Replayed {
    /// The batch's sequence number.
    pub seq: u64,
    /// The store revision the batch wrote into the meta table, if it did.
    pub revision: Option<u64>,
    bytes: Vec<u8>,
}

impl Replayed {
    /// The batch's writes, in batch order.
    pub fn entries(&self) -> impl Iterator<Item = Entry<'_>> {
        Entries { rest: &self.bytes }
    }

    /// Whether every write of the record parses, to its last byte: replay
    /// checks this before it applies anything, so a record is applied whole
    /// or refused.
    fn well_formed(&self) -> bool {
        let mut entries = Entries { rest: &self.bytes };
        while entries.next().is_some() {}
        entries.rest.is_empty()
    }
}

/// The writes of a record; stops at its end or at a write that does not
/// parse (left in `rest`).
struct Entries<'a> {
    rest: &'a [u8],
}

/// The first `n` bytes of `bytes`, moving past them.
fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = bytes.split_at_checked(n)?;
    *bytes = rest;
    Some(head)
}

/// A length (u32, little-endian) at the start of `bytes`, moving past it.
fn take_len(bytes: &mut &[u8]) -> Option<usize> {
    Some(u32::from_le_bytes(take(bytes, 4)?.try_into().ok()?) as usize)
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        // Parsed on a copy: a write that does not parse stays in `rest`.
        let mut bytes = self.rest;
        let op = *take(&mut bytes, 1)?.first()?;
        let key_len = take_len(&mut bytes)?;
        let key = std::str::from_utf8(take(&mut bytes, key_len)?).ok()?;
        let entry = match op {
            PUT => {
                let len = take_len(&mut bytes)?;
                Entry::Put(key, take(&mut bytes, len)?)
            }
            DELETE => Entry::Delete(key),
            _ => return None,
        };
        self.rest = bytes;
        Some(entry)
    }
}

/// The log file of one state file, and the record being built.
#[derive(Debug)]
pub(super) struct Log {
    path: PathBuf,
    file: File,
    /// Where the next record goes.
    end: u64,
    /// The file's length (zeroed up to it).
    len: u64,
    /// The sequence number of the next batch.
    next: u64,
    /// A record may not end past this ([`CAPACITY`]; smaller in tests).
    capacity: u64,
    /// The record being built: header, then the payload.
    record: Vec<u8>,
}

/// The log's path beside the state file: `state.redb` → `state.redb.wal`.
pub(super) fn log_path(state: &Path) -> PathBuf {
    let mut name = state.file_name().unwrap_or_default().to_os_string();
    name.push(".wal");
    state.with_file_name(name)
}

impl Log {
    /// Opens (or creates) the log of the state file at `state`.
    pub fn open(state: &Path) -> io::Result<Log> {
        let path = log_path(state);
        let existed = path.exists();
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        // Each write is synced as it completes (data and the metadata to
        // reach it, as `fdatasync` after it would): one system call where a
        // write and an `fdatasync` make two, and on a disk that honours FUA
        // writes no flush of its whole cache.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_DSYNC);
        let file = options.open(&path)?;
        if !existed {
            // The new name survives a power cut before any record is trusted to it.
            sync_parent(&path);
        }
        let len = file.metadata()?.len();
        Ok(Log { path, file, end: 0, len, next: 1, capacity: CAPACITY, record: Vec::new() })
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The records after batch `logged` (the last one a checkpoint covers),
    /// in order; the next batch is numbered after the newest of them (or
    /// after `logged`). Does not move the log's end: call
    /// [`restart`](Self::restart) once they are in the file.
    pub fn replay(&mut self, logged: u64) -> io::Result<Vec<Replayed>> {
        // No record ends past the capacity: what a file holds beyond it
        // (put there by something else) is not read into memory.
        let mut bytes = Vec::with_capacity(self.len.min(CAPACITY) as usize);
        (&self.file).seek(SeekFrom::Start(0))?;
        (&self.file).take(CAPACITY).read_to_end(&mut bytes)?;
        let found = scan(&bytes, logged)?;
        self.next = found.last().map_or(logged, |r| r.seq).saturating_add(1);
        Ok(found)
    }

    /// After a checkpoint: the next record goes to the log's beginning.
    pub fn restart(&mut self) {
        self.end = 0;
    }

    /// The sequence number of the batch being built.
    pub fn seq(&self) -> u64 {
        self.next
    }

    /// Whether records were appended since the last checkpoint.
    pub fn pending(&self) -> bool {
        self.end > 0
    }

    /// A huge batch's record does not keep its buffer for good.
    pub fn shrink(&mut self) {
        self.record.shrink_to(1 << 16);
    }

    /// Starts the next batch's record.
    pub fn begin(&mut self) {
        self.record.clear();
        self.record.resize(HEADER, 0);
        // No store revision yet (`set_revision`).
        self.record.extend_from_slice(&[0; 9]);
    }

    /// Records the store revision the batch writes into the meta table.
    pub fn set_revision(&mut self, revision: u64) {
        self.record[HEADER] = 1;
        self.record[HEADER + 1..HEADER + 9].copy_from_slice(&revision.to_le_bytes());
    }

    /// Adds a put of `key`; `encode` appends the stored bytes to the buffer
    /// it gets. Returns those bytes (redb copies them on insert).
    pub fn put<E>(
        &mut self,
        key: &str,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<&[u8], E> {
        self.push_key(PUT, key);
        let len_at = self.record.len();
        self.record.extend_from_slice(&[0; 4]);
        let start = self.record.len();
        encode(&mut self.record)?;
        let len = (self.record.len() - start) as u32;
        self.record[len_at..start].copy_from_slice(&len.to_le_bytes());
        Ok(&self.record[start..])
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: &str) {
        self.push_key(DELETE, key);
    }

    fn push_key(&mut self, op: u8, key: &str) {
        self.record.push(op);
        self.record.extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.record.extend_from_slice(key.as_bytes());
    }

    /// The batch being built (or just appended: [`append`](Self::append)
    /// leaves the record in place) as its writes will be read back: what
    /// the file's tree is brought up to date with. Copies the record.
    pub fn batch(&self, seq: u64) -> Replayed {
        let payload = &self.record[HEADER..];
        let revision = (payload[0] == 1)
            .then(|| u64::from_le_bytes(payload[1..9].try_into().expect("8 bytes")));
        Replayed { seq, revision, bytes: payload[9..].to_vec() }
    }

    /// Whether the record being built fits after the log's end.
    pub fn fits(&self) -> bool {
        self.end + self.record.len() as u64 <= self.capacity
    }

    /// A log that holds at most `capacity` bytes of records.
    #[cfg(test)]
    pub fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity;
    }

    /// Writes the record at the log's end and syncs it: the batch is durable
    /// when this returns `Ok`. On an error the log's end stays where it was
    /// (see [`retract`](Self::retract)).
    pub fn append(&mut self) -> io::Result<()> {
        let payload = (self.record.len() - HEADER) as u32;
        let seq = self.next;
        let crc = checksum(seq, &self.record[HEADER..]);
        self.record[0..4].copy_from_slice(&payload.to_le_bytes());
        self.record[4..8].copy_from_slice(&crc.to_le_bytes());
        self.record[8..16].copy_from_slice(&seq.to_le_bytes());
        let at = self.end;
        let end = at + self.record.len() as u64;
        if end > self.len {
            // Zeroed ahead, so that the appends up to the new length sync no metadata.
            let len = end.div_ceil(GROW) * GROW;
            self.write_at(&vec![0; (len - self.len) as usize], self.len)?;
            self.len = len;
        }
        self.write_at(&self.record, at)?;
        self.end = end;
        self.next += 1;
        Ok(())
    }

    /// Takes back what a failed [`append`](Self::append) may have left at
    /// the log's end: a header zeroed and synced there, so replay stops
    /// before it, and the next batch takes its number and its place.
    pub fn retract(&mut self) -> io::Result<()> {
        self.write_at(&[0; HEADER], self.end)
    }

    /// Writes `bytes` at `at`, synced when this returns.
    fn write_at(&self, bytes: &[u8], at: u64) -> io::Result<()> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(at))?;
        file.write_all(bytes)?;
        // Opened with O_DSYNC on Unix: the write was synced.
        #[cfg(not(unix))]
        file.sync_data()?;
        Ok(())
    }

    /// A batch committed with immediate durability (not logged) took the
    /// current number.
    pub fn skip(&mut self) {
        self.next += 1;
    }
}

/// Syncs the directory that holds `path`, so that a name made or renamed in
/// it survives a power cut. Some filesystems cannot sync a directory; the
/// name is then as durable as the filesystem makes it.
pub(super) fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = File::open(dir).and_then(|d| d.sync_all())
    {
        log::debug!("cannot sync {}: {e}", dir.display());
    }
}

/// The records of a log's bytes after batch `logged`, in order: up to the
/// first record cut short, failing its checksum or not following its
/// predecessor's number.
///
/// # Errors
/// [`InvalidData`](io::ErrorKind::InvalidData) for a record after `logged`
/// that passes its checksum but whose writes do not parse.
pub(super) fn scan(bytes: &[u8], logged: u64) -> io::Result<Vec<Replayed>> {
    let mut found = Vec::new();
    let mut at = 0;
    let mut previous: Option<u64> = None;
    while let Some((seq, payload)) = parse(&bytes[at..]) {
        if previous.is_some_and(|p| seq != p + 1) {
            break;
        }
        previous = Some(seq);
        at += HEADER + payload.len();
        if seq > logged {
            let (flag, revision) = (payload[0], &payload[1..9]);
            let revision = (flag == 1).then(|| u64::from_le_bytes(revision.try_into().unwrap()));
            let record = Replayed { seq, revision, bytes: payload[9..].to_vec() };
            if !record.well_formed() {
                // It passed its checksum: written so by a build that
                // encodes differently, not torn. Nothing is applied.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("record {seq} passes its checksum but does not parse"),
                ));
            }
            found.push(record);
        }
    }
    Ok(found)
}

/// A record's checksum: CRC-32 of its sequence number and its payload.
pub(super) fn checksum(seq: u64, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&seq.to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}

/// The record at the start of `bytes`: its sequence number and payload, if
/// it is whole and its checksum holds.
fn parse(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let header = bytes.get(..HEADER)?;
    let len = u32::from_le_bytes(header[0..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..8].try_into().ok()?);
    let seq = u64::from_le_bytes(header[8..16].try_into().ok()?);
    let payload = bytes.get(HEADER..HEADER + len)?;
    // No log reaches 2^62 batches: a number beyond is not a record (and
    // every number after one stays far from overflowing).
    if len < 9 || seq > MAX_SEQ {
        return None;
    }
    (checksum(seq, payload) == crc).then_some((seq, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends a batch of one put; returns where its record starts.
    fn record(log: &mut Log, key: &str, value: &[u8]) -> u64 {
        let at = log.end;
        log.begin();
        log.put(key, |b| {
            b.extend_from_slice(value);
            Ok::<_, ()>(())
        })
        .unwrap();
        log.append().unwrap();
        at
    }

    /// A new log beside `s.redb` in a scratch directory, read once (as an
    /// open does): the directory (kept alive), the state file's path, the log.
    fn new_log() -> (crate::testing::conformance::ScratchDir, PathBuf, Log) {
        let dir = crate::testing::conformance::ScratchDir::new();
        let state = dir.path().join("s.redb");
        let mut log = Log::open(&state).unwrap();
        log.replay(0).unwrap();
        (dir, state, log)
    }

    fn seqs(replayed: &[Replayed]) -> Vec<u64> {
        replayed.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn records_come_back_in_order_with_their_writes() {
        let (dir, state, mut log) = new_log();
        assert_eq!(log.path(), dir.path().join("s.redb.wal"));
        record(&mut log, "a", b"one");
        log.begin();
        log.delete("a");
        log.put("b", |v| {
            v.extend_from_slice(b"two");
            Ok::<_, ()>(())
        })
        .unwrap();
        log.set_revision(7);
        log.append().unwrap();
        let mut again = Log::open(&state).unwrap();
        let replayed = again.replay(0).unwrap();
        assert_eq!(seqs(&replayed), [1, 2]);
        assert_eq!(replayed[0].entries().collect::<Vec<_>>(), [Entry::Put("a", b"one")]);
        assert_eq!(replayed[0].revision, None);
        assert_eq!(
            replayed[1].entries().collect::<Vec<_>>(),
            [Entry::Delete("a"), Entry::Put("b", b"two")]
        );
        assert_eq!(replayed[1].revision, Some(7));
        assert_eq!(again.seq(), 3);
        // What a checkpoint covers is not replayed.
        assert_eq!(seqs(&Log::open(&state).unwrap().replay(1).unwrap()), [2]);
        let mut covered = Log::open(&state).unwrap();
        assert!(covered.replay(2).unwrap().is_empty());
        assert_eq!(covered.seq(), 3);
    }

    #[test]
    fn replay_stops_at_a_torn_record_a_retracted_one_and_a_stale_one() {
        let (_dir, state, mut log) = new_log();
        for i in 0..4 {
            record(&mut log, &format!("k{i}"), b"vvvvvvvv");
        }
        // A torn third record: its checksum fails.
        let third = (HEADER + 9 + 1 + 4 + 2 + 4 + 8) as u64 * 2;
        log.write_at(b"X", third + HEADER as u64 + 12).unwrap();
        assert_eq!(seqs(&Log::open(&state).unwrap().replay(0).unwrap()), [1, 2]);
        // Started again after a checkpoint of 1..4: 5 over 1; 2.. are stale.
        log.restart();
        let five = record(&mut log, "k5", b"vvvvvvvv");
        assert_eq!(seqs(&Log::open(&state).unwrap().replay(4).unwrap()), [5]);
        // An append whose sync failed (its bytes written, the end not moved),
        // retracted: replay stops before it, and the next batch takes its place.
        (log.end, log.next) = (five, 5);
        log.retract().unwrap();
        assert!(Log::open(&state).unwrap().replay(4).unwrap().is_empty());
        assert_eq!(record(&mut log, "k5", b"wwwwwwww"), five);
        let replayed = Log::open(&state).unwrap().replay(4).unwrap();
        assert_eq!(seqs(&replayed), [5]);
        assert_eq!(replayed[0].entries().next(), Some(Entry::Put("k5", b"wwwwwwww")));
    }

    #[test]
    fn a_record_that_passes_its_checksum_but_does_not_parse_is_refused_whole() {
        let (_dir, state, mut log) = new_log();
        log.begin();
        log.delete("a");
        log.record.push(9); // an operation this build does not know
        log.append().unwrap();
        let err = Log::open(&state).unwrap().replay(0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        assert!(err.to_string().contains("record 1"), "{err}");
    }

    #[test]
    fn a_record_that_does_not_fit_is_refused_and_the_file_grows_in_steps() {
        let (_dir, _, mut log) = new_log();
        record(&mut log, "a", b"x");
        assert_eq!(std::fs::metadata(log.path()).unwrap().len(), GROW);
        log.begin();
        log.put("big", |b| {
            b.resize(CAPACITY as usize + 1, 1);
            Ok::<_, ()>(())
        })
        .unwrap();
        assert!(!log.fits());
        log.restart();
        assert!(!log.fits(), "larger than the whole log");
    }
}
