//! Shared by the bench binaries: run mode (full or quick), a counting global
//! allocator, the JSON report files, spec types and small helpers.
//!
//! Each bench binary includes this module with `mod common;` and declares
//! `#[global_allocator] static ALLOC: common::CountingAlloc = common::CountingAlloc;`.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::Duration;

use std::marker::PhantomData;

use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::resource::Spec;
use criterion::Criterion;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------
// Run mode

/// How this bench binary was started.
#[derive(Clone, Debug)]
pub struct Mode {
    /// A real `cargo bench` run (criterion got `--bench` and not `--test`).
    /// Otherwise this is the quick smoke run of `cargo test --benches`:
    /// every scenario is scaled down and criterion runs each routine once.
    pub full: bool,
    /// `--list`: criterion lists the benchmarks; run nothing else.
    pub list: bool,
    /// Positional filters given to criterion (substring match here).
    pub filters: Vec<String>,
}

impl Mode {
    /// The mode from the command line.
    pub fn from_args() -> Mode {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let has = |flag: &str| args.iter().any(|a| a == flag);
        let mut filters = Vec::new();
        let mut skip_value = false;
        for a in &args {
            if skip_value {
                skip_value = false;
                continue;
            }
            if a.starts_with('-') {
                // Options of criterion that take a value.
                skip_value = matches!(
                    a.as_str(),
                    "--save-baseline"
                        | "-s"
                        | "--baseline"
                        | "-b"
                        | "--baseline-lenient"
                        | "--load-baseline"
                        | "--format"
                        | "--profile-time"
                        | "--sample-size"
                        | "--warm-up-time"
                        | "--measurement-time"
                        | "--nresamples"
                        | "--noise-threshold"
                        | "--confidence-level"
                        | "--significance-level"
                        | "--plotting-backend"
                        | "--output-format"
                        | "--color"
                        | "-c"
                        | "--logfile"
                );
                continue;
            }
            filters.push(a.clone());
        }
        Mode {
            // `--profile-time` (criterion runs the routine for that long, for a
            // profiler) keeps the full sizes: a profile of the scaled-down
            // smoke pass shows start-up, not the reconcile path.
            full: has("--bench") && !has("--test"),
            list: has("--list"),
            filters,
        }
    }

    /// `full` in a real run, `quick` in the smoke run.
    pub fn scale<T>(&self, full: T, quick: T) -> T {
        if self.full { full } else { quick }
    }

    /// Whether a measurement outside criterion (memory, counts) should run:
    /// not when listing, and only if it matches a filter when filters are given.
    pub fn wants(&self, name: &str) -> bool {
        !self.list && (self.filters.is_empty() || self.filters.iter().any(|f| name.contains(f)))
    }

    /// The criterion configuration shared by every group (groups refine it).
    pub fn criterion(&self) -> Criterion {
        Criterion::default()
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sample_size(20)
            .nresamples(20_000)
            .without_plots()
            .configure_from_args()
    }
}

// ---------------------------------------------------------------------------
// Counting allocator

static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static TRACK_PEAK: AtomicBool = AtomicBool::new(false);

/// A global allocator that counts the bytes requested from [`System`]
/// (live bytes always; the peak only between [`peak_start`] and [`peak_stop`]).
/// It counts requested sizes, not what `malloc` rounds them up to.
pub struct CountingAlloc;

#[inline]
fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
    if TRACK_PEAK.load(Ordering::Relaxed) {
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

#[inline]
fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes as isize, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to `System`; only counters change.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

/// Live heap bytes now.
pub fn heap_now() -> isize {
    CURRENT.load(Ordering::Relaxed)
}

/// Starts tracking the peak from the current live bytes; returns them.
pub fn peak_start() -> isize {
    let now = heap_now();
    PEAK.store(now, Ordering::Relaxed);
    TRACK_PEAK.store(true, Ordering::Relaxed);
    now
}

/// Stops tracking and returns the peak live bytes since [`peak_start`].
pub fn peak_stop() -> isize {
    TRACK_PEAK.store(false, Ordering::Relaxed);
    PEAK.load(Ordering::Relaxed)
}

/// Resident set size of the process, from `/proc/self/statm` (0 elsewhere).
pub fn rss_bytes() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = s.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

// ---------------------------------------------------------------------------
// Reports

/// `<target>/bench-report` (`<target>/bench-report/quick` in the smoke run),
/// where `<target>` is the target directory this binary was built in.
pub fn report_dir(mode: &Mode) -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target"));
    let dir = target.join("bench-report");
    if mode.full { dir } else { dir.join("quick") }
}

