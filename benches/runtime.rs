//! Runtime benchmarks, each with its baseline run in the same process:
//!
//! - `chain`: N = 10,000 integers through two plain controllers (integer →
//!   string → sentence) until settled, vs the same reads and writes as bare
//!   actix round trips (`bare_actix`: its integers in its table before the
//!   clock starts; `bare_actix_live`: created by round trips after it starts,
//!   as the `*_live` variants create theirs). `chain_1000` and
//!   `chain_100000`: the `live` and `queue_live` variants (clock from the
//!   first create) at the other sizes.
//!   The peer is `benches/kube-peer`, the same scenario on kube-runtime, which
//!   `scripts/benchmarks.sh` runs in the same invocation.
//! - `latency` (outside criterion): one queue controller, integers created one
//!   at a time, each timed from its create to the watch event of its string;
//!   p50 and p99 of 1,000. `chain_peak`: peak heap growth of one run of each
//!   live variant at N = 100,000. The peer measures both the same way.
//! - `coalescing`: 100,000 updates to the input of a controller whose
//!   reconcile is blocked on a gate: time, reconciles triggered, peak memory;
//!   vs the same burst with nobody watching, and vs a 2,048-update burst (one
//!   that fills the state's history too) for the memory.
//! - `supervisor`: time from a panic to the fresh instance's first reconcile
//!   with a 1 ms backoff (jitter 0), vs a bare actix `run_later(1 ms)`.
//!
//! Counts and memory go to `<target>/bench-report/runtime.json`.
//! `COSI_BENCH_PROFILE=<variant>:<n>` (`queue_live`, `live`, …, `bare_actix`
//! or `bare_actix_live`)
//! runs one chain of size n and nothing else, for callgrind
//! (`scripts/instructions.py`).
//! `cargo test --benches` runs a scaled-down smoke pass.

mod common;

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::SystemRunner;
use actix::prelude::*;
use common::{
    CountingAlloc, IntSpec, Mode, NS, SentenceSpec, StrSpec, pipelined, q_int_to_str,
    q_str_to_sentence,
};
use cosi_runtime::controller::ControllerMetrics;
use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchOptions;
use cosi_runtime::supervisor::Backoff;
use criterion::{Criterion, SamplingMode, Throughput};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::{mpsc, watch};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The payload of the panics the supervisor bench causes on purpose (the
/// panic hook keeps them off stderr).
const INTENTIONAL: &str = "cosi-bench: intentional panic";

// ---------------------------------------------------------------------------
// Chain: integer → string → sentence

/// A lean transform controller (no finalizers): a weak input on `I`, an
/// exclusive output `O`; each reconcile lists every `I` and `modify`s the `O`
/// with the same id. With `window > 1` the modifies of one reconcile go out
/// `window` at a time (`join_all`); otherwise one after the other. With
/// `skip_unchanged` it also lists the outputs and skips the `modify` of those
/// already right (a no-op `modify` writes nothing but still costs a round trip).
struct Level<I, O> {
    name: &'static str,
    map: fn(&I) -> O,
    tuning: Tuning,
    /// With `tuning.remember`: what this instance last wrote, by id (its
    /// outputs are exclusive, so nobody else changes them; a fresh instance
    /// after a restart starts empty and rewrites everything once).
    written: HashMap<String, O>,
    _types: PhantomData<fn() -> (I, O)>,
}

#[derive(Clone, Copy, Debug)]
struct Tuning {
    window: usize,
    skip_unchanged: bool,
    remember: bool,
}

const PLAIN: Tuning = Tuning { window: 1, skip_unchanged: false, remember: false };

impl<I: Spec, O: Spec + Default> Controller for Level<I, O> {
    fn name(&self) -> &str {
        self.name
    }

    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<I>(NS)]
    }

    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<O>()]
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let cx: &ReconcileContext = cx;
        let all = LabelQuery::all();
        // `list` + `spec_ref` read every spec in place (no per-item copy).
        let listed = cx.list(&Kind::of::<I>(NS), &all).await?;
        let mut inputs: Vec<(&str, &I)> =
            listed.iter().filter_map(|r| Some((r.id(), r.spec_ref::<I>()?))).collect();
        if self.tuning.skip_unchanged {
            let outputs = cx.list(&Kind::of::<O>(NS), &all).await?;
            let current: HashMap<&str, &O> =
                outputs.iter().filter_map(|o| Some((o.id(), o.spec_ref::<O>()?))).collect();
            inputs.retain(|(id, i)| current.get(id).is_none_or(|o| **o != (self.map)(i)));
        }
        let modify = |(id, input): &(&str, &I)| {
            let value = (self.map)(input);
            let output = Pointer::typed::<O>(NS, *id);
            async move {
                cx.modify(&output, move |o: &mut Resource<O>| *o.spec_mut() = value.clone()).await
            }
        };
        if self.tuning.remember {
            for (id, input) in &inputs {
                let value = (self.map)(input);
                if self.written.get(*id) == Some(&value) {
                    continue;
                }
                let kept = value.clone();
                cx.modify(&Pointer::typed::<O>(NS, *id), move |o: &mut Resource<O>| {
                    *o.spec_mut() = value.clone()
                })
                .await?;
                self.written.insert((*id).to_owned(), kept);
            }
        } else if self.tuning.window <= 1 {
            for input in &inputs {
                modify(input).await?;
            }
        } else {
            for chunk in inputs.chunks(self.tuning.window) {
                for r in futures::future::join_all(chunk.iter().map(modify)).await {
                    r?;
                }
            }
        }
        Ok(())
    }
}

