//! State benchmarks, each against a bare-actix baseline run in the same process:
//!
//! - `write_sequential`: one create/update/modify round trip at a time
//!   through the `StateActor`, vs `send().await` to an actor doing a `HashMap` insert.
//! - `write_pipelined_64` / `write_pipelined_1024`: the same with 64 or 1024
//!   requests in flight (`join_all` over windows).
//! - `fanout`: one change delivered to 1,000 subscriber actors (time from the
//!   write until all have handled it), vs `do_send` of one message to 1,000
//!   bare actors.
//! - memory per stored resource (1,000,000 small resources) vs a plain
//!   `BTreeMap<String, spec>`; written to `<target>/bench-report/state.json`.
//!
//! `cargo bench --bench state` measures; `cargo test --benches` runs a scaled
//! down smoke pass that asserts only functional facts.

mod common;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix::SystemRunner;
use actix::prelude::*;
use common::{CountingAlloc, Insert, IntSpec, MapActor, Mode, NS, pipelined};
use cosi_runtime::prelude::*;
use criterion::{Criterion, Throughput};
use serde_json::json;
use tokio::sync::Notify;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn map_actor() -> Addr<MapActor> {
    MapActor::default().start()
}

fn id(k: u64) -> String {
    format!("r{k}")
}

// ---------------------------------------------------------------------------
// Write path

fn write_sequential(c: &mut Criterion, sys: &SystemRunner) {
    let mut g = c.benchmark_group("write_sequential");
    g.throughput(Throughput::Elements(1));

    g.bench_function("bare_actix_insert_new", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let map = map_actor();
                common::quiesce().await;
                let t = Instant::now();
                for k in 0..iters {
                    black_box(map.send(Insert(id(k), k as i64)).await.unwrap());
                }
                t.elapsed()
            })
        });
    });

    g.bench_function("state_create", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let state = State::start();
                common::quiesce().await;
                let t = Instant::now();
                for k in 0..iters {
                    let r = Resource::new(NS, id(k), IntSpec(k as i64));
                    black_box(state.create(r, None).await.unwrap());
                }
                t.elapsed()
            })
        });
    });

    g.bench_function("bare_actix_insert_existing", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let map = map_actor();
                common::quiesce().await;
                map.send(Insert(id(0), 0)).await.unwrap();
                let t = Instant::now();
                for k in 0..iters {
                    black_box(map.send(Insert(id(0), k as i64)).await.unwrap());
                }
                t.elapsed()
            })
        });
    });

    // An update carries the version it read: each round trip sends the
    // resource returned by the previous one with a new spec.
    g.bench_function("state_update", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let state = State::start();
                common::quiesce().await;
                let mut current: Resource<IntSpec> = state
                    .create(Resource::new(NS, id(0), IntSpec(0)), None)
                    .await
                    .unwrap()
                    .typed()
                    .unwrap();
                let t = Instant::now();
                for k in 0..iters {
                    current.spec_mut().0 = k as i64 + 1;
                    let stored = state.update(current, None).await.unwrap();
                    current = stored.typed().unwrap();
                }
                let e = t.elapsed();
                assert_eq!(current.version().get(), iters + 1);
                e
            })
        });
    });

    g.bench_function("state_modify", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let state = State::start();
                common::quiesce().await;
                let ptr = Pointer::typed::<IntSpec>(NS, id(0));
                let t = Instant::now();
                for k in 0..iters {
                    let v = k as i64 + 1;
                    black_box(
                        state
                            .modify(&ptr, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = v, None)
                            .await
                            .unwrap(),
                    );
                }
                t.elapsed()
            })
        });
    });
    g.finish();
}

fn write_pipelined(c: &mut Criterion, sys: &SystemRunner, window: u64) {
    let mut g = c.benchmark_group(format!("write_pipelined_{window}"));
    g.throughput(Throughput::Elements(1));

    g.bench_function("bare_actix_insert_new", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let map = map_actor();
                common::quiesce().await;
                let t = Instant::now();
                pipelined(iters, window, |k| {
                    let send = map.send(Insert(id(k), k as i64));
                    async move {
                        black_box(send.await.unwrap());
                    }
                })
                .await;
                t.elapsed()
            })
        });
    });

    g.bench_function("state_create", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let state = State::start();
                common::quiesce().await;
                let t = Instant::now();
                pipelined(iters, window, |k| {
                    let state = &state;
                    async move {
                        let r = Resource::new(NS, id(k), IntSpec(k as i64));
                        black_box(state.create(r, None).await.unwrap());
                    }
                })
                .await;
                t.elapsed()
            })
        });
    });
    g.finish();
}

// ---------------------------------------------------------------------------
// Fan-out

/// Counts handled messages down; the last one wakes the bench.
struct Subscriber {
    left: Arc<AtomicUsize>,
    done: Arc<Notify>,
}

impl Subscriber {
    fn handled(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.notify_one();
        }
    }
}

impl Actor for Subscriber {
    type Context = Context<Self>;
}

impl Handler<WatchEvent> for Subscriber {
    type Result = ();