/// Writes `value` as `<report_dir>/<name>.json` and prints it.
pub fn write_report(mode: &Mode, name: &str, value: &serde_json::Value) {
    let text = serde_json::to_string_pretty(value).expect("a JSON value serializes");
    println!("{name}: {text}");
    let dir = report_dir(mode);
    let path = dir.join(format!("{name}.json"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)) {
        eprintln!("cannot write {}: {e}", path.display());
    }
}

// ---------------------------------------------------------------------------
// Specs

/// The namespace every bench uses.
pub const NS: &str = "default";

/// An integer resource (8 bytes of spec).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Ints.bench.cosi.dev")]
pub struct IntSpec(pub i64);

/// A string resource: the decimal value of an integer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Strs.bench.cosi.dev")]
pub struct StrSpec(pub String);

/// A sentence resource: "<string> sentence".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Sentences.bench.cosi.dev")]
pub struct SentenceSpec(pub String);

/// Runs `op(k)` for every `k` in `0..n`, with at most `window` in flight
/// (`futures::future::join_all` over consecutive windows).
pub async fn pipelined<F, Fut>(n: u64, window: u64, mut op: F)
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut k = 0;
    while k < n {
        let end = (k + window).min(n);
        futures::future::join_all((k..end).map(&mut op)).await;
        k = end;
    }
}

/// `COSI_BENCH_PROFILE=<scenario>:<n>`: the scenario a bench binary should
/// run once, without criterion, for a profiler (`scripts/instructions.py`
/// runs it under callgrind at two sizes: the difference of the instruction
/// counts over the difference of the sizes is the cost per object, without
/// the start-up).
pub fn profile_request() -> Option<(String, u64)> {
    let value = std::env::var("COSI_BENCH_PROFILE").ok()?;
    let (scenario, n) = value.split_once(':')?;
    Some((scenario.to_owned(), n.parse().ok()?))
}

/// A duration in nanoseconds as a JSON number.
pub fn ns(d: Duration) -> serde_json::Value {
    serde_json::json!(d.as_nanos() as u64)
}

/// The nearest-rank percentile `p` (0–100) of `sorted` (ascending, not empty).
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of `samples` (not empty): the upper one of an even count.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// `rounds` runs of `base` and of `other` taken in turns (`base` first in
/// even rounds, `other` first in odd ones), for the ratio of the two.
///
/// Criterion takes every sample of one routine before the next routine's: on
/// a machine whose speed drifts (a shared VM's CPU-bound work can slow down
/// by half from one second to the next, with nothing else running on it), a
/// drift between the two blocks lands in their ratio whole. Taken in turns,
/// each pair runs seconds apart, under the same conditions: the median of the
/// per-pair ratios is the figure a target on `other / base` is checked against.
///
/// Returns `{rounds, base_median_ns, other_median_ns, ratio_median}`, the
/// ratio being `other / base`.
pub fn paired<FA, FB>(
    sys: &actix::SystemRunner,
    rounds: usize,
    mut base: impl FnMut() -> FA,
    mut other: impl FnMut() -> FB,
) -> serde_json::Value
where
    FA: std::future::Future<Output = Duration>,
    FB: std::future::Future<Output = Duration>,
{
    let (mut bases, mut others, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    sys.block_on(async {
        for round in 0..rounds.max(1) {
            let (b, o) = if round % 2 == 0 {
                let b = base().await;
                (b, other().await)
            } else {
                let o = other().await;
                (base().await, o)
            };
            ratios.push(o.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE));
            bases.push(b);
            others.push(o);
        }
    });
    ratios.sort_by(f64::total_cmp);
    serde_json::json!({
        "rounds": ratios.len(),
        "base_median_ns": ns(median(bases)),
        "other_median_ns": ns(median(others)),
        "ratio_median": ratios[ratios.len() / 2],
    })
}