fn int_to_str(tuning: Tuning) -> Level<IntSpec, StrSpec> {
    Level {
        name: "IntToStr",
        map: |i| StrSpec(i.0.to_string()),
        tuning,
        written: HashMap::new(),
        _types: PhantomData,
    }
}

fn str_to_sentence(tuning: Tuning) -> Level<StrSpec, SentenceSpec> {
    Level {
        name: "StrToSentence",
        map: |s| SentenceSpec(format!("{} sentence", s.0)),
        tuning,
        written: HashMap::new(),
        _types: PhantomData,
    }
}

#[derive(Clone, Copy, Debug)]
struct ChainVariant {
    /// Per-object queue controllers instead of list-everything controllers.
    queue: bool,
    /// The integers exist before the controllers are registered; the clock
    /// runs from registration until settled. Otherwise the controllers run
    /// first and the clock runs from the first create (1024 in flight) until
    /// settled.
    preloaded: bool,
    tuning: Tuning,
}

struct ChainRun {
    elapsed: Duration,
    metrics: Vec<ControllerMetrics>,
    /// With `track_peak`: the peak live heap over the heap before the runtime
    /// started, up to settled (before the final check lists the sentences).
    peak_growth: Option<isize>,
}

async fn create_ints(state: &State, n: u64) {
    pipelined(n, 1024, |k| async move {
        state.create(Resource::new(NS, format!("n{k}"), IntSpec(k as i64)), None).await.unwrap();
    })
    .await;
}

/// Asserts that all `n` sentences are there and right.
async fn check_sentences(state: &State, n: u64) {
    let sentences = state.list_typed::<SentenceSpec>(NS, &LabelQuery::all()).await.unwrap();
    assert_eq!(sentences.len() as u64, n, "every integer reached a sentence");
    for s in &sentences {
        let k = &s.id()[1..];
        assert_eq!(s.spec().0, format!("{k} sentence"));
    }
}

async fn chain_run(n: u64, variant: ChainVariant) -> ChainRun {
    chain_run_tracked(n, variant, false).await
}

