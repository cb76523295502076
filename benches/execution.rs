//! Execution benchmarks (arbiters, blocking reconciles, fairness), each
//! against its own baseline in the same process:
//!
//! - `execution_cpu`: 4 queue controllers × 200 objects, each reconcile
//!   ~1 ms of hashing (calibrated at start), 16 in flight per controller
//!   (a worker pool of 64): the time from registration to
//!   settled on a single arbiter (`single`) and with the controllers spread
//!   over the controller arbiters (`spread`, one per core); the baseline: the
//!   same hashing on one bare thread and on one bare thread per core (the
//!   speed-up the machine itself offers in this run).
//! - `execution_chain`: the chain (integer → string → sentence, N = 10,000,
//!   list-everything controllers, creates 1024 in flight, clock from the
//!   first create to settled) on a single arbiter (`single`), with the
//!   default placement (`default`), spread over the arbiters (`spread`), and
//!   both controllers on one arbiter off the state's thread (`paired`).
//! - `execution_per_object`: the per-object chain of `benches/runtime.rs`
//!   (queue controllers, 16 in flight, N = 10,000, created live) with the
//!   default placement (`default`) and spread (`spread`).
//! - `execution_hot_key` : a queue controller with a hot key that requeues
//!   itself at zero delay: the time for 1,000 ordinary keys to drain
//!   (`with_hot_key`) vs the same without the hot key (`without_hot_key`).
//! - `blocking_latency` (outside criterion): the create-to-output latency of
//!   a light queue controller (p50, p99 of 500, 1 ms apart plus a phase
//!   spread over the blocker's cycle) alone, next to a controller that blocks
//!   its thread for 2 ms per reconcile on the arbiter, and next to the same
//!   controller on the blocking pool (`execution::Blocking`); the three cases
//!   in turns, 5 rounds of 100 samples.
//!
//! `execution_cpu` and `execution_per_object` also run their two placements
//! in turns, outside criterion (`common::paired`): the ratio their targets are
//! checked against, free of the machine's drift between criterion's blocks.
//!
//! Figures go to `<target>/bench-report/execution.json`.
//! `cargo test --benches` runs a scaled-down smoke pass.

mod common;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use actix::SystemRunner;
use common::{CountingAlloc, IntSpec, Mode, NS, SentenceSpec, StrSpec, iter_async, pipelined};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::execution::{Blocking, Placement};
use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchOptions;
use criterion::{Criterion, SamplingMode, Throughput};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::watch;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// How a bench runtime places its controllers.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// `arbiters(1)`: everything on the home arbiter.
    Single,
    /// `Runtime::start()`'s defaults.
    Default,
    /// One per core, `Placement::Spread`.
    Spread,
    /// One per core, every controller on controller arbiter 0.
    Paired,
}

impl Layout {
    fn builder(self) -> cosi_runtime::RuntimeBuilder {
        match self {
            Layout::Single => Runtime::builder().arbiters(1),
            Layout::Default => Runtime::builder(),
            Layout::Spread => Runtime::builder().placement(Placement::Spread),
            Layout::Paired => Runtime::builder().placement(Placement::Arbiter(0)),
        }
    }

    fn runtime(self) -> Runtime {
        self.builder().start()
    }
}

// ---------------------------------------------------------------------------
// CPU-bound reconciles

/// Hashes `rounds` times over a value: the CPU work of one reconcile.
fn work(seed: u64, rounds: u64) -> u64 {
    let mut h = seed;
    for i in 0..rounds {
        let mut hasher = DefaultHasher::new();
        (h, i).hash(&mut hasher);
        h = hasher.finish();
    }
    h
}

/// The rounds of [`work`] that take about `target` on this machine.
fn calibrate(target: Duration) -> u64 {
    let probe = 100_000;
    let t = Instant::now();
    std::hint::black_box(work(1, probe));
    let per_round = t.elapsed().as_secs_f64() / probe as f64;
    ((target.as_secs_f64() / per_round) as u64).max(1)
}

/// Per object: reads the integer, hashes, writes the digest (shared output:
/// several of these write strings, each its own).
struct Digest {
    name: String,
    namespace: String,
    rounds: u64,
}

