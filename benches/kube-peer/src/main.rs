//! The kube-runtime peer of `benches/runtime.rs`: the same reconcile chain on stock
//! kube-runtime, measured in the same `scripts/benchmarks.sh` run as ours.
//!
//! N integers → strings (the decimal value) → sentences ("{k} sentence"), one
//! `Controller::for_stream` per stage over a reflector store of its input, and a
//! reflector store for the sentences the clock watches. There is no cluster: the
//! "apiserver" is [`Collection`], an in-memory map per kind whose writes stamp a
//! resourceVersion and go out to every watcher as watch events down unbounded
//! channels (list-then-watch: `Init`, `InitApply`…, `InitDone`, then `Apply`s).
//! A reconcile is handed its object from the store (as kube-runtime does) and
//! writes its output with one call to the in-memory apiserver: no HTTP, no JSON,
//! no network round trip, so every figure here is the controller machinery alone
//! (a best case for the peer).
//!
//! Figures (printed as one JSON object on stdout; progress on stderr):
//! - `chain`: N = 1,000, 10,000 and 100,000 on a current-thread tokio runtime
//!   (the comparison with our single arbiter): the clock runs from the first
//!   create to the event of the last correct sentence; medians of 5 runs (3 at
//!   100,000). Every run checks each sentence, the store sizes, one reconcile
//!   per object and stage, and no controller error.
//! - `chain_multi_thread`: the same on a 2-worker multi-thread runtime.
//! - `latency_us`: one stage (integer → string), one object at a time: from the
//!   create to the watch event of its string; p50 and p99 of 1,000 objects.
//! - `peak_bytes_100000`: peak live heap growth (a counting global allocator)
//!   over one run at N = 100,000, and `apiserver_bytes_100000`, the part of the
//!   retained heap held by the in-memory apiserver's maps (in a real deployment
//!   it lives in another process).
//!
//! `-- --quick` runs everything scaled down (a smoke test of this program).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::{mpsc, oneshot};
use futures::{Stream, StreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::{CustomResource, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

// ---------------------------------------------------------------------------
// Counting allocator (live bytes always, the peak while tracking)

static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static TRACK_PEAK: AtomicBool = AtomicBool::new(false);

/// Counts the bytes requested from [`System`], like `benches/common`'s allocator.
struct CountingAlloc;

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
    if TRACK_PEAK.load(Ordering::Relaxed) {
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

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

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn heap_now() -> isize {
    CURRENT.load(Ordering::Relaxed)
}

fn peak_start() -> isize {
    let now = heap_now();
    PEAK.store(now, Ordering::Relaxed);
    TRACK_PEAK.store(true, Ordering::Relaxed);
    now
}

fn peak_stop() -> isize {
    TRACK_PEAK.store(false, Ordering::Relaxed);
    PEAK.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// The three kinds, as custom resources

const NS: &str = "default";

/// An integer.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "bench.cosi.dev", version = "v1", kind = "Int", namespaced, schema = "disabled")]
pub struct IntSpec {
    value: i64,
}

/// The decimal value of an integer.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "bench.cosi.dev", version = "v1", kind = "Str", namespaced, schema = "disabled")]
pub struct StrSpec {
    value: String,
}

/// "<string> sentence".
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "bench.cosi.dev",
    version = "v1",
    kind = "Sentence",
    namespaced,
    schema = "disabled"
)]
pub struct SentenceSpec {
    text: String,
}

fn int(k: u64) -> Int {
    let mut i = Int::new(&format!("n{k}"), IntSpec { value: k as i64 });
    i.metadata.namespace = Some(NS.to_owned());
    i
}

fn int_to_str(i: &Int) -> Str {
    let mut s = Str::new(&i.name_any(), StrSpec { value: i.spec.value.to_string() });
    s.metadata.namespace = Some(NS.to_owned());
    s
}

fn str_to_sentence(s: &Str) -> Sentence {
    let mut t =
        Sentence::new(&s.name_any(), SentenceSpec { text: format!("{} sentence", s.spec.value) });
    t.metadata.namespace = Some(NS.to_owned());
    t
}

/// Whether a sentence is the right one for its name (`n{k}` → "{k} sentence").
fn correct(s: &Sentence) -> bool {
    let name = s.metadata.name.as_deref().unwrap_or("");
    name.strip_prefix('n').is_some_and(|k| s.spec.text.strip_suffix(" sentence") == Some(k))
}

// ---------------------------------------------------------------------------
// The in-memory apiserver

type WatchItem<K> = Result<Event<K>, watcher::Error>;

/// One kind's objects by name, and its watchers.
struct Collection<K> {
    inner: Mutex<Inner<K>>,
}

struct Inner<K> {
    objects: HashMap<String, K>,
    watchers: Vec<mpsc::UnboundedSender<WatchItem<K>>>,
    revision: u64,
}

impl<K: Resource + Clone> Collection<K> {
    fn new() -> Arc<Self> {
        Arc::new(Collection {
            inner: Mutex::new(Inner { objects: HashMap::new(), watchers: Vec::new(), revision: 0 }),
        })
    }

    /// A list-then-watch: the current objects (`Init`, `InitApply`…, `InitDone`),
    /// then every write as an `Apply`.
    fn watch(&self) -> mpsc::UnboundedReceiver<WatchItem<K>> {
        let (tx, rx) = mpsc::unbounded();
        let mut inner = self.inner.lock().unwrap();
        let _ = tx.unbounded_send(Ok(Event::Init));
        for o in inner.objects.values() {
            let _ = tx.unbounded_send(Ok(Event::InitApply(o.clone())));
        }
        let _ = tx.unbounded_send(Ok(Event::InitDone));
        inner.watchers.push(tx);
        rx
    }

    /// Creates or replaces the object of the same name (a server-side apply):
    /// stamps the next resourceVersion, stores it, tells every watcher.
    fn apply(&self, mut obj: K) {
        let mut inner = self.inner.lock().unwrap();
        inner.revision += 1;
        obj.meta_mut().resource_version = Some(inner.revision.to_string());
        inner.watchers.retain(|w| w.unbounded_send(Ok(Event::Apply(obj.clone()))).is_ok());
        let name = obj.meta().name.clone().expect("objects have names");
        inner.objects.insert(name, obj);
    }

    fn objects(&self) -> Vec<K> {
        self.inner.lock().unwrap().objects.values().cloned().collect()
    }

    /// Drops every object (to measure what the maps held).
    fn clear(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.objects = HashMap::new();
    }
}

// ---------------------------------------------------------------------------
// One stage: a controller from `I` to `O`

/// A stage's reconcile context: where it writes, and its reconcile count.
struct Stage<O> {
    output: Arc<Collection<O>>,
    reconciles: Arc<AtomicU64>,
}

/// What the bench reads of a running stage.
struct StageHandle {
    reconciles: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
}

impl StageHandle {
    fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::Relaxed)
    }
}

