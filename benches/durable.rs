//! Durable-state benchmarks, each against baselines run in the same process:
//!
//! - `durable_writes`: acknowledged writes (a `modify` that changes the spec)
//!   with 1 and with 64 in flight, through the in-memory state, through a
//!   state whose namespace is durable in redb (group commit: one write
//!   transaction per mailbox drain), and through raw redb with one
//!   transaction per write (the cost group commit removes) and with 64
//!   writes per transaction (the ceiling it approaches); and the disk alone:
//!   a batch's bytes appended in one write and synced, per 64 writes (the
//!   ceiling of any store that writes each batch once); the same append
//!   handed to an IO thread from an actix task and awaited (the ceiling of a
//!   state on an actix thread, which never blocks it on IO), and that after
//!   a bare actor's window of 64 `send`s.
//! - reopen: how long opening a state file of 100,000 resources takes (load
//!   into the cache included), and the bytes on disk per resource; written to
//!   `<target>/bench-report/durable.json`.
//!
//! `cargo bench --bench durable` measures; `cargo test --benches` runs a
//! scaled-down smoke pass that asserts only functional facts.

mod common;

use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use actix::SystemRunner;
use common::{CountingAlloc, Insert, IntSpec, MapActor, Mode, NS, pipelined};
use cosi_runtime::prelude::*;
use cosi_runtime::testing::conformance::ScratchDir;
use criterion::{Criterion, Throughput};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::json;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The resources the writes cycle over.
const KEYS: u64 = 1_000;

const RAW: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("raw");

fn ptr(k: u64) -> Pointer {
    Pointer::typed::<IntSpec>(NS, format!("r{}", k % KEYS)).erase()
}

/// `n` acknowledged writes with `window` in flight; the elapsed time.
async fn writes(state: &State, n: u64, window: u64, base: u64) -> Duration {
    let started = Instant::now();
    pipelined(n, window, |k| {
        let state = state.clone();
        async move {
            let v = (base + k) as i64;
            state
                .modify(&ptr(k), move |r: &mut Resource<IntSpec>| r.spec_mut().0 = v, None)
                .await
                .expect("write");
        }
    })
    .await;
    started.elapsed()
}

/// The writes; returns the mean size of the records the durable state wrote.
fn durable_writes(c: &mut Criterion, sys: &SystemRunner) -> usize {
    let mut g = c.benchmark_group("durable_writes");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    let dir = ScratchDir::new();
    let memory = sys.block_on(async { State::start() });
    let durable = sys.block_on(async {
        State::open_durable(dir.path().join("bench.redb"), [NS]).await.expect("open")
    });
    for window in [1u64, 64] {
        for (name, state) in [("memory", &memory), ("redb_state", &durable)] {
            let mut base = 0;
            g.bench_function(format!("{name}_{window}"), |b| {
                b.iter_custom(|iters| {
                    base += iters;
                    sys.block_on(writes(state, iters, window, base))
                });
            });
        }
    }
    sys.block_on(async { durable.close().await.expect("close") });
    // The size of the records the durable state wrote (revision + JSON).
    let record = record_bytes(&dir.path().join("bench.redb"));
    let db = Database::create(dir.path().join("raw.redb")).expect("raw redb");
    let value = vec![7u8; 64];
    for per_txn in [1u64, 64] {
        g.bench_function(format!("raw_redb_{per_txn}_per_txn"), |b| {
            b.iter_custom(|iters| {
                in_batches(iters, per_txn, |writes| {
                    let txn = db.begin_write().expect("txn");
                    {
                        let mut t = txn.open_table(RAW).expect("table");
                        for j in writes {
                            let key = format!("default\0Ints\0r{}", j % KEYS);
                            t.insert(key.as_str(), value.as_slice()).expect("insert");
                        }
                    }
                    txn.commit().expect("commit");
                })
            });
        });
    }
    // The fair ceiling: what the state writes per batch, raw. The state's
    // keys (its `<namespace> NUL <type> NUL <id>`, 64 distinct ones of 1,000
    // per transaction, in the same order), records of the state's size, in a
    // table that already holds all 1,000.
    let fair = Database::create(dir.path().join("fair.redb")).expect("raw redb");
    let value = vec![7u8; record];
    let key = |j: u64| format!("{NS}\0{}\0r{}", <IntSpec as Spec>::TYPE, j % KEYS);
    let txn = fair.begin_write().expect("txn");
    {
        let mut t = txn.open_table(RAW).expect("table");
        for j in 0..KEYS {
            t.insert(key(j).as_str(), value.as_slice()).expect("insert");
        }
    }
    txn.commit().expect("commit");
    let mut next = 0u64;
    g.bench_function("raw_redb_64_distinct_per_txn", |b| {
        b.iter_custom(|iters| {
            in_batches(iters, 64, |writes| {
                let txn = fair.begin_write().expect("txn");
                {
                    let mut t = txn.open_table(RAW).expect("table");
                    for _ in writes {
                        t.insert(key(next).as_str(), value.as_slice()).expect("insert");
                        next += 1;
                    }
                }
                txn.commit().expect("commit");
            })
        });
    });
    // The disk alone: what any store that writes a batch once, as one
    // contiguous append (a log, no tree), pays per 64 writes: the batch's
    // record bytes in one write to a file allocated and synced beforehand (so
    // the sync has no size to record), synced as it completes (O_DSYNC, as
    // the state's write-ahead log writes; an fdatasync after the write cost
    // more here). Its share of the in-memory rate is this disk's ceiling for
    // durable writes at 64 in flight, before any work of the state.
    const LOG_BYTES: u64 = 8 << 20;
    let log = synced_file(&dir.path().join("append.log"), LOG_BYTES);
    let batch = vec![7u8; 64 * record.max(1)];
    let mut at = 0u64;
    g.bench_function("disk_append_64_per_sync", |b| {
        b.iter_custom(|iters| {
            // The whole batch each time, the last one too.
            in_batches(iters, 64, |_| {
                if at + batch.len() as u64 > LOG_BYTES {
                    at = 0;
                }
                log.write_all_at(&batch, at).expect("append, synced");
                at += batch.len() as u64;
            })
        });
    });
    // The same disk reached as a state on an actix thread must reach it:
    // blocking IO never runs on an arbiter, so each batch's bytes go to an
    // IO thread that appends them (O_DSYNC) and answers through a oneshot
    // channel the actix task awaits (two wake-ups across threads besides the
    // write). Then the same preceded by a bare actor's share of the window:
    // 64 `send`s to an actor that inserts into a `HashMap`, joined.
    let thread = LogThread::start(dir.path().join("thread.log"), LOG_BYTES);
    g.bench_function("disk_via_thread_64_per_sync", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let started = Instant::now();
                for _ in (0..iters).step_by(64) {
                    thread.append(batch.clone()).await;
                }
                started.elapsed()
            })
        });
    });
    let actor = sys.block_on(async { actix::Actor::start(MapActor::default()) });
    g.bench_function("actor_then_disk_via_thread_64", |b| {
        b.iter_custom(|iters| sys.block_on(actor_then_append(&actor, &thread, &batch, iters, 64)));
    });
    g.finish();
    record
}