async fn chain_run_tracked(n: u64, variant: ChainVariant, track_peak: bool) -> ChainRun {
    let heap0 = if track_peak {
        // Whatever a previous run left is dropped first, so it frees nothing in here.
        common::quiesce().await;
        common::peak_start()
    } else {
        common::heap_now()
    };
    let runtime = Runtime::start();
    let state = runtime.state();
    let tuning = variant.tuning;
    let queue = variant.queue;
    let register = || async {
        if queue {
            runtime.register(q_int_to_str).await.unwrap();
            runtime.register(q_str_to_sentence).await.unwrap();
        } else {
            runtime.register(move || int_to_str(tuning)).await.unwrap();
            runtime.register(move || str_to_sentence(tuning)).await.unwrap();
        }
    };
    let t = if variant.preloaded {
        create_ints(&state, n).await;
        runtime.settled().await;
        let t = Instant::now();
        register().await;
        t
    } else {
        register().await;
        runtime.settled().await;
        let t = Instant::now();
        create_ints(&state, n).await;
        t
    };
    runtime.settled().await;
    let elapsed = t.elapsed();
    let peak_growth = track_peak.then(|| common::peak_stop() - heap0);
    check_sentences(&state, n).await;
    let metrics = runtime.metrics().await;
    runtime.stop().await;
    ChainRun { elapsed, metrics, peak_growth }
}

// The bare-actix baseline: one actor holding the three tables; one task
// lists the integers, writes each string (a `send().await` per object), then
// lists the strings and writes each sentence. The same reads and writes as
// the controllers, without events, access checks or versions.

#[derive(Default)]
struct Tables {
    ints: HashMap<String, i64>,
    strs: HashMap<String, String>,
    sentences: HashMap<String, String>,
}

impl Actor for Tables {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(0);
    }
}

#[derive(Message)]
#[rtype(result = "Vec<(String, i64)>")]
struct ListInts;

#[derive(Message)]
#[rtype(result = "()")]
struct PutInt(String, i64);

#[derive(Message)]
#[rtype(result = "Vec<(String, String)>")]
struct ListStrs;

#[derive(Message)]
#[rtype(result = "()")]
struct PutStr(String, String);

#[derive(Message)]
#[rtype(result = "()")]
struct PutSentence(String, String);

#[derive(Message)]
#[rtype(result = "usize")]
struct CountSentences;

impl Handler<ListInts> for Tables {
    type Result = MessageResult<ListInts>;
    fn handle(&mut self, _: ListInts, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.ints.iter().map(|(k, v)| (k.clone(), *v)).collect())
    }
}