impl QueueController for Digest {
    fn name(&self) -> &str {
        &self.name
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(&self.namespace)],
            outputs: vec![Output::shared::<StrSpec>()],
            concurrency: CPU_CONCURRENCY,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let int = cx.get_typed::<IntSpec>(ptr).await?;
        let digest = format!("{:016x}", work(int.spec().0 as u64, self.rounds));
        cx.modify(
            &Pointer::typed::<StrSpec>(&self.namespace, ptr.id()),
            move |s: &mut Resource<StrSpec>| s.spec_mut().0 = digest.clone(),
        )
        .await?;
        Ok(Outcome::Done)
    }
}

const CPU_CONTROLLERS: usize = 4;

/// `jobs` hashings of `rounds` on `threads` plain threads.
fn bare_hashing(jobs: u64, rounds: u64, threads: usize) -> Duration {
    let t = Instant::now();
    std::thread::scope(|s| {
        for i in 0..threads as u64 {
            s.spawn(move || {
                for k in (i..jobs).step_by(threads) {
                    std::hint::black_box(work(k, rounds));
                }
            });
        }
    });
    t.elapsed()
}

/// Reconciles in flight per `Digest` controller, and in the worker pool: a
/// controller off the home arbiter needs enough of them to keep its thread
/// computing while others wait for the state's replies, which come from
/// another thread (and, with every core computing, after the OS schedules it).
const CPU_CONCURRENCY: usize = 16;

async fn cpu_run(layout: Layout, objects: u64, rounds: u64) -> Duration {
    let runtime = layout.builder().worker_pool(CPU_CONTROLLERS * CPU_CONCURRENCY).start();
    let state = runtime.state();
    for c in 0..CPU_CONTROLLERS {
        let ns = format!("cpu{c}");
        pipelined(objects, 256, |k| {
            let (state, ns) = (state.clone(), ns.clone());
            async move {
                state
                    .create(Resource::new(ns, format!("n{k}"), IntSpec(k as i64)), None)
                    .await
                    .unwrap();
            }
        })
        .await;
    }
    runtime.settled().await;
    let t = Instant::now();
    for c in 0..CPU_CONTROLLERS {
        let (name, namespace) = (format!("Digest{c}"), format!("cpu{c}"));
        runtime
            .register(move || Digest { name: name.clone(), namespace: namespace.clone(), rounds })
            .await
            .unwrap();
    }
    runtime.settled().await;
    let elapsed = t.elapsed();
    let written = state.list(&Kind::of::<StrSpec>("cpu0"), &LabelQuery::all()).await.unwrap();
    assert_eq!(written.len() as u64, objects, "every object was hashed");
    runtime.stop().await;
    elapsed
}

fn cpu(c: &mut Criterion, sys: &SystemRunner, mode: &Mode) -> serde_json::Value {
    let objects = mode.scale(200, 10);
    let per_reconcile = mode.scale(Duration::from_millis(1), Duration::from_micros(20));
    let rounds = calibrate(per_reconcile);
    let mut g = c.benchmark_group("execution_cpu");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(CPU_CONTROLLERS as u64 * objects));
    // The baseline: the same hashing on bare threads (the speed-up the
    // machine offers at this moment, whatever else runs on it).
    let total = CPU_CONTROLLERS as u64 * objects;
    for (name, threads) in
        [("bare_1_thread", 1), ("bare_threads", cosi_runtime::execution::default_arbiters())]
    {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iters {
                    elapsed += bare_hashing(total, rounds, threads);
                }
                elapsed
            });
        });
    }
    for (name, layout) in [("single", Layout::Single), ("spread", Layout::Spread)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| iter_async(sys, iters, || cpu_run(layout, objects, rounds)));
        });
    }
    g.finish();
    // The target's ratio, from runs taken in turns (see `common::paired`).
    let paired = mode.wants("execution_cpu").then(|| {
        common::paired(
            sys,
            mode.scale(10, 1),
            || cpu_run(Layout::Spread, objects, rounds),
            || cpu_run(Layout::Single, objects, rounds),
        )
    });
    json!({
        "paired_spread_single": paired,
        "controllers": CPU_CONTROLLERS,
        "objects_per_controller": objects,
        "reconcile_work_ns": common::ns(per_reconcile),
        "hash_rounds": rounds,
        "controller_arbiters": cosi_runtime::execution::default_arbiters(),
    })
}

// ---------------------------------------------------------------------------
// The chain

