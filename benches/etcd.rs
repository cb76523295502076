//! Shared-state (etcd) benchmarks, each against raw `etcd-client` on the
//! same etcd in the same run:
//!
//! - `etcd_writes`: acknowledged writes with 1 and with 64 in flight through
//!   an etcd `State` (creates of new resources; `modify`s of distinct
//!   existing ones), vs raw `etcd-client` puts of the same key and value
//!   sizes (1 and 64 in flight), and raw transactions: shaped like the
//!   state's (a compare on the key's revision, then a put), the same without
//!   the compare, and 8 such creates per transaction (64 keys in flight).
//! - watch latency: a write through one `State` until a watch on a second
//!   `State` on the same etcd sees it (p50, p99), vs a raw put until a raw
//!   etcd watch sees it, and a raw transaction shaped like the state's
//!   write (a compare, then the put), the three taken in turns; written to
//!   `<target>/bench-report/etcd.json`.
//!
//! The bench starts its own etcd on free loopback ports (skipped, loudly,
//! without an `etcd` binary). `cargo bench --features etcd --bench etcd`
//! measures; `cargo test --benches --features etcd` runs a scaled-down smoke
//! pass that asserts only functional facts.

mod common;

use std::time::{Duration, Instant};

use actix::SystemRunner;
use common::{CountingAlloc, IntSpec, Mode, NS, pipelined};
use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchOptions;
use cosi_runtime::testing::etcd::TestEtcd;
use criterion::{Criterion, Throughput};
use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};
use futures::StreamExt;
use serde_json::json;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The resources the modifies cycle over (64 in flight always touch distinct ones).
const KEYS: u64 = 1_000;

/// The prefix of the state the writes go to, and of the raw keys.
const PREFIX: &str = "bench";
const RAW_PREFIX: &str = "/raw/default/Ints.bench.cosi.dev/";

fn modified(k: u64) -> Pointer {
    Pointer::typed::<IntSpec>(NS, format!("m{:06}", k % KEYS)).erase()
}

async fn open(etcd: &TestEtcd, prefix: &str) -> State {
    let config = etcd
        .config(prefix)
        .connect_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(30));
    State::builder().etcd(config).open().await.expect("open the etcd state")
}

async fn raw_client(etcd: &TestEtcd) -> Client {
    Client::connect([etcd.endpoint()], None).await.expect("connect to etcd")
}

/// The size of the value the state stores for one of the written resources,
/// so the raw writes carry as many bytes.
async fn stored_value_bytes(raw: &mut Client) -> usize {
    let key = format!("/{PREFIX}/{NS}/{}/c{:09}", <IntSpec as Spec>::TYPE, 0);
    let resp = raw.get(key.as_str(), None).await.expect("get");
    resp.kvs().first().map(|kv| kv.value().len()).unwrap_or_else(|| panic!("no value at {key}"))
}