impl Handler<ListStrs> for Tables {
    type Result = MessageResult<ListStrs>;
    fn handle(&mut self, _: ListStrs, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.strs.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

impl Handler<PutInt> for Tables {
    type Result = ();
    fn handle(&mut self, PutInt(k, v): PutInt, _: &mut Context<Self>) {
        self.ints.insert(k, v);
    }
}

impl Handler<PutStr> for Tables {
    type Result = ();
    fn handle(&mut self, PutStr(k, v): PutStr, _: &mut Context<Self>) {
        self.strs.insert(k, v);
    }
}

impl Handler<PutSentence> for Tables {
    type Result = ();
    fn handle(&mut self, PutSentence(k, v): PutSentence, _: &mut Context<Self>) {
        self.sentences.insert(k, v);
    }
}

impl Handler<CountSentences> for Tables {
    type Result = usize;
    fn handle(&mut self, _: CountSentences, _: &mut Context<Self>) -> usize {
        self.sentences.len()
    }
}

async fn chain_bare(n: u64) -> Duration {
    let tables =
        Tables { ints: (0..n).map(|k| (format!("n{k}"), k as i64)).collect(), ..Tables::default() }
            .start();
    let t = Instant::now();
    chain_bare_from(&tables, t, n).await
}

/// The bare chain with its integers created live, as the `*_live` variants
/// create theirs: the clock starts before the first create, and the creates
/// go as round trips, 1,024 in flight (`pipelined`, as `create_ints`).
async fn chain_bare_live(n: u64) -> Duration {
    let tables = Tables::default().start();
    let t = Instant::now();
    pipelined(n, 1024, |k| {
        let tables = &tables;
        async move { tables.send(PutInt(format!("n{k}"), k as i64)).await.unwrap() }
    })
    .await;
    chain_bare_from(&tables, t, n).await
}

/// The two levels of the bare chain over the `n` integers in `tables`; the
/// time since `t` when they are done (then checked, off the clock).
async fn chain_bare_from(tables: &Addr<Tables>, t: Instant, n: u64) -> Duration {
    for (id, v) in tables.send(ListInts).await.unwrap() {
        tables.send(PutStr(id, v.to_string())).await.unwrap();
    }
    for (id, s) in tables.send(ListStrs).await.unwrap() {
        tables.send(PutSentence(id, format!("{s} sentence"))).await.unwrap();
    }
    let elapsed = t.elapsed();
    assert_eq!(tables.send(CountSentences).await.unwrap() as u64, n);
    elapsed
}

const CHAIN_VARIANTS: [(&str, ChainVariant); 7] = [
    ("preloaded", ChainVariant { queue: false, preloaded: true, tuning: PLAIN }),
    (
        "preloaded_join_all_64",
        ChainVariant {
            queue: false,
            preloaded: true,
            tuning: Tuning { window: 64, skip_unchanged: false, remember: false },
        },
    ),
    (
        "preloaded_skip_unchanged",
        ChainVariant {
            queue: false,
            preloaded: true,
            tuning: Tuning { window: 1, skip_unchanged: true, remember: false },
        },
    ),
    (
        "preloaded_remember_writes",
        ChainVariant {
            queue: false,
            preloaded: true,
            tuning: Tuning { window: 1, skip_unchanged: false, remember: true },
        },
    ),
    ("live", ChainVariant { queue: false, preloaded: false, tuning: PLAIN }),
    ("queue_preloaded", ChainVariant { queue: true, preloaded: true, tuning: PLAIN }),
    ("queue_live", ChainVariant { queue: true, preloaded: false, tuning: PLAIN }),
];

/// The variants measured at the other sizes: the two whose clock starts at the
/// first create, as the kube-runtime peer's does (`benches/kube-peer`).
const LIVE_VARIANTS: [(&str, ChainVariant); 2] = [
    ("live", ChainVariant { queue: false, preloaded: false, tuning: PLAIN }),
    ("queue_live", ChainVariant { queue: true, preloaded: false, tuning: PLAIN }),
];

/// The criterion group `group` (bare actix, then `variants`) at size `n`, and
/// one probe run per variant for the counts.
fn chain(
    c: &mut Criterion,
    sys: &SystemRunner,
    mode: &Mode,
    group: &str,
    n: u64,
    variants: &[(&str, ChainVariant)],
) -> serde_json::Value {
    let mut g = c.benchmark_group(group);
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(2 * n));

    g.bench_function("bare_actix", |b| {
        b.iter_custom(|iters| common::iter_async(sys, iters, || chain_bare(n)));
    });
    if variants.iter().any(|(_, v)| !v.preloaded) {
        g.bench_function("bare_actix_live", |b| {
            b.iter_custom(|iters| common::iter_async(sys, iters, || chain_bare_live(n)));
        });
    }

    let mut probes = serde_json::Map::new();
    for &(name, variant) in variants {
        if mode.wants(group) {
            // One run outside criterion for the counts (and a sanity check).
            let run = sys.block_on(chain_run(n, variant));
            let per_controller: Vec<_> = run
                .metrics
                .iter()
                .map(|m| {
                    json!({
                        "controller": m.controller,
                        "reconcile_calls": m.reconciles,
                        "wakeups": m.wakeups,
                        "reads": m.reads,
                        "writes": m.writes,
                    })
                })
                .collect();
            probes.insert(
                name.to_owned(),
                json!({
                    "probe_elapsed_ns": common::ns(run.elapsed),
                    "controllers": per_controller,
                }),
            );
        }
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                sys.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += chain_run(n, variant).await.elapsed;
                    }
                    total
                })
            });
        });
    }
    g.finish();
    // The per-object target's ratio to its floor, from runs taken in turns
    // (see `common::paired`): `queue_live` against `bare_actix_live`.
    let queue_live = variants.iter().find(|(name, _)| *name == "queue_live");
    let paired = queue_live.filter(|_| mode.wants(group)).map(|&(_, variant)| {
        let rounds = if n >= 100_000 { 10 } else { 20 };
        common::paired(
            sys,
            rounds,
            || chain_bare_live(n),
            || async move { chain_run(n, variant).await.elapsed },
        )
    });
    json!({
        "n": n,
        "objects_processed": 2 * n,
        "variants": probes,
        "paired_queue_live_bare_live": paired,
        "controller": "Level<I, O>: weak input, exclusive output, no finalizers; lists all inputs (cx.list + spec_ref), cx.modify per output",
    })
}