/// Lists every `I`, modifies the `O` with the same id (one after the other).
struct Level<I, O> {
    name: &'static str,
    map: fn(&I) -> O,
}

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
        let listed = cx.list(&Kind::of::<I>(NS), &LabelQuery::all()).await?;
        for r in &listed {
            let Some(input) = r.spec_ref::<I>() else { continue };
            let value = (self.map)(input);
            cx.modify(&Pointer::typed::<O>(NS, r.id()), move |o: &mut Resource<O>| {
                *o.spec_mut() = value.clone()
            })
            .await?;
        }
        Ok(())
    }
}

async fn chain_run(layout: Layout, n: u64) -> Duration {
    let runtime = layout.runtime();
    runtime
        .register(|| Level { name: "IntToStr", map: |i: &IntSpec| StrSpec(i.0.to_string()) })
        .await
        .unwrap();
    runtime
        .register(|| Level {
            name: "StrToSentence",
            map: |s: &StrSpec| SentenceSpec(format!("{} sentence", s.0)),
        })
        .await
        .unwrap();
    live_chain(runtime, n).await
}

/// With the chain's controllers registered: the time from the first of `n`
/// creates (1,024 in flight) until `settled()`, every sentence checked.
async fn live_chain(runtime: Runtime, n: u64) -> Duration {
    let state = runtime.state();
    runtime.settled().await;
    let t = Instant::now();
    pipelined(n, 1024, |k| {
        let state = state.clone();
        async move {
            state
                .create(Resource::new(NS, format!("n{k}"), IntSpec(k as i64)), None)
                .await
                .unwrap();
        }
    })
    .await;
    runtime.settled().await;
    let elapsed = t.elapsed();
    let sentences = state.list(&Kind::of::<SentenceSpec>(NS), &LabelQuery::all()).await.unwrap();
    assert_eq!(sentences.len() as u64, n, "every integer reached a sentence");
    runtime.stop().await;
    elapsed
}

/// The per-object chain of `benches/runtime.rs` (the form kube-runtime
/// runs: `common::QLevel`, 16 in flight), objects created live.
async fn per_object_run(layout: Layout, n: u64) -> Duration {
    let runtime = layout.runtime();
    runtime.register(common::q_int_to_str).await.unwrap();
    runtime.register(common::q_str_to_sentence).await.unwrap();
    live_chain(runtime, n).await
}

fn per_object_chain(c: &mut Criterion, sys: &SystemRunner, mode: &Mode) -> serde_json::Value {
    let n = mode.scale(10_000, 300);
    let mut g = c.benchmark_group("execution_per_object");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(2 * n));
    for (name, layout) in [("default", Layout::Default), ("spread", Layout::Spread)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| iter_async(sys, iters, || per_object_run(layout, n)));
        });
    }
    g.finish();
    // The target's ratio, from runs taken in turns (see `common::paired`).
    let paired = mode.wants("execution_per_object").then(|| {
        common::paired(
            sys,
            mode.scale(20, 1),
            || per_object_run(Layout::Default, n),
            || per_object_run(Layout::Spread, n),
        )
    });
    json!({ "objects": n, "paired_default_spread": paired })
}

fn chain(c: &mut Criterion, sys: &SystemRunner, mode: &Mode) -> serde_json::Value {
    let n = mode.scale(10_000, 300);
    let mut g = c.benchmark_group("execution_chain");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(2 * n));
    for (name, layout) in [
        ("single", Layout::Single),
        ("default", Layout::Default),
        ("spread", Layout::Spread),
        ("paired", Layout::Paired),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| iter_async(sys, iters, || chain_run(layout, n)));
        });
    }
    g.finish();
    json!({ "n": n })
}

// ---------------------------------------------------------------------------
// A hot key next to ordinary keys

/// "hot" requeues itself at zero delay (returning at once) until `stop`;
/// every other key reads its integer and writes its string, and counts.
struct Keys {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    drained: watch::Sender<bool>,
    ordinary: u64,
}