fn etcd_writes(c: &mut Criterion, sys: &SystemRunner, etcd: &TestEtcd) -> usize {
    let mut g = c.benchmark_group("etcd_writes");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    let state = sys.block_on(open(etcd, PREFIX));
    let mut raw = sys.block_on(raw_client(etcd));
    // The first create, so that the value size is known before the raw writes.
    sys.block_on(async {
        state
            .create(Resource::new(NS, format!("c{:09}", 0), IntSpec(0)), None)
            .await
            .expect("create")
    });
    let value = vec![b'x'; sys.block_on(stored_value_bytes(&mut raw))];
    let mut created = 1u64;
    let mut raw_written = 0u64;
    let mut modifies = 0u64;
    for window in [1u64, 64] {
        g.bench_function(format!("state_create_{window}"), |b| {
            b.iter_custom(|iters| {
                let base = created;
                created += iters;
                sys.block_on(async {
                    let started = Instant::now();
                    pipelined(iters, window, |k| {
                        let state = state.clone();
                        let id = format!("c{:09}", base + k);
                        async move {
                            state
                                .create(Resource::new(NS, id, IntSpec(k as i64)), None)
                                .await
                                .expect("create");
                        }
                    })
                    .await;
                    started.elapsed()
                })
            });
        });
        g.bench_function(format!("state_modify_{window}"), |b| {
            b.iter_custom(|iters| {
                let base = modifies;
                modifies += iters;
                sys.block_on(async {
                    let started = Instant::now();
                    pipelined(iters, window, |k| {
                        let state = state.clone();
                        let v = (base + k) as i64;
                        async move {
                            state
                                .modify(
                                    &modified(base + k),
                                    move |r: &mut Resource<IntSpec>| r.spec_mut().0 = v,
                                    None,
                                )
                                .await
                                .expect("modify");
                        }
                    })
                    .await;
                    started.elapsed()
                })
            });
        });
        g.bench_function(format!("raw_put_{window}"), |b| {
            b.iter_custom(|iters| {
                let base = raw_written;
                raw_written += iters;
                sys.block_on(async {
                    let started = Instant::now();
                    pipelined(iters, window, |k| {
                        let (mut raw, value) = (raw.clone(), value.clone());
                        let key = format!("{RAW_PREFIX}p{:09}", base + k);
                        async move {
                            raw.put(key, value, None).await.expect("put");
                        }
                    })
                    .await;
                    started.elapsed()
                })
            });
        });
    }
    // What the state sends for a create: a transaction that puts the key if
    // it does not exist yet.
    g.bench_function("raw_txn_64", |b| {
        b.iter_custom(|iters| {
            let base = raw_written;
            raw_written += iters;
            sys.block_on(async {
                let started = Instant::now();
                pipelined(iters, 64, |k| {
                    let (mut raw, value) = (raw.clone(), value.clone());
                    let key = format!("{RAW_PREFIX}t{:09}", base + k);
                    async move {
                        let txn = Txn::new()
                            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                            .and_then([TxnOp::put(key, value, None)]);
                        assert!(raw.txn(txn).await.expect("txn").succeeded());
                    }
                })
                .await;
                started.elapsed()
            })
        });
    });
    // The same transaction without its compare: what etcd charges for a
    // transaction as such.
    g.bench_function("raw_txn_no_compare_64", |b| {
        b.iter_custom(|iters| {
            let base = raw_written;
            raw_written += iters;
            sys.block_on(async {
                let started = Instant::now();
                pipelined(iters, 64, |k| {
                    let (mut raw, value) = (raw.clone(), value.clone());
                    let key = format!("{RAW_PREFIX}n{:09}", base + k);
                    async move {
                        let txn = Txn::new().and_then([TxnOp::put(key, value, None)]);
                        assert!(raw.txn(txn).await.expect("txn").succeeded());
                    }
                })
                .await;
                started.elapsed()
            })
        });
    });
    // 64 creates in flight as 8 transactions of 8 keys each: the ceiling a
    // state that sent the writes of one mailbox drain as one transaction
    // would approach.
    g.bench_function("raw_txn_8_keys_64", |b| {
        b.iter_custom(|iters| {
            let base = raw_written;
            raw_written += iters;
            sys.block_on(async {
                let started = Instant::now();
                pipelined(iters.div_ceil(8), 8, |batch| {
                    let (mut raw, value) = (raw.clone(), value.clone());
                    let keys: Vec<String> = (batch * 8..(batch * 8 + 8).min(iters))
                        .map(|k| format!("{RAW_PREFIX}b{:09}", base + k))
                        .collect();
                    async move {
                        let absent: Vec<_> = keys
                            .iter()
                            .map(|key| Compare::create_revision(key.as_str(), CompareOp::Equal, 0))
                            .collect();
                        let puts: Vec<_> = keys
                            .into_iter()
                            .map(|key| TxnOp::put(key, value.clone(), None))
                            .collect();
                        let txn = Txn::new().when(absent).and_then(puts);
                        assert!(raw.txn(txn).await.expect("txn").succeeded());
                    }
                })
                .await;
                started.elapsed()
            })
        });
    });
    g.finish();
    sys.block_on(async {
        let all = state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.expect("list");
        assert!(all.len() as u64 >= created.min(KEYS), "every create is there");
        state.close().await.expect("close");
    });
    value.len()
}

fn latency_figures(mut samples: Vec<Duration>) -> serde_json::Value {
    samples.sort();
    json!({
        "p50_ns": common::ns(common::percentile(&samples, 50.0)),
        "p99_ns": common::ns(common::percentile(&samples, 99.0)),
        "max_ns": common::ns(*samples.last().expect("samples")),
    })
}

/// One write through `writer` (a `State`), timed until `watch` (on a
/// second `State` on the same etcd) delivers it.
async fn state_sample(
    writer: &State,
    watch: &mut (impl futures::Stream<Item = Event> + Unpin),
    i: i64,
) -> Duration {
    let ptr = Pointer::typed::<IntSpec>(NS, "latency");
    let started = Instant::now();
    let write = writer.modify(&ptr, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = i, None);
    let seen = async {
        loop {
            let event = watch.next().await.expect("the watch runs");
            let r = event.resource().expect("a resource event");
            if r.typed::<IntSpec>().expect("an IntSpec").spec().0 == i {
                return started.elapsed();
            }
        }
    };
    let (written, seen) = futures::join!(write, seen);
    written.expect("write");
    seen
}