// ---------------------------------------------------------------------------
// Single-object latency and peak memory (`benches/kube-peer` measures the same
// on kube-runtime)

/// One queue controller (integer → string) on `runtime`; `warmup + samples`
/// integers created one at a time, each timed from its create to the watch
/// event of its string.
async fn latency_run(runtime: Runtime, warmup: u64, samples: u64) -> Vec<Duration> {
    let state = runtime.state();
    runtime.register(q_int_to_str).await.unwrap();
    runtime.settled().await;
    let mut events = state
        .watch_kind_stream(&Kind::of::<StrSpec>(NS), LabelQuery::all(), &WatchOptions::default())
        .await
        .unwrap();
    let mut times = Vec::with_capacity(samples as usize);
    for k in 0..warmup + samples {
        let id = format!("n{k}");
        let t = Instant::now();
        state.create(Resource::new(NS, id.clone(), IntSpec(k as i64)), None).await.unwrap();
        loop {
            match events.next().await.expect("the watch goes on") {
                Event::Created(r) if r.id() == id => break,
                _ => {}
            }
        }
        if k >= warmup {
            times.push(t.elapsed());
        }
    }
    drop(events);
    runtime.settled().await;
    let m = runtime.metrics().await;
    assert_eq!(m[0].reconciles, warmup + samples, "one reconcile per object");
    // Closes the state it opened (the redb file is released).
    runtime.stop().await;
    times
}

/// What the disk alone gives: `samples` raw redb write transactions of one
/// `record`-byte value each (immediate durability: one fsync), each timed.
fn raw_commit_times(file: &std::path::Path, samples: u64, record: usize) -> Vec<Duration> {
    const RAW: redb::TableDefinition<'_, &str, &[u8]> = redb::TableDefinition::new("raw");
    let db = redb::Database::create(file).expect("raw redb");
    let value = vec![7u8; record];
    (0..samples + samples / 10)
        .map(|k| {
            let started = Instant::now();
            let txn = db.begin_write().expect("txn");
            {
                let mut t = txn.open_table(RAW).expect("table");
                let key = format!("default\0Ints.bench.cosi.dev\0n{k}");
                t.insert(key.as_str(), value.as_slice()).expect("insert");
            }
            txn.commit().expect("commit");
            started.elapsed()
        })
        .skip((samples / 10) as usize)
        .collect()
}

/// Single-object latency with the state in memory and with its namespace in
/// a redb file (two commits per sample: the integer's and the string's),
/// and beside them one raw redb transaction of one write (one fsync).
fn latency(sys: &SystemRunner, mode: &Mode) -> serde_json::Value {
    let samples: u64 = mode.scale(1_000, 20);
    let warmup = samples / 10;
    if !mode.wants("latency") {
        return json!({});
    }
    // One whole run first, discarded (the peer does the same): a process's
    // first run grows its heap, and each page it touches first is a fault in
    // the kernel, which inflates the first run's tail. A long-running
    // controller sees the later runs, so those are what is reported.
    sys.block_on(async { latency_run(Runtime::start(), warmup, samples).await });
    let mut memory = sys.block_on(async { latency_run(Runtime::start(), warmup, samples).await });
    let dir = cosi_runtime::testing::conformance::ScratchDir::new();
    let file = dir.path().join("latency.redb");
    let mut redb = sys.block_on(async {
        let runtime = Runtime::builder().open_durable(&file, [NS]).await.expect("open");
        latency_run(runtime, warmup, samples).await
    });
    // A record of the size the state stores for one of these resources.
    let record = {
        let db = redb::ReadOnlyDatabase::open(&file).expect("reopen read-only");
        let read = redb::ReadableDatabase::begin_read(&db).expect("read");
        let table = read
            .open_table(redb::TableDefinition::<&str, &[u8]>::new("cosi.resources"))
            .expect("table");
        let (mut n, mut bytes) = (0usize, 0usize);
        for item in redb::ReadableTable::iter(&table).expect("iter") {
            bytes += item.expect("item").1.value().len();
            n += 1;
        }
        bytes / n.max(1)
    };
    let mut raw = raw_commit_times(&dir.path().join("raw.redb"), samples, record);
    let mut report = common::percentiles(&mut memory);
    let map = report.as_object_mut().expect("an object");
    map.insert("samples".into(), json!(samples));
    map.insert("warmup".into(), json!(warmup));
    map.insert(
        "controller".into(),
        json!("QLevel IntToStr: a queue controller (concurrency 16), get_typed + modify"),
    );
    map.insert("redb".into(), common::percentiles(&mut redb));
    let mut raw_report = common::percentiles(&mut raw);
    raw_report["record_bytes"] = json!(record);
    map.insert("raw_redb_commit".into(), raw_report);
    report
}