impl QueueController for Keys {
    fn name(&self) -> &str {
        "Keys"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![Output::exclusive::<StrSpec>()],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        if ptr.id() == "hot" {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(Outcome::Done);
            }
            return Ok(Outcome::RequeueAfter(Duration::ZERO));
        }
        let int = cx.get_typed::<IntSpec>(ptr).await?;
        let text = int.spec().0.to_string();
        cx.modify(&Pointer::typed::<StrSpec>(NS, ptr.id()), move |s: &mut Resource<StrSpec>| {
            s.spec_mut().0 = text.clone()
        })
        .await?;
        if self.done.fetch_add(1, Ordering::SeqCst) + 1 == self.ordinary {
            self.drained.send_replace(true);
        }
        Ok(Outcome::Done)
    }
}

async fn hot_key_run(hot: bool, ordinary: u64) -> Duration {
    let runtime = Runtime::builder().arbiters(1).start();
    let state = runtime.state();
    let stop = Arc::new(AtomicBool::new(false));
    let (drained_tx, mut drained) = watch::channel(false);
    let (s, d) = (stop.clone(), Arc::new(AtomicU64::new(0)));
    runtime
        .register(move || Keys {
            stop: s.clone(),
            done: d.clone(),
            drained: drained_tx.clone(),
            ordinary,
        })
        .await
        .unwrap();
    if hot {
        state.create(Resource::new(NS, "hot", IntSpec(-1)), None).await.unwrap();
    }
    let t = Instant::now();
    pipelined(ordinary, 1024, |k| {
        let state = state.clone();
        async move {
            state
                .create(Resource::new(NS, format!("n{k}"), IntSpec(k as i64)), None)
                .await
                .unwrap();
        }
    })
    .await;
    drained.wait_for(|d| *d).await.unwrap();
    let elapsed = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    runtime.settled().await;
    runtime.stop().await;
    elapsed
}

fn hot_key(c: &mut Criterion, sys: &SystemRunner, mode: &Mode) -> serde_json::Value {
    let ordinary = mode.scale(1_000, 100);
    let mut g = c.benchmark_group("execution_hot_key");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(ordinary));
    for (name, hot) in [("without_hot_key", false), ("with_hot_key", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| iter_async(sys, iters, || hot_key_run(hot, ordinary)));
        });
    }
    g.finish();
    json!({ "ordinary_keys": ordinary })
}

// ---------------------------------------------------------------------------
// Latency next to a blocking reconcile

/// Blocks its thread for `block` per reconcile, and requeues itself at once,
/// until `stop`.
struct Blocker {
    block: Duration,
    stop: Arc<AtomicBool>,
}

impl Controller for Blocker {
    fn name(&self) -> &str {
        "Blocker"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        // Blocking is the subject here: a device or file write would block so.
        std::thread::sleep(self.block);
        if !self.stop.load(Ordering::Relaxed) {
            cx.requeue_after(Duration::ZERO);
        }
        Ok(())
    }
}

/// Integer → string per object, in namespace "lat".
struct Light;

impl QueueController for Light {
    fn name(&self) -> &str {
        "Light"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>("lat")],
            outputs: vec![Output::exclusive::<StrSpec>()],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let int = cx.get_typed::<IntSpec>(ptr).await?;
        let text = int.spec().0.to_string();
        cx.modify(&Pointer::typed::<StrSpec>("lat", ptr.id()), move |s: &mut Resource<StrSpec>| {
            s.spec_mut().0 = text.clone()
        })
        .await?;
        Ok(Outcome::Done)
    }
}

/// How long the blocker blocks its thread per reconcile.
const BLOCK_NS: u64 = 2_000_000;
/// 2 ms × (φ − 1): consecutive multiples fall evenly over the blocker's cycle.
const GOLDEN_NS: u64 = 1_236_068;