/// Bounds kube-runtime puts on a controller's object type.
trait Kind:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}
impl<K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static> Kind
    for K
{
}

/// A reflector store of `collection`, its applied objects (the controller
/// trigger), and a signal that the store has its initial list.
///
/// The signal comes from the stream, past the reflector, rather than from
/// `Store::wait_until_ready`: in kube-runtime 5.0.0 that future keeps only the
/// waker of whoever polled it last, so the bench waiting on it alongside the
/// controller's own runner (which waits on the same store) is never woken.
fn reflect<K: Kind>(
    collection: &Collection<K>,
) -> (Store<K>, impl Stream<Item = Result<K, watcher::Error>> + Send + 'static, Ready) {
    let (reader, writer) = reflector::store::<K>();
    let (tx, ready) = oneshot::channel();
    let mut tx = Some(tx);
    let stream = collection
        .watch()
        .reflect(writer)
        .inspect(move |e| {
            if matches!(e, Ok(Event::InitDone)) {
                let _ = tx.take().map(|tx| tx.send(()));
            }
        })
        .applied_objects();
    (reader, stream, ready)
}

/// Resolves once a reflector store has its initial list.
type Ready = oneshot::Receiver<()>;

/// Spawns a controller on `input` whose reconcile writes `map(object)` to `output`.
fn spawn_stage<I: Kind, O: Kind>(
    input: &Collection<I>,
    output: &Arc<Collection<O>>,
    map: fn(&I) -> O,
) -> (Store<I>, Ready, StageHandle) {
    let (store, trigger, ready) = reflect(input);
    let reconciles = Arc::new(AtomicU64::new(0));
    let stage = Arc::new(Stage { output: output.clone(), reconciles: reconciles.clone() });
    let errors = Arc::new(AtomicU64::new(0));
    let counted = errors.clone();
    let run = Controller::for_stream(trigger, store.clone())
        .run(
            move |obj: Arc<I>, stage: Arc<Stage<O>>| async move {
                stage.reconciles.fetch_add(1, Ordering::Relaxed);
                stage.output.apply(map(&obj));
                Ok::<_, Infallible>(Action::await_change())
            },
            |_, _: &Infallible, _| Action::await_change(),
            stage,
        )
        .for_each(move |r| {
            if r.is_err() {
                counted.fetch_add(1, Ordering::Relaxed);
            }
            std::future::ready(())
        });
    tokio::spawn(run);
    (store, ready, StageHandle { reconciles, errors })
}