/// Peak live heap growth over one run of each live variant at `n`.
fn chain_peak(sys: &SystemRunner, mode: &Mode, n: u64) -> serde_json::Value {
    let mut variants = serde_json::Map::new();
    if mode.wants("chain_peak") {
        for (name, variant) in LIVE_VARIANTS {
            let run = sys.block_on(chain_run_tracked(n, variant, true));
            variants.insert(
                name.to_owned(),
                json!({
                    "peak_heap_growth_bytes": run.peak_growth,
                    "probe_elapsed_ns": common::ns(run.elapsed),
                }),
            );
        }
    }
    json!({ "n": n, "variants": variants })
}

// ---------------------------------------------------------------------------
// Coalescing

/// A controller whose reconcile waits for the gate, then reads the input.
struct Busy {
    gate: watch::Receiver<bool>,
    last_seen: Arc<AtomicI64>,
}

impl Controller for Busy {
    fn name(&self) -> &str {
        "Busy"
    }

    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }

    fn outputs(&self) -> Vec<Output> {
        vec![]
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        self.gate.wait_for(|open| *open).await?;
        if let Ok(r) = cx.get_typed::<IntSpec>(&Pointer::typed::<IntSpec>(NS, "hot")).await {
            self.last_seen.store(r.spec().0, Ordering::SeqCst);
        }
        Ok(())
    }
}

#[derive(Debug)]
struct BurstRun {
    elapsed: Duration,
    /// Reconciles that ran because of the burst (`None` without a controller).
    reconciles: Option<u64>,
    wakeups: Option<u64>,
    /// Heap growth at the peak of the burst, over the heap before it.
    peak_growth: isize,
    /// Heap growth left once the burst settled.
    retained: isize,
}

/// `updates` sequential `modify`s of one input; with `busy`, a controller
/// watches it and its reconcile is blocked for the whole burst.
async fn burst(updates: i64, busy: bool) -> BurstRun {
    let runtime = Runtime::start();
    let state = runtime.state();
    let hot = Pointer::typed::<IntSpec>(NS, "hot");
    state.create(Resource::new(NS, "hot", IntSpec(0)), None).await.unwrap();
    let (open, gate) = watch::channel(true);
    let last_seen = Arc::new(AtomicI64::new(-1));
    if busy {
        let seen = last_seen.clone();
        runtime
            .register(move || Busy { gate: gate.clone(), last_seen: seen.clone() })
            .await
            .unwrap();
    }
    runtime.settled().await;
    let before = runtime.metrics().await;

    open.send_replace(false);
    let heap0 = common::peak_start();
    let t = Instant::now();
    for k in 1..=updates {
        state
            .modify(&hot, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = k, None)
            .await
            .unwrap();
    }
    let elapsed = t.elapsed();
    let peak = common::peak_stop();
    open.send_replace(true);
    runtime.settled().await;
    let retained = common::heap_now() - heap0;
    let after = runtime.metrics().await;
    runtime.stop().await;

    let (reconciles, wakeups) = match (before.first(), after.first()) {
        (Some(b), Some(a)) => {
            assert_eq!(
                last_seen.load(Ordering::SeqCst),
                updates,
                "the last reconcile saw the last update"
            );
            (Some(a.reconciles - b.reconciles), Some(a.wakeups - b.wakeups))
        }
        _ => (None, None),
    };
    BurstRun { elapsed, reconciles, wakeups, peak_growth: peak - heap0, retained }
}