/// How a raw sample writes its key.
#[derive(Clone, Copy)]
enum RawWrite {
    /// A plain put.
    Put,
    /// A transaction shaped like the state's write: a compare on the key's
    /// revision, then the put.
    Txn,
}

/// One raw write to `key`, timed until the raw `watch` (on another client)
/// delivers it.
async fn raw_sample(
    writer: &mut Client,
    watch: &mut etcd_client::WatchStream,
    key: &str,
    value_bytes: usize,
    i: u64,
    how: RawWrite,
) -> Duration {
    let mut value = format!("{i:020}").into_bytes();
    value.resize(value_bytes.max(value.len()), b'x');
    let expected = value.clone();
    let started = Instant::now();
    let write = async {
        match how {
            RawWrite::Put => writer.put(key, value, None).await.map(drop),
            RawWrite::Txn => {
                let txn = Txn::new()
                    .when([Compare::mod_revision(key, CompareOp::Greater, 0)])
                    .and_then([TxnOp::put(key, value, None)]);
                writer.txn(txn).await.map(|r| assert!(r.succeeded(), "the key exists"))
            }
        }
    };
    let seen = async {
        loop {
            let resp = watch.next().await.expect("the watch runs").expect("a watch response");
            if resp.events().iter().any(|e| e.kv().is_some_and(|kv| kv.value() == expected)) {
                return started.elapsed();
            }
        }
    };
    let (written, seen) = futures::join!(write, seen);
    written.expect("raw write");
    seen
}

/// The three watch latencies, `n` samples each, taken in turns (a state
/// write, a raw put, a raw transaction, the order rotating every round), so
/// that a drift of the machine's or etcd's speed lands in all three alike.
async fn watch_latencies(
    etcd: &TestEtcd,
    n: u64,
    value_bytes: usize,
) -> (Vec<Duration>, Vec<Duration>, Vec<Duration>) {
    let writer = open(etcd, "latency").await;
    let reader = open(etcd, "latency").await;
    let kind = Kind::of::<IntSpec>(NS);
    let mut watch = reader
        .watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::default())
        .await
        .expect("watch");
    let mut raw_writer = raw_client(etcd).await;
    let mut raw_reader = raw_client(etcd).await;
    let key = format!("{RAW_PREFIX}latency");
    // The transaction's compare needs the key to exist.
    raw_writer.put(key.as_str(), "", None).await.expect("put");
    let mut raw_watch = raw_reader.watch(key.as_str(), None).await.expect("watch");
    let mut state = Vec::with_capacity(n as usize);
    let mut put = Vec::with_capacity(n as usize);
    let mut txn = Vec::with_capacity(n as usize);
    for i in 1..=n {
        for turn in 0..3 {
            match (turn + i) % 3 {
                0 => state.push(state_sample(&writer, &mut watch, i as i64).await),
                1 => {
                    let d = raw_sample(
                        &mut raw_writer,
                        &mut raw_watch,
                        &key,
                        value_bytes,
                        i,
                        RawWrite::Put,
                    );
                    put.push(d.await)
                }
                _ => {
                    let d = raw_sample(
                        &mut raw_writer,
                        &mut raw_watch,
                        &key,
                        value_bytes,
                        i,
                        RawWrite::Txn,
                    );
                    txn.push(d.await)
                }
            }
        }
    }
    writer.close().await.expect("close");
    reader.close().await.expect("close");
    (state, put, txn)
}

/// The first line of `etcd --version` (the binary [`TestEtcd`] runs).
fn etcd_version() -> String {
    let binary = std::env::var_os("COSI_ETCD").unwrap_or_else(|| "etcd".into());
    std::process::Command::new(binary)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.lines().next().map(str::to_owned))
        .unwrap_or_default()
}

fn watch_latency(mode: &Mode, sys: &SystemRunner, etcd: &TestEtcd, value_bytes: usize) {
    let n = mode.scale(2_000, 20);
    let (state, raw, raw_txn) = sys.block_on(watch_latencies(etcd, n, value_bytes));
    common::write_report(
        mode,
        "etcd",
        &json!({
            "etcd_version": etcd_version(),
            "samples": n,
            "value_bytes": value_bytes,
            "watch_latency": {
                "state": latency_figures(state),
                "raw": latency_figures(raw),
                "raw_txn": latency_figures(raw_txn),
            },
        }),
    );
}

fn main() {
    let mode = Mode::from_args();
    let Some(etcd) = TestEtcd::start() else { return };
    let mut c = mode.criterion();
    let sys = actix::System::new();
    let value_bytes = etcd_writes(&mut c, &sys, &etcd);
    if mode.wants("watch_latency") {
        watch_latency(&mode, &sys, &etcd, value_bytes);
    }
    c.final_summary();
}