/// `n` writes as the floor of a state on an actix thread: per window of
/// `window`, that many `send`s to the bare `actor`, joined, then `batch`
/// appended through `thread` and awaited; the time they took.
async fn actor_then_append(
    actor: &actix::Addr<MapActor>,
    thread: &LogThread,
    batch: &[u8],
    n: u64,
    window: u64,
) -> Duration {
    let started = Instant::now();
    let mut k = 0;
    while k < n {
        let end = (k + window).min(n);
        let sends = (k..end).map(|j| actor.send(Insert(format!("r{}", j % KEYS), j as i64)));
        futures::future::join_all(sends).await;
        thread.append(batch.to_vec()).await;
        k = end;
    }
    started.elapsed()
}

/// A file of `len` bytes, allocated (written whole) beforehand so that an
/// append's sync has no size to record, opened with O_DSYNC: each write is
/// synced as it completes, as the state's write-ahead log writes.
fn synced_file(path: &std::path::Path, len: u64) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true).custom_flags(libc::O_DSYNC);
    let file = options.open(path).expect("log file");
    file.write_all_at(&vec![7u8; len as usize], 0).expect("allocate");
    file
}

/// An IO thread appending each batch it is handed to a file opened with
/// O_DSYNC (allocated beforehand, written again from its start once full),
/// answering once the write completed.
struct LogThread {
    batches: std::sync::mpsc::Sender<(Vec<u8>, futures::channel::oneshot::Sender<()>)>,
}

impl LogThread {
    fn start(path: std::path::PathBuf, len: u64) -> LogThread {
        let file = synced_file(&path, len);
        let (batches, received) =
            std::sync::mpsc::channel::<(Vec<u8>, futures::channel::oneshot::Sender<()>)>();
        std::thread::spawn(move || {
            let mut at = 0u64;
            for (bytes, done) in received {
                if at + bytes.len() as u64 > len {
                    at = 0;
                }
                file.write_all_at(&bytes, at).expect("append, synced");
                at += bytes.len() as u64;
                let _ = done.send(());
            }
        });
        LogThread { batches }
    }

    /// Appends `bytes`; resolves once they are on disk.
    async fn append(&self, bytes: Vec<u8>) {
        let (done, synced) = futures::channel::oneshot::channel();
        self.batches.send((bytes, done)).expect("log thread");
        synced.await.expect("appended");
    }
}