fn coalescing(c: &mut Criterion, sys: &SystemRunner, mode: &Mode) -> serde_json::Value {
    let updates: i64 = mode.scale(100_000, 1_000);
    // The small run fills the state's history too (it keeps the last
    // `DEFAULT_HISTORY` changes), so the two runs differ by the updates alone.
    let small: i64 = mode.scale(2 * cosi_runtime::state::DEFAULT_HISTORY as i64, 100);

    let mut report = json!({ "updates": updates, "small_updates": small });
    if mode.wants("coalescing") {
        let big = sys.block_on(burst(updates, true));
        let little = sys.block_on(burst(small, true));
        let idle = sys.block_on(burst(updates, false));
        let reconciles = big.reconciles.unwrap_or(0);
        assert!(
            reconciles <= 2,
            "{updates} updates during one blocked reconcile caused {reconciles} reconciles"
        );
        let show = |r: &BurstRun| {
            json!({
                "probe_elapsed_ns": common::ns(r.elapsed),
                "reconciles": r.reconciles,
                "wakeups": r.wakeups,
                "peak_heap_growth_bytes": r.peak_growth,
                "retained_heap_bytes": r.retained,
            })
        };
        report["busy"] = show(&big);
        report["busy_small"] = show(&little);
        report["no_subscriber"] = show(&idle);
    }

    let mut g = c.benchmark_group("coalescing");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(updates as u64));
    for (name, busy) in [("no_subscriber", false), ("busy_controller", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                sys.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += burst(updates, busy).await.elapsed;
                    }
                    total
                })
            });
        });
    }
    g.finish();
    report
}

// ---------------------------------------------------------------------------
// Supervisor: panic → fresh instance's first reconcile

struct Probe {
    panic_next: AtomicBool,
    panicked_at: Mutex<Option<Instant>>,
    restarted: mpsc::UnboundedSender<Duration>,
}

/// Panics when told to; a fresh instance reports the time since that panic
/// at the start of its first reconcile.
struct Phoenix {
    probe: Arc<Probe>,
    fresh: bool,
}

impl Controller for Phoenix {
    fn name(&self) -> &str {
        "Phoenix"
    }

    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }

    fn outputs(&self) -> Vec<Output> {
        vec![]
    }

    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        if std::mem::take(&mut self.fresh) {
            let at = self.probe.panicked_at.lock().unwrap().take();
            if let Some(at) = at {
                let _ = self.probe.restarted.send(at.elapsed());
            }
        }
        if self.probe.panic_next.swap(false, Ordering::SeqCst) {
            *self.probe.panicked_at.lock().unwrap() = Some(Instant::now());
            std::panic::panic_any(INTENTIONAL);
        }
        Ok(())
    }
}

/// The configured backoffs: the 1 ms the scenario asks for, and zero, which
/// takes the timer wheel's millisecond granularity out of the figure.
const BACKOFFS: [(&str, Duration); 2] =
    [("1ms", Duration::from_millis(1)), ("0ms", Duration::ZERO)];

/// `iters` panics and restarts; the sum of panic → first reconcile times.
async fn restarts(iters: u64, backoff: Duration) -> Duration {
    let runtime = Runtime::builder()
        .backoff(Backoff { initial: backoff, max: backoff, multiplier: 1.0, jitter: 0.0 })
        .start();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let probe = Arc::new(Probe {
        panic_next: AtomicBool::new(false),
        panicked_at: Mutex::new(None),
        restarted: tx,
    });
    let p = probe.clone();
    runtime.register(move || Phoenix { probe: p.clone(), fresh: true }).await.unwrap();
    runtime.settled().await;
    let state = runtime.state();
    let trigger = Pointer::typed::<IntSpec>(NS, "trigger");
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        probe.panic_next.store(true, Ordering::SeqCst);
        state
            .modify(&trigger, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None)
            .await
            .unwrap();
        total += rx.recv().await.expect("the fresh instance reports");
    }
    runtime.settled().await;
    let m = runtime.metrics().await;
    assert_eq!(m[0].panics, iters, "every trigger panicked once");
    runtime.stop().await;
    total
}