// ---------------------------------------------------------------------------
// The chain

struct ChainRun {
    elapsed: Duration,
    reconciles: [u64; 2],
    /// Peak live heap over the heap before the run (only when asked for).
    peak_growth: Option<isize>,
    /// Heap freed by dropping the apiserver's objects at the end.
    apiserver_bytes: isize,
}

async fn chain_run(n: u64, track_peak: bool) -> ChainRun {
    let heap0 = if track_peak { peak_start() } else { heap_now() };
    let ints = Collection::<Int>::new();
    let strs = Collection::<Str>::new();
    let sentences = Collection::<Sentence>::new();
    let (_, int_ready, first) = spawn_stage(&ints, &strs, int_to_str);
    let (_, str_ready, second) = spawn_stage(&strs, &sentences, str_to_sentence);

    // The clock: a reflector on the sentences; the event of the n-th correct one stops it.
    let (sentence_store, watched, sentence_ready) = reflect(&sentences);
    let (done, finished) = oneshot::channel::<Instant>();
    tokio::spawn(async move {
        let mut watched = std::pin::pin!(watched);
        let mut seen = 0;
        let mut done = Some(done);
        while let Some(s) = watched.next().await {
            if s.as_ref().is_ok_and(correct) {
                seen += 1;
                if seen == n {
                    let _ = done.take().map(|d| d.send(Instant::now()));
                }
            }
        }
    });
    for ready in [int_ready, str_ready, sentence_ready] {
        ready.await.expect("the stores get their initial lists");
    }
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }

    // Creates in windows of 1024 (as the ours: 1024 in flight), yielding between them.
    let t = Instant::now();
    for k in 0..n {
        ints.apply(int(k));
        if k % 1024 == 1023 {
            tokio::task::yield_now().await;
        }
    }
    let end = finished.await.expect("the last sentence arrives");
    let elapsed = end - t;
    let peak_growth = track_peak.then(|| peak_stop() - heap0);

    // Checks: every sentence right, in the apiserver and the store; one reconcile
    // per object and stage; no controller error.
    let written = sentences.objects();
    assert_eq!(written.len() as u64, n, "every integer reached a sentence");
    assert!(written.iter().all(correct), "every sentence is right");
    assert_eq!(sentence_store.len() as u64, n, "the sentence store has them all");
    let reconciles = [first.reconciles(), second.reconciles()];
    assert_eq!(reconciles, [n, n], "one reconcile per object and stage");
    for h in [&first, &second] {
        assert_eq!(h.errors.load(Ordering::Relaxed), 0, "no controller error");
    }

    let before = heap_now();
    ints.clear();
    strs.clear();
    sentences.clear();
    let apiserver_bytes = before - heap_now();
    ChainRun { elapsed, reconciles, peak_growth, apiserver_bytes }
}

fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
    let mut b = if multi_thread {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    b.enable_time().build().expect("a tokio runtime")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

fn chain_series(sizes: &[(u64, usize)], multi_thread: bool) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for &(n, runs) in sizes {
        // One warm-up run below 100,000 (the allocator, the page cache); none above.
        let warm = usize::from(n < 100_000);
        let mut times = Vec::new();
        let mut reconciles = [0; 2];
        for i in 0..warm + runs {
            let run = runtime(multi_thread).block_on(chain_run(n, false));
            reconciles = run.reconciles;
            if i >= warm {
                times.push(run.elapsed.as_secs_f64() * 1e3);
            }
        }
        let label = if multi_thread { "multi-thread" } else { "current-thread" };
        eprintln!("chain, {label}, N = {n}: {times:.2?} ms");
        out.insert(
            n.to_string(),
            json!({
                "median_ms": median(times.clone()),
                "runs_ms": times,
                "reconcile_calls": reconciles,
            }),
        );
    }
    serde_json::Value::Object(out)
}