    fn handle(&mut self, msg: WatchEvent, _: &mut Context<Self>) {
        black_box(msg.event());
        self.handled();
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Ping(#[allow(dead_code)] u64);

impl Handler<Ping> for Subscriber {
    type Result = ();

    fn handle(&mut self, msg: Ping, _: &mut Context<Self>) {
        black_box(msg);
        self.handled();
    }
}

fn subscribers(n: usize) -> (Vec<Addr<Subscriber>>, Arc<AtomicUsize>, Arc<Notify>) {
    let left = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(Notify::new());
    let subs =
        (0..n).map(|_| Subscriber { left: left.clone(), done: done.clone() }.start()).collect();
    (subs, left, done)
}

fn fanout(c: &mut Criterion, sys: &SystemRunner, n: usize) {
    let mut g = c.benchmark_group("fanout");
    g.throughput(Throughput::Elements(n as u64));

    let (bare, bare_left, bare_done) = sys.block_on(async { subscribers(n) });
    g.bench_function("bare_actix_do_send", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let mut total = Duration::ZERO;
                for k in 0..iters {
                    bare_left.store(n, Ordering::Release);
                    let t = Instant::now();
                    for s in &bare {
                        s.do_send(Ping(k));
                    }
                    bare_done.notified().await;
                    total += t.elapsed();
                }
                total
            })
        });
    });
    drop(bare);

    let (state, hot, subs, left, done) = sys.block_on(async {
        let state = State::start();
        common::quiesce().await;
        let hot = Pointer::typed::<IntSpec>(NS, "hot");
        state.create(Resource::new(NS, "hot", IntSpec(0)), None).await.unwrap();
        let (subs, left, done) = subscribers(n);
        for s in &subs {
            state
                .watch_kind(
                    &Kind::of::<IntSpec>(NS),
                    LabelQuery::all(),
                    false,
                    s.clone().recipient(),
                )
                .await
                .unwrap();
        }
        (state, hot, subs, left, done)
    });
    g.bench_function("state_watch", |b| {
        b.iter_custom(|iters| {
            sys.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    left.store(n, Ordering::Release);
                    let t = Instant::now();
                    let write =
                        state.modify(&hot, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None);
                    let (written, ()) = futures::join!(write, done.notified());
                    total += t.elapsed();
                    written.unwrap();
                }
                total
            })
        });
    });
    g.finish();
    drop((state, subs));
}

// ---------------------------------------------------------------------------
// Memory per stored resource

fn memory(mode: &Mode, sys: &SystemRunner) {
    let n: u64 = mode.scale(1_000_000, 10_000);
    let spec_bytes = std::mem::size_of::<IntSpec>();
    let key = |k: u64| format!("r{k:07}");

    // The state: resources created through the actor, 1024 in flight.
    let (state_bytes, state_peak, state_rss) = sys.block_on(async {
        let state = State::start();
        common::quiesce().await;
        // Warm up: the first resource of the kind creates its collection.
        state.create(Resource::new(NS, "warm", IntSpec(-1)), None).await.unwrap();
        let rss0 = common::rss_bytes();
        let before = common::peak_start();
        pipelined(n, 1024, |k| {
            let state = &state;
            async move {
                let r = Resource::new(NS, key(k), IntSpec(k as i64));
                state.create(r, None).await.unwrap();
            }
        })
        .await;
        let after = common::heap_now();
        let peak = common::peak_stop();
        let rss1 = common::rss_bytes();
        let listed =
            state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap().len() as u64;
        assert_eq!(listed, n + 1, "every resource is stored");
        (after - before, peak - before, rss1.saturating_sub(rss0) as i64)
    });

    // Baseline: the same ids and specs in a plain sorted map.
    let rss0 = common::rss_bytes();
    let before = common::heap_now();
    let mut map = BTreeMap::new();
    for k in 0..n {
        map.insert(key(k), IntSpec(k as i64));
    }
    let base_bytes = common::heap_now() - before;
    let base_rss = common::rss_bytes().saturating_sub(rss0) as i64;
    assert_eq!(map.len() as u64, n);
    drop(map);

    let per = state_bytes as f64 / n as f64;
    let base_per = base_bytes as f64 / n as f64;
    let report = json!({
        "quick": !mode.full,
        "resources": n,
        "id_bytes": key(0).len(),
        "spec_bytes": spec_bytes,
        "state": {
            "heap_bytes": state_bytes,
            "heap_peak_bytes": state_peak,
            "rss_bytes": state_rss,
            "bytes_per_resource": per,
            "overhead_per_resource": per - spec_bytes as f64,
        },
        "baseline_btreemap": {
            "heap_bytes": base_bytes,
            "rss_bytes": base_rss,
            "bytes_per_resource": base_per,
            "overhead_per_resource": base_per - spec_bytes as f64,
        },
        "sizes": {
            "Metadata": std::mem::size_of::<Metadata>(),
            "Pointer": std::mem::size_of::<Pointer>(),
            "AnyResource": std::mem::size_of::<AnyResource>(),
            "Resource<IntSpec>": std::mem::size_of::<Resource<IntSpec>>(),
        },
    });
    common::write_report(mode, "memory", &report);
}

fn main() {
    let mode = Mode::from_args();
    let mut c = mode.criterion();
    let sys = actix::System::new();

    write_sequential(&mut c, &sys);
    for window in [64, 1024] {
        write_pipelined(&mut c, &sys, window);
    }
    fanout(&mut c, &sys, mode.scale(1000, 100));
    if mode.wants("memory") {
        memory(&mode, &sys);
    }
    c.final_summary();
}