/// p50, p99, max and mean of `times` (sorted here) as JSON.
pub fn percentiles(times: &mut [Duration]) -> serde_json::Value {
    times.sort();
    serde_json::json!({
        "p50_ns": ns(percentile(times, 50.0)),
        "p99_ns": ns(percentile(times, 99.0)),
        "max_ns": ns(times[times.len() - 1]),
        "mean_ns": ns(times.iter().sum::<Duration>() / times.len() as u32),
    })
}

/// Lets actors left by a previous iteration finish (their stores are dropped
/// when they next run), so that cost never lands inside a timed region.
pub async fn quiesce() {
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
}

/// The total of `iters` runs of an async scenario that times itself (the
/// body of a criterion `iter_custom` whose runs need the actix system).
pub fn iter_async<Fut: std::future::Future<Output = Duration>>(
    sys: &actix::SystemRunner,
    iters: u64,
    mut run: impl FnMut() -> Fut,
) -> Duration {
    sys.block_on(async {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            total += run().await;
        }
        total
    })
}

// ---------------------------------------------------------------------------
// The per-object chain's controllers

/// The per-object form of a level: a queue controller whose reconcile of one
/// input reads it and `modify`s the output with the same id (or destroys the
/// output when the input is gone): the chain kube-runtime runs.
pub struct QLevel<I, O> {
    /// The controller's name.
    pub name: &'static str,
    /// What an input's output is.
    pub map: fn(&I) -> O,
    /// The types (`PhantomData`).
    pub _types: PhantomData<fn() -> (I, O)>,
}

impl<I: Spec, O: Spec + Default> QueueController for QLevel<I, O> {
    fn name(&self) -> &str {
        self.name
    }

    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<I>(NS)],
            outputs: vec![Output::exclusive::<O>()],
            concurrency: 16,
        }
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let output = Pointer::typed::<O>(NS, ptr.id());
        match cx.get_typed::<I>(ptr).await {
            Ok(input) => {
                let value = (self.map)(input.spec());
                cx.modify(&output, move |o: &mut Resource<O>| *o.spec_mut() = value.clone())
                    .await?;
            }
            Err(e) if e.is_not_found() => match cx.destroy(&output).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            },
            Err(e) => return Err(e.into()),
        }
        Ok(Outcome::Done)
    }
}

/// The per-object string → sentence level.
pub fn q_str_to_sentence() -> QLevel<StrSpec, SentenceSpec> {
    QLevel {
        name: "StrToSentence",
        map: |s| SentenceSpec(format!("{} sentence", s.0)),
        _types: PhantomData,
    }
}

/// The per-object integer → string level.
pub fn q_int_to_str() -> QLevel<IntSpec, StrSpec> {
    QLevel { name: "IntToStr", map: |i| StrSpec(i.0.to_string()), _types: PhantomData }
}

// ---------------------------------------------------------------------------
// The bare-actix baseline: an actor doing a `HashMap` insert per message.

/// The bare actor of the baselines: one `HashMap` insert per message, on an
/// unbounded mailbox as the `StateActor`'s.
#[derive(Default)]
pub struct MapActor {
    map: std::collections::HashMap<String, i64>,
}

impl actix::Actor for MapActor {
    type Context = actix::Context<Self>;

    fn started(&mut self, ctx: &mut actix::Context<Self>) {
        // The same mailbox discipline as the `StateActor` (unbounded).
        ctx.set_mailbox_capacity(0);
    }
}

/// Inserts the value under the key; answers the map's size.
#[derive(actix::Message)]
#[rtype(result = "u64")]
pub struct Insert(pub String, pub i64);

impl actix::Handler<Insert> for MapActor {
    type Result = u64;

    fn handle(&mut self, Insert(key, value): Insert, _: &mut actix::Context<Self>) -> u64 {
        self.map.insert(key, value);
        self.map.len() as u64
    }
}