// ---------------------------------------------------------------------------
// Single-object latency

/// One stage (integer → string); `warmup + samples` objects created one at a
/// time, each timed from its create to the watch event of its string.
async fn latency(warmup: u64, samples: u64) -> Vec<Duration> {
    let ints = Collection::<Int>::new();
    let strs = Collection::<Str>::new();
    let (_, ready, stage) = spawn_stage(&ints, &strs, int_to_str);
    ready.await.expect("the store gets its initial list");
    let mut events = strs.watch();
    while let Some(e) = events.next().await {
        if matches!(e, Ok(Event::InitDone)) {
            break;
        }
    }
    let mut times = Vec::with_capacity(samples as usize);
    for k in 0..warmup + samples {
        let name = format!("n{k}");
        let t = Instant::now();
        ints.apply(int(k));
        loop {
            match events.next().await.expect("the watch goes on") {
                Ok(Event::Apply(s)) if s.metadata.name.as_deref() == Some(&name) => break,
                _ => {}
            }
        }
        if k >= warmup {
            times.push(t.elapsed());
        }
    }
    assert_eq!(stage.reconciles(), warmup + samples, "one reconcile per object");
    assert_eq!(stage.errors.load(Ordering::Relaxed), 0, "no controller error");
    times
}

/// The nearest-rank percentile `p` (0–100) of sorted `v`.
fn percentile(v: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

fn main() {
    // `COSI_BENCH_PROFILE=chain:<n>`: one chain run of size n and nothing else, for
    // callgrind (`scripts/instructions.sh`, as the cosi-runtime benches take it).
    if let Some(n) = std::env::var("COSI_BENCH_PROFILE")
        .ok()
        .and_then(|v| v.strip_prefix("chain:").and_then(|n| n.parse::<u64>().ok()))
    {
        let run = runtime(false).block_on(chain_run(n, false));
        eprintln!("chain at N = {n}: {:?}", run.elapsed);
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes: Vec<(u64, usize)> =
        if quick { vec![(100, 2), (300, 2)] } else { vec![(1_000, 5), (10_000, 5), (100_000, 3)] };
    let big = sizes.last().unwrap().0;

    let chain = chain_series(&sizes, false);
    let chain_mt = chain_series(&sizes, true);

    let samples = if quick { 50 } else { 1_000 };
    // One whole run first, discarded, as `benches/runtime.rs` does: the
    // process's first run grows its heap (a page fault per page first touched).
    runtime(false).block_on(latency(samples / 10, samples));
    let mut times = runtime(false).block_on(latency(samples / 10, samples));
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (p50, p99) = (us(percentile(&times, 50.0)), us(percentile(&times, 99.0)));
    eprintln!("latency: p50 {p50:.1} µs, p99 {p99:.1} µs");

    let mem = runtime(false).block_on(chain_run(big, true));
    let peak = mem.peak_growth.expect("tracked");
    eprintln!(
        "peak heap growth at N = {big}: {peak} B (apiserver maps: {} B)",
        mem.apiserver_bytes
    );

    let mut report = json!({
        "peer": "kube-runtime",
        "quick": quick,
        "scenario": "N integers -> strings -> sentences; one Controller::for_stream per stage over a reflector store; in-memory apiserver (maps + unbounded watch channels); clock from the first create to the watch event of the last correct sentence",
        "runtime": "tokio current_thread",
        "chain": chain,
        "chain_multi_thread": { "worker_threads": 2, "sizes": chain_mt },
        "latency_us": {
            "p50": p50,
            "p99": p99,
            "mean": us(times.iter().sum::<Duration>() / times.len() as u32),
            "samples": times.len(),
        },
        "peak_n": big,
    });
    report[format!("peak_bytes_{big}")] = json!(peak);
    report[format!("apiserver_bytes_{big}")] = json!(mem.apiserver_bytes);
    println!("{}", serde_json::to_string_pretty(&report).expect("JSON"));
}