/// The baseline: a bare actix actor arms `run_later(delay)`; the time from
/// arming until the callback runs.
struct Timer {
    delay: Duration,
    fired: mpsc::UnboundedSender<Duration>,
}

impl Actor for Timer {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Arm;

impl Handler<Arm> for Timer {
    type Result = ();

    fn handle(&mut self, _: Arm, ctx: &mut Context<Self>) {
        let at = Instant::now();
        ctx.run_later(self.delay, move |act, _| {
            let _ = act.fired.send(at.elapsed());
        });
    }
}

fn supervisor(c: &mut Criterion, sys: &SystemRunner) -> serde_json::Value {
    let mut g = c.benchmark_group("supervisor");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    for (label, delay) in BACKOFFS {
        g.bench_function(format!("bare_actix_run_later_{label}"), |b| {
            b.iter_custom(|iters| {
                sys.block_on(async {
                    let (tx, mut rx) = mpsc::unbounded_channel();
                    let timer = Timer { delay, fired: tx }.start();
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        timer.do_send(Arm);
                        total += rx.recv().await.unwrap();
                    }
                    total
                })
            });
        });
        g.bench_function(format!("panic_to_first_reconcile_{label}"), |b| {
            b.iter_custom(|iters| sys.block_on(restarts(iters, delay)));
        });
    }
    g.finish();
    let backoffs: serde_json::Map<_, _> = BACKOFFS
        .iter()
        .map(|(label, d)| {
            (
                (*label).to_owned(),
                json!({ "initial_ns": common::ns(*d), "max_ns": common::ns(*d), "multiplier": 1.0, "jitter": 0.0 }),
            )
        })
        .collect();
    json!({ "backoffs": backoffs })
}

/// One run of a chain scenario at size `n` (see [`common::profile_request`]):
/// `queue_live` and `live` as the criterion groups run them, `bare_actix` the
/// baseline (its tables filled inside the run, as the others create theirs),
/// `bare_actix_live` the baseline whose integers are created by round trips.
fn profile(scenario: &str, n: u64) {
    let sys = actix::System::new();
    let elapsed = match scenario {
        "bare_actix" => sys.block_on(chain_bare(n)),
        "bare_actix_live" => sys.block_on(chain_bare_live(n)),
        _ => {
            let Some(&(_, variant)) = CHAIN_VARIANTS.iter().find(|(name, _)| *name == scenario)
            else {
                panic!(
                    "COSI_BENCH_PROFILE: no chain variant {scenario:?} (bare_actix, bare_actix_live, or one of {:?})",
                    CHAIN_VARIANTS.map(|(name, _)| name)
                );
            };
            sys.block_on(chain_run(n, variant)).elapsed
        }
    };
    println!("{scenario} at N = {n}: {elapsed:?}");
}

fn main() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&INTENTIONAL) {
            default_hook(info);
        }
    }));

    if let Some((scenario, n)) = common::profile_request() {
        profile(&scenario, n);
        return;
    }
    let mode = Mode::from_args();
    let mut c = mode.criterion();
    let sys = actix::System::new();

    let chain_10k = chain(&mut c, &sys, &mode, "chain", mode.scale(10_000, 300), &CHAIN_VARIANTS);
    let mut chain_sizes = serde_json::Map::new();
    for (size, quick) in [(1_000, 50), (100_000, 200)] {
        let n = mode.scale(size, quick);
        let report = chain(&mut c, &sys, &mode, &format!("chain_{size}"), n, &LIVE_VARIANTS);
        chain_sizes.insert(size.to_string(), report);
    }
    let latency = latency(&sys, &mode);
    let peak = chain_peak(&sys, &mode, mode.scale(100_000, 200));
    let coalescing = coalescing(&mut c, &sys, &mode);
    let supervisor = supervisor(&mut c, &sys);
    if !mode.list {
        let report = json!({
            "quick": !mode.full,
            "chain": chain_10k,
            "chain_sizes": chain_sizes,
            "latency": latency,
            "chain_peak": peak,
            "coalescing": coalescing,
            "supervisor": supervisor,
        });
        common::write_report(&mode, "runtime", &report);
    }
    c.final_summary();
}