/// `Light`'s create-to-output latency, `samples` times (sample numbers
/// `first..first + samples`), next to `blocker` (none, on the arbiter, on the
/// blocking pool).
async fn latency_run(blocker: Option<bool>, first: u64, samples: u64) -> Vec<Duration> {
    let runtime = Runtime::builder().arbiters(1).start();
    let state = runtime.state();
    runtime.register(|| Light).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let block = Duration::from_nanos(BLOCK_NS);
    match blocker {
        None => {}
        Some(false) => {
            let s = stop.clone();
            runtime.register(move || Blocker { block, stop: s.clone() }).await.unwrap();
        }
        Some(true) => {
            let s = stop.clone();
            runtime
                .register(move || Blocking::new(Blocker { block, stop: s.clone() }))
                .await
                .unwrap();
        }
    }
    let mut events = state
        .watch_kind_stream(&Kind::of::<StrSpec>("lat"), LabelQuery::all(), &WatchOptions::default())
        .await
        .unwrap();
    let mut times = Vec::with_capacity(samples as usize);
    for k in first..first + samples {
        let id = format!("n{k}");
        let t = Instant::now();
        state.create(Resource::new("lat", id.clone(), IntSpec(k as i64)), None).await.unwrap();
        loop {
            match events.next().await.expect("the watch goes on") {
                Event::Created(r) if r.id() == id => break,
                _ => {}
            }
        }
        times.push(t.elapsed());
        // Spaced out, so that the samples fall anywhere in the blocker's cycle
        // (otherwise a run of fast samples fits between two of its blocks).
        // The gap is 1 ms plus a phase spread evenly over the blocker's 2 ms
        // (sample k's phase is the fractional part of k·φ), slept on a pool
        // thread for its sub-millisecond precision: a timer alone ticks in
        // whole milliseconds, as the blocker's sleep does, and the two would
        // lock their phases, every sample then meeting the blocker's hand-off.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let phase = Duration::from_nanos(k.wrapping_mul(GOLDEN_NS) % BLOCK_NS);
        tokio::task::spawn_blocking(move || std::thread::sleep(phase)).await.expect("a sleep");
    }
    drop(events);
    stop.store(true, Ordering::Relaxed);
    runtime.settled().await;
    runtime.stop().await;
    times
}

fn blocking_latency(sys: &SystemRunner, mode: &Mode) -> serde_json::Value {
    if !mode.wants("blocking_latency") {
        return json!({});
    }
    let (rounds, per_round) = mode.scale((5, 100), (1, 10));
    let cases =
        [("alone", None), ("blocking_on_arbiter", Some(false)), ("blocking_pool", Some(true))];
    // In turns: each round runs every case once, in an order that rotates
    // from round to round, so that the machine's drift over the run (and
    // whatever ran just before) falls on every case alike.
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for round in 0..rounds {
        for turn in 0..cases.len() {
            let case = (round + turn) % cases.len();
            let first = (round * per_round) as u64;
            times[case].extend(sys.block_on(latency_run(cases[case].1, first, per_round as u64)));
        }
    }
    let mut report = serde_json::Map::new();
    for ((name, _), mut times) in cases.into_iter().zip(times) {
        times.sort();
        report.insert(
            name.to_owned(),
            json!({
                "p50_ns": common::ns(common::percentile(&times, 50.0)),
                "p99_ns": common::ns(common::percentile(&times, 99.0)),
            }),
        );
    }
    json!({
        "samples": rounds * per_round,
        "rounds": rounds,
        "block_ns": BLOCK_NS,
        "cases": report,
    })
}

/// `COSI_BENCH_PROFILE=<scenario>:<n>` (see `common::profile_request`): one
/// run of the per-object chain at home (`per_object_home`) or spread
/// (`per_object_spread`), for a profiler.
fn profile(sys: &SystemRunner, scenario: &str, n: u64) {
    let layout = match scenario {
        "per_object_home" => Layout::Default,
        "per_object_spread" => Layout::Spread,
        other => panic!(
            "COSI_BENCH_PROFILE: no execution scenario {other:?} (per_object_home, per_object_spread)"
        ),
    };
    let elapsed = sys.block_on(per_object_run(layout, n));
    println!("{scenario} at N = {n}: {elapsed:?}");
}

fn main() {
    if let Some((scenario, n)) = common::profile_request() {
        profile(&actix::System::new(), &scenario, n);
        return;
    }
    let mode = Mode::from_args();
    let mut c = mode.criterion();
    let sys = actix::System::new();

    let cpu = cpu(&mut c, &sys, &mode);
    let chain = chain(&mut c, &sys, &mode);
    let per_object = per_object_chain(&mut c, &sys, &mode);
    let hot_key = hot_key(&mut c, &sys, &mode);
    let latency = blocking_latency(&sys, &mode);
    if !mode.list {
        let report = json!({
            "quick": !mode.full,
            "cpu": cpu,
            "chain": chain,
            "per_object": per_object,
            "hot_key": hot_key,
            "blocking_latency": latency,
        });
        common::write_report(&mode, "execution", &report);
    }
    c.final_summary();
}