/// `iters` writes in batches of `per` (the last one shorter), each done by
/// `batch` with the indices of its writes; the time they took.
fn in_batches(iters: u64, per: u64, mut batch: impl FnMut(std::ops::Range<u64>)) -> Duration {
    let started = Instant::now();
    let mut k = 0;
    while k < iters {
        let end = (k + per).min(iters);
        batch(k..end);
        k = end;
    }
    started.elapsed()
}

/// The mean size of the records in a state file (closed).
fn record_bytes(file: &std::path::Path) -> usize {
    let db = redb::ReadOnlyDatabase::open(file).expect("reopen read-only");
    let read = db.begin_read().expect("read");
    let table =
        read.open_table(TableDefinition::<&str, &[u8]>::new("cosi.resources")).expect("table");
    let (mut n, mut bytes) = (0usize, 0usize);
    for item in table.iter().expect("iter") {
        bytes += item.expect("item").1.value().len();
        n += 1;
    }
    bytes / n.max(1)
}

/// Opens a state file of `n` resources; reports the time and the size.
fn reopen(mode: &Mode, sys: &SystemRunner, n: u64, record: usize) {
    let dir = ScratchDir::new();
    let file = dir.path().join("reopen.redb");
    sys.block_on(async {
        let state = State::open_durable(&file, [NS]).await.expect("open");
        pipelined(n, 256, |k| {
            let state = state.clone();
            async move {
                let mut r = Resource::new(NS, format!("resource-{k:06}"), IntSpec(k as i64));
                r.metadata_mut().labels_mut().insert("app", "bench");
                state.create(r, None).await.expect("create");
            }
        })
        .await;
        state.close().await.expect("close");
    });
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let mut times = Vec::new();
    for _ in 0..mode.scale(5, 1) {
        let started = Instant::now();
        let count = sys.block_on(async {
            let state = State::open_durable(&file, [NS]).await.expect("reopen");
            let elapsed = started.elapsed();
            let count =
                state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.expect("list").len();
            state.close().await.expect("close");
            times.push(elapsed);
            count
        });
        assert_eq!(count as u64, n, "every resource is back after the reopen");
    }
    times.sort();
    let median = times[times.len() / 2];
    common::write_report(
        mode,
        "durable",
        &json!({
            "resources": n,
            "reopen_ns": common::ns(median),
            "file_bytes": bytes,
            "bytes_per_resource": bytes as f64 / n as f64,
            "write_record_bytes": record,
        }),
    );
}

/// `COSI_BENCH_PROFILE=durable:<n>` (or `memory:<n>`, or `floor:<n>` for the
/// bare actor and the append through a thread, see
/// `common::profile_request`): no criterion; `n` acknowledged writes with 64
/// (`COSI_BENCH_WINDOW`) in flight on a durable state (or the in-memory one),
/// after one unmeasured pass over the 1,000 resources, for a profiler
/// (callgrind, strace) to look at. Two runs of different `n` give the cost
/// per write without the set-up (`scripts/instructions.py`).
fn profile(sys: &SystemRunner, scenario: &str, n: u64) {
    let window = std::env::var("COSI_BENCH_WINDOW").ok().and_then(|w| w.parse().ok()).unwrap_or(64);
    let dir = ScratchDir::new();
    if scenario == "floor" {
        // The floor of a state on an actix thread (see `durable_writes`):
        // a bare actor's window, then its batch's bytes appended by a thread.
        // Records of about the size the durable state writes (296 B in run O).
        let thread = LogThread::start(dir.path().join("thread.log"), 8 << 20);
        let batch = vec![7u8; window as usize * 296];
        sys.block_on(async {
            let actor = actix::Actor::start(MapActor::default());
            let elapsed = actor_then_append(&actor, &thread, &batch, n, window).await;
            println!("floor: {n} writes, {window} in flight: {:?} per write", elapsed / n as u32);
        });
        return;
    }
    sys.block_on(async {
        let state = match scenario {
            "memory" => State::start(),
            "durable" => {
                State::open_durable(dir.path().join("profile.redb"), [NS]).await.expect("open")
            }
            other => {
                panic!("COSI_BENCH_PROFILE: no durable scenario {other:?} (durable, memory, floor)")
            }
        };
        writes(&state, KEYS, 64, 0).await;
        let elapsed = writes(&state, n, window, KEYS).await;
        state.close().await.expect("close");
        println!("{scenario}: {n} writes, {window} in flight: {:?} per write", elapsed / n as u32);
    });
}

fn main() {
    if let Some((scenario, n)) = common::profile_request() {
        profile(&actix::System::new(), &scenario, n);
        return;
    }
    let mode = Mode::from_args();
    let mut c = mode.criterion();
    let sys = actix::System::new();
    let record = durable_writes(&mut c, &sys);
    if mode.wants("reopen") {
        reopen(&mode, &sys, mode.scale(100_000, 2_000), record);
    }
    c.final_summary();
}
