//! A soak under churn: a chain of controllers with strong inputs and
//! finalizers, fed by many tasks that create, update and tear down sources over
//! a pool of reused ids, while other tasks open and drop watches of every kind,
//! push keys into the queue with delays, and both controllers panic and fail
//! at seeded random moments. It prints one line every 10 s, then stops the
//! feeders, waits until the runtime is idle (timers included) and checks the
//! final state. Exit code 0 only if every check holds.
//!
//! ```text
//! cargo run --release --example soak                     # 60 s
//! cargo run --release --example soak -- --secs 600       # 10 minutes
//! cargo run --release --example soak -- --seed 7 --panic-rate 0.05 --lanes 16
//! cargo run --release --example soak -- --state /tmp/s   # on a durable state
//! cargo run --release --example soak -- --state /tmp/s --crash-every 3
//! ```
//!
//! With `--state DIR` the chain runs on a durable state (`DIR/state.redb`).
//! With `--crash-every SECS` as well, the soak runs itself as a child process
//! and kills it with SIGKILL every few seconds; the child reports each
//! acknowledged write, and after every kill the parent reopens the file and
//! checks that every acknowledged write is there and that revisions never go
//! back. At the end the controllers resume on what the crashes left, and the
//! usual checks run.
//!
//! The chain: `Source` (written by the feeders) → `Doubler` (a plain
//! controller; holds a finalizer on each source; writes `Derived` = 2 × value)
//! → `Summarizer` (a queue controller; holds a finalizer on each derived
//! resource; writes `Summary` = derived + 1). Tearing a source down cascades
//! through both.
//!
//! Each line every 10 s gives RSS, mutations and their rate, reconciles,
//! errors, panics, restarts, live watches and queue depth. At the end the
//! feeders stop and the soak waits until the runtime is idle
//! (`Runtime::idle(bound)`, which unlike `settled()` also waits for
//! `requeue_after` and `enqueue_after` timers), then checks that every live
//! source has exactly its outputs, nothing is stuck tearing down, every panic
//! raised was counted, every dropped watch is gone, and memory did not grow
//! past 0.1 MiB per million mutations after the first minute; exit code 1
//! otherwise. `--seed N` repeats a run; `--lanes`, `--live`, `--panic-rate`,
//! `--error-rate` and `--report FILE` (JSON) are there too. CI runs it for
//! 60 s, and 20 s of it with `--crash-every 2`; BENCHMARKS.md has a run of
//! 3 minutes.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cosi_runtime::controller::{
    Outcome, QueueController, QueueHandle, QueueSettings, ReconcileError,
};
use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchOptions;
use cosi_runtime::supervisor::Backoff;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

const NS: &str = "soak";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Sources.soak.cosi.dev")]
struct Source(i64);

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Deriveds.soak.cosi.dev")]
struct Derived(i64);

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Summaries.soak.cosi.dev")]
struct Summary(i64);

/// Command-line options.
#[derive(Clone, Debug)]
struct Options {
    secs: u64,
    lanes: usize,
    live: usize,
    panic_rate: f64,
    error_rate: f64,
    seed: u64,
    report: Option<String>,
    state: Option<std::path::PathBuf>,
    crash_every: Option<u64>,
    /// Internal: run as the crash mode's child (print acknowledged writes).
    child: bool,
}

impl Options {
    fn parse() -> Result<Options, String> {
        let mut o = Options {
            secs: 60,
            lanes: 8,
            live: 256,
            panic_rate: 0.01,
            error_rate: 0.05,
            seed: 1,
            report: None,
            state: None,
            crash_every: None,
            child: false,
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if flag == "-h" || flag == "--help" {
                println!(
                    "usage: soak [--secs N] [--lanes N] [--live N] [--panic-rate P] \
                     [--error-rate P] [--seed N] [--report FILE] [--state DIR [--crash-every SECS]]\n  \
                     defaults: 60 s, 8 lanes, 256 ids, panics 0.01, errors 0.05 per reconcile, \
                     seed 1, in memory"
                );
                std::process::exit(0);
            }
            if flag == "--child" {
                o.child = true;
                continue;
            }
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--secs" => o.secs = value.parse().map_err(|e| bad(&e))?,
                "--lanes" => o.lanes = value.parse().map_err(|e| bad(&e))?,
                "--live" => o.live = value.parse().map_err(|e| bad(&e))?,
                "--panic-rate" => o.panic_rate = value.parse().map_err(|e| bad(&e))?,
                "--error-rate" => o.error_rate = value.parse().map_err(|e| bad(&e))?,
                "--seed" => o.seed = value.parse().map_err(|e| bad(&e))?,
                "--report" => o.report = Some(value.clone()),
                "--state" => o.state = Some(value.into()),
                "--crash-every" => o.crash_every = Some(value.parse().map_err(|e| bad(&e))?),
                other => return Err(format!("unknown flag {other} (try --help)")),
            }
        }
        if o.lanes == 0 || o.live < o.lanes {
            return Err("need at least one lane and at least one id per lane".into());
        }
        if o.crash_every.is_some() && o.state.is_none() {
            return Err("--crash-every needs --state DIR (a durable state to crash)".into());
        }
        Ok(o)
    }
}

/// Counters shared by the controllers and the tasks.
#[derive(Default)]
struct Tally {
    mutations: AtomicU64,
    panics_raised: AtomicU64,
    errors_raised: AtomicU64,
    watches_opened: AtomicU64,
    enqueued: AtomicU64,
    stop: AtomicBool,
    /// Crash mode's child: print every acknowledged source write.
    acks: AtomicBool,
}

/// A seeded source of faults, one per controller instance.
struct Faults {
    rng: fastrand::Rng,
    panic_rate: f64,
    error_rate: f64,
    tally: Arc<Tally>,
}

impl Faults {
    fn new(seed: u64, o: &Options, tally: &Arc<Tally>) -> Self {
        Faults {
            rng: fastrand::Rng::with_seed(seed),
            panic_rate: o.panic_rate,
            error_rate: o.error_rate,
            tally: tally.clone(),
        }
    }

    fn maybe_panic(&mut self, who: &str) {
        if self.rng.f64() < self.panic_rate {
            self.tally.panics_raised.fetch_add(1, Ordering::SeqCst);
            panic!("{who}: a seeded panic");
        }
    }

    fn maybe_fail(&mut self, who: &str) -> Result<(), ReconcileError> {
        if self.rng.f64() < self.error_rate {
            self.tally.errors_raised.fetch_add(1, Ordering::SeqCst);
            return Err(format!("{who}: a seeded transient error").into());
        }
        Ok(())
    }
}

/// Source → Derived (2 × value), holding a finalizer on each source.
struct Doubler {
    faults: Faults,
}

impl Controller for Doubler {
    fn name(&self) -> &str {
        "Doubler"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::strong::<Source>(NS), Input::destroy_ready::<Derived>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<Derived>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        self.faults.maybe_panic("Doubler");
        self.faults.maybe_fail("Doubler")?;
        let sources = cx.list_typed::<Source>(NS, &LabelQuery::all()).await?;
        for source in &sources {
            let out = Pointer::typed::<Derived>(NS, source.id());
            if source.phase() == Phase::TearingDown {
                if cx.release(&out).await? {
                    cx.remove_finalizer(source.pointer()).await?;
                }
                continue;
            }
            if !source.metadata().finalizers().contains("Doubler")
                && !cx.add_finalizer(source.pointer()).await?
            {
                continue; // destroyed or tearing down since the list
            }
            let value = 2 * source.spec().0;
            match cx.modify(&out, move |d: &mut Resource<Derived>| d.spec_mut().0 = value).await {
                // The previous output of that id is still being torn down:
                // its destroy-ready event wakes us again.
                Err(e) if e.is_phase_conflict() => {}
                other => drop(other?),
            }
        }
        for derived in cx.list(&Kind::of::<Derived>(NS), &LabelQuery::all()).await? {
            if !sources.iter().any(|s| s.id() == derived.id()) {
                cx.release(derived.pointer()).await?;
            }
        }
        Ok(())
    }
}

/// Derived → Summary (derived + 1), one key at a time, holding a finalizer
/// on each derived resource.
struct Summarizer {
    faults: std::sync::Mutex<Faults>,
}

impl Summarizer {
    fn fault(&self) -> Result<(), ReconcileError> {
        let mut f = self.faults.lock().map_err(|_| "poisoned fault source")?;
        f.maybe_fail("Summarizer")?;
        let panic = f.rng.f64() < f.panic_rate;
        if panic {
            f.tally.panics_raised.fetch_add(1, Ordering::SeqCst);
        }
        drop(f); // never panic while holding the lock
        if panic {
            panic!("Summarizer: a seeded panic");
        }
        Ok(())
    }
}

impl QueueController for Summarizer {
    fn name(&self) -> &str {
        "Summarizer"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<Derived>(NS)],
            outputs: vec![Output::exclusive::<Summary>()],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        self.fault()?;
        let summary = Pointer::typed::<Summary>(NS, ptr.id());
        let derived = match cx.get_typed::<Derived>(ptr).await {
            Ok(d) if d.phase() == Phase::Running => d,
            Ok(_) => {
                match cx.destroy(&summary).await {
                    Err(e) if !e.is_not_found() => return Err(e.into()),
                    _ => {}
                }
                cx.remove_finalizer(ptr).await?;
                return Ok(Outcome::Done);
            }
            Err(e) if e.is_not_found() => {
                match cx.destroy(&summary).await {
                    Err(e) if !e.is_not_found() => return Err(e.into()),
                    _ => {}
                }
                return Ok(Outcome::Done);
            }
            Err(e) => return Err(e.into()),
        };
        if !derived.metadata().finalizers().contains("Summarizer") && !cx.add_finalizer(ptr).await?
        {
            return Ok(Outcome::Done);
        }
        let value = derived.spec().0 + 1;
        cx.modify(&summary, move |s: &mut Resource<Summary>| s.spec_mut().0 = value).await?;
        // Now and then, look again a little later (requeue churn), while the
        // feeders run: a key that requeued itself forever would never let the
        // runtime become idle.
        let feeding = self.faults.lock().is_ok_and(|f| !f.tally.stop.load(Ordering::SeqCst));
        if value % 7 == 0 && feeding {
            return Ok(Outcome::RequeueAfter(Duration::from_millis(5)));
        }
        Ok(Outcome::Done)
    }
}

/// One feeder: creates, updates and tears down the sources of its own ids.
async fn feeder(state: State, ids: Vec<String>, seed: u64, tally: Arc<Tally>) {
    let state = state.client();
    let mut rng = fastrand::Rng::with_seed(seed);
    while !tally.stop.load(Ordering::SeqCst) {
        let id = &ids[rng.usize(..ids.len())];
        let ptr = Pointer::typed::<Source>(NS, id);
        let value = rng.i64(0..1_000_000);
        let acks = tally.acks.load(Ordering::Relaxed);
        let written = |r: &AnyResource| {
            if acks {
                println!("ACK {} {} {}", r.id(), r.version().get(), r.metadata().revision());
            }
        };
        let result = match state.get(&ptr).await {
            Err(e) if e.is_not_found() => state
                .create(Resource::new(NS, id.clone(), Source(value)))
                .await
                .map(|r| written(&r)),
            Ok(r) if r.phase() == Phase::Running && rng.f64() < 0.7 => state
                .modify(&ptr, move |s: &mut Resource<Source>| s.spec_mut().0 = value)
                .await
                .map(|r| written(&r.into_any())),
            Ok(_) => {
                if acks {
                    println!("DESTROYING {id}");
                }
                state.teardown_and_destroy(&ptr).await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                tally.mutations.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if e.is_conflict() || e.is_not_found() => {}
            Err(e) => eprintln!("soak: feeder: {e}"),
        }
    }
}

/// Opens and drops watches of every kind, some of which stall.
async fn watcher(state: State, ids: Vec<String>, seed: u64, tally: Arc<Tally>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let kind = Kind::of::<Source>(NS);
    while !tally.stop.load(Ordering::SeqCst) {
        let stream = match rng.u8(..4) {
            0 => {
                state
                    .watch_stream(&Pointer::typed::<Source>(NS, &ids[rng.usize(..ids.len())]))
                    .await
            }
            1 => state.watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::default()).await,
            2 => {
                state.watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::bootstrap()).await
            }
            _ => {
                // A tiny window, never read while changes go on: it stalls.
                let options = WatchOptions::bootstrap().with_window(2);
                state.watch_kind_stream(&Kind::of::<Derived>(NS), LabelQuery::all(), &options).await
            }
        };
        let Ok(mut stream) = stream else { continue };
        tally.watches_opened.fetch_add(1, Ordering::Relaxed);
        for _ in 0..rng.usize(0..8) {
            if futures::FutureExt::now_or_never(stream.next()).is_none() {
                break;
            }
        }
        actix::clock::sleep(Duration::from_millis(rng.u64(0..20))).await;
        drop(stream);
    }
}

/// Pushes keys into the queue controller, some for later.
async fn enqueuer(queue: QueueHandle, ids: Vec<String>, seed: u64, tally: Arc<Tally>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    while !tally.stop.load(Ordering::SeqCst) {
        let ptr = Pointer::typed::<Derived>(NS, &ids[rng.usize(..ids.len())]);
        let delay = Duration::from_millis(rng.u64(0..50));
        if queue.enqueue_after(&ptr, delay).await.is_ok() {
            tally.enqueued.fetch_add(1, Ordering::Relaxed);
        }
        actix::clock::sleep(Duration::from_millis(2)).await;
    }
}

fn rss_bytes() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4096
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

struct Sample {
    secs: f64,
    rss: u64,
    mutations: u64,
}

async fn progress(
    runtime: &Runtime,
    tally: &Tally,
    started: Instant,
    last: &mut (f64, u64),
) -> Sample {
    let metrics = runtime.metrics().await;
    let sum = |f: fn(&cosi_runtime::controller::ControllerMetrics) -> u64| -> u64 {
        metrics.iter().map(f).sum()
    };
    let depth: u64 = metrics.iter().filter_map(|m| m.queue.as_ref().map(|q| q.depth)).sum();
    let secs = started.elapsed().as_secs_f64();
    let mutations = tally.mutations.load(Ordering::Relaxed);
    let rate = (mutations - last.1) as f64 / (secs - last.0).max(1e-9);
    *last = (secs, mutations);
    let rss = rss_bytes();
    let watches = runtime.state().watch_count().await.unwrap_or(0);
    let line = format!(
        "{secs:6.0}s  rss {:7.1} MiB  mutations {mutations:>9} ({rate:>7.0}/s)  reconciles {:>9}  \
         errors {:>6}  panics {:>5}  restarts {:>6}  watches {watches:>4}  queue {depth:>4}",
        mib(rss),
        sum(|m| m.reconciles),
        sum(|m| m.errors),
        sum(|m| m.panics),
        sum(|m| m.restarts),
    );
    println!("{line}");
    Sample { secs, rss, mutations }
}

/// Every check of the final state; the failures, as sentences.
async fn verify(runtime: &Runtime, tally: &Tally, baseline_watches: usize) -> Vec<String> {
    let state = runtime.state();
    let mut failures = Vec::new();
    let list = |kind: Kind| {
        let state = state.clone();
        async move { state.list(&kind, &LabelQuery::all()).await.unwrap_or_default() }
    };
    let sources = list(Kind::of::<Source>(NS)).await;
    let derived: BTreeMap<String, AnyResource> =
        list(Kind::of::<Derived>(NS)).await.into_iter().map(|r| (r.id().to_owned(), r)).collect();
    let summaries: BTreeMap<String, AnyResource> =
        list(Kind::of::<Summary>(NS)).await.into_iter().map(|r| (r.id().to_owned(), r)).collect();
    for r in sources.iter().chain(derived.values()).chain(summaries.values()) {
        if r.phase() == Phase::TearingDown {
            failures.push(format!("{} is stuck tearing down", r.pointer()));
        }
    }
    for source in &sources {
        let want = 2 * source.typed::<Source>().map(|s| s.spec().0).unwrap_or(i64::MIN);
        match derived.get(source.id()).and_then(|d| d.typed::<Derived>().ok()) {
            Some(d) if d.spec().0 == want => {}
            other => failures.push(format!("{}: derived {other:?}, want {want}", source.id())),
        }
        match summaries.get(source.id()).and_then(|s| s.typed::<Summary>().ok()) {
            Some(s) if s.spec().0 == want + 1 => {}
            other => {
                failures.push(format!("{}: summary {other:?}, want {}", source.id(), want + 1))
            }
        }
    }
    let live: std::collections::BTreeSet<&str> = sources.iter().map(|s| s.id()).collect();
    for id in derived.keys().chain(summaries.keys()) {
        if !live.contains(id.as_str()) {
            failures.push(format!("{id}: an output is left without its source"));
        }
    }
    let metrics = runtime.metrics().await;
    let counted: u64 = metrics.iter().map(|m| m.panics).sum();
    let raised = tally.panics_raised.load(Ordering::SeqCst);
    if counted != raised {
        failures.push(format!("{raised} panics raised, {counted} counted by the runtime"));
    }
    for m in &metrics {
        if m.status != cosi_runtime::controller::ControllerStatus::Running {
            failures.push(format!("controller {} is {}", m.controller, m.status));
        }
    }
    let watches = state.watch_count().await.unwrap_or(usize::MAX);
    if watches != baseline_watches {
        failures.push(format!(
            "{watches} watches registered at the end, {baseline_watches} before the churn"
        ));
    }
    failures
}

async fn run(o: Options) -> Result<bool, Box<dyn std::error::Error>> {
    let tally = Arc::new(Tally::default());
    tally.acks.store(o.child, Ordering::SeqCst);
    let builder = Runtime::builder().backoff(Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(50),
        ..Backoff::default()
    });
    let runtime = match &o.state {
        Some(dir) => builder.open_durable(dir.join("state.redb"), [NS]).await?,
        None => builder.start(),
    };
    let (t, opts) = (tally.clone(), o.clone());
    let mut seeds = fastrand::Rng::with_seed(o.seed);
    let (s1, s2) = (seeds.u64(..), seeds.u64(..));
    runtime.register(move || Doubler { faults: Faults::new(s1, &opts, &t) }).await?;
    let (t, opts) = (tally.clone(), o.clone());
    let queue = runtime
        .register(move || Summarizer { faults: std::sync::Mutex::new(Faults::new(s2, &opts, &t)) })
        .await?;
    // A teardown_and_destroy that a crash interrupted: its caller is gone,
    // so issue it again, as the user would on restart.
    for source in runtime.state().list(&Kind::of::<Source>(NS), &LabelQuery::all()).await? {
        if source.phase() == Phase::TearingDown {
            let (user, ptr) = (runtime.state().client(), source.pointer().clone());
            actix::spawn(async move {
                let _ = user.teardown_and_destroy(&ptr).await;
            });
        }
    }
    runtime.settled().await;
    let baseline_watches = runtime.state().watch_count().await?;
    if !o.child {
        println!(
            "soak: {} s, {} lanes over {} ids, panics {} and errors {} per reconcile, seed {}, {}",
            o.secs,
            o.lanes,
            o.live,
            o.panic_rate,
            o.error_rate,
            o.seed,
            o.state.as_ref().map_or("in memory".into(), |d| format!("durable in {}", d.display()))
        );
    }

    let ids: Vec<String> = (0..o.live).map(|i| format!("id-{i:05}")).collect();
    let mut tasks = Vec::new();
    for lane in 0..o.lanes {
        let mine: Vec<String> = ids.iter().skip(lane).step_by(o.lanes).cloned().collect();
        tasks.push(actix::spawn(feeder(runtime.state(), mine, seeds.u64(..), tally.clone())));
    }
    for _ in 0..2 {
        tasks.push(actix::spawn(watcher(
            runtime.state(),
            ids.clone(),
            seeds.u64(..),
            tally.clone(),
        )));
    }
    tasks.push(actix::spawn(enqueuer(queue, ids.clone(), seeds.u64(..), tally.clone())));

    let started = Instant::now();
    let deadline = started + Duration::from_secs(o.secs);
    let mut last = (0.0, 0);
    let mut samples = Vec::new();
    let terminal = std::io::stdout().is_terminal() && !o.child;
    let mut next_line = started + Duration::from_secs(10);
    while Instant::now() < deadline {
        // In a terminal, a progress display every second between the lines.
        let tick = if terminal { Duration::from_secs(1) } else { Duration::from_secs(10) };
        let next = (Instant::now() + tick).min(next_line).min(deadline);
        actix::clock::sleep_until(next.into()).await;
        if o.child {
            continue; // its stdout carries acknowledgements only
        }
        if Instant::now() >= next_line || Instant::now() >= deadline {
            if terminal {
                print!("\r\x1b[2K");
            }
            samples.push(progress(&runtime, &tally, started, &mut last).await);
            next_line += Duration::from_secs(10);
        } else if terminal {
            let done = started.elapsed().as_secs_f64() / o.secs.max(1) as f64;
            let width = 30;
            let filled = ((done * width as f64) as usize).min(width);
            print!(
                "\r\x1b[2K[{}{}] {:3.0}%  {} mutations",
                "#".repeat(filled),
                " ".repeat(width - filled),
                done * 100.0,
                tally.mutations.load(Ordering::Relaxed)
            );
            let _ = std::io::Write::flush(&mut std::io::stdout());
        }
    }
    tally.stop.store(true, Ordering::SeqCst);
    for task in tasks {
        let _ = task.await;
    }
    let quiet = Instant::now();
    if let Err(e) = runtime.idle(Duration::from_secs(120)).await {
        println!("soak: FAIL: {e}");
        return Ok(false);
    }
    println!("soak: quiet {:.1} s after the feeders stopped", quiet.elapsed().as_secs_f64());
    let mut failures = verify(&runtime, &tally, baseline_watches).await;

    // Memory: growth after the first minute, per million mutations.
    let end = samples.last().map_or((0, 0), |s| (s.rss, s.mutations));
    let growth = samples.iter().find(|s| s.secs >= 60.0).filter(|b| b.mutations < end.1).map(|b| {
        let per_million = (end.0 as f64 - b.rss as f64) / ((end.1 - b.mutations) as f64 / 1e6);
        (per_million, b)
    });
    match &growth {
        Some((per_million, _)) if *per_million > 0.1 * 1024.0 * 1024.0 => failures.push(format!(
            "memory grew {:.3} MiB per million mutations after the first minute (limit 0.1)",
            per_million / (1024.0 * 1024.0)
        )),
        Some((per_million, _)) => println!(
            "soak: memory after the first minute: {:+.4} MiB per million mutations",
            per_million / (1024.0 * 1024.0)
        ),
        None => println!("soak: memory growth: n/a (the run must outlast its first minute)"),
    }

    let metrics = runtime.metrics().await;
    let total = |f: fn(&cosi_runtime::controller::ControllerMetrics) -> u64| -> u64 {
        metrics.iter().map(f).sum()
    };
    let mutations = tally.mutations.load(Ordering::SeqCst);
    println!(
        "soak: {mutations} mutations ({:.0}/s), {} reconciles, {} errors ({} seeded), {} panics, \
         {} restarts, {} watches opened and dropped, {} keys enqueued",
        mutations as f64 / o.secs.max(1) as f64,
        total(|m| m.reconciles),
        total(|m| m.errors),
        tally.errors_raised.load(Ordering::SeqCst),
        total(|m| m.panics),
        total(|m| m.restarts),
        tally.watches_opened.load(Ordering::SeqCst),
        tally.enqueued.load(Ordering::SeqCst),
    );
    if let Some(path) = &o.report {
        let rss_at = |secs: f64| samples.iter().find(|s| s.secs >= secs - 0.5).map(|s| s.rss);
        let report = serde_json::json!({
            "secs": o.secs,
            "seed": o.seed,
            "lanes": o.lanes,
            "live": o.live,
            "mutations": mutations,
            "mutations_per_sec": mutations as f64 / o.secs.max(1) as f64,
            "reconciles": total(|m| m.reconciles),
            "panics": total(|m| m.panics),
            "errors": total(|m| m.errors),
            "rss_1min": rss_at(60.0),
            "rss_5min": rss_at(300.0),
            "rss_10min": rss_at(600.0),
            "rss_end": end.0,
            "growth_mib_per_million": growth.map(|(g, _)| g / (1024.0 * 1024.0)),
            "failures": failures,
        });
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    runtime.stop().await;
    runtime.state().close().await?;
    if failures.is_empty() {
        println!(
            "soak: PASS: every live source has exactly its outputs, nothing stuck, every panic counted, every dropped watch gone"
        );
        Ok(true)
    } else {
        for f in failures.iter().take(20) {
            println!("soak: FAIL: {f}");
        }
        println!("soak: FAIL: {} problems (seed {} repeats the run)", failures.len(), o.seed);
        Ok(false)
    }
}

/// The last thing the child said about one id.
#[derive(Clone, Copy, Debug)]
enum Said {
    Written { version: u64, revision: u64 },
    Destroying,
}

/// Sources in the file: id → (version, revision), and the store's revision.
async fn stored_sources(
    dir: &std::path::Path,
) -> Result<(BTreeMap<String, (u64, u64)>, u64), Error> {
    let state = State::open_durable(dir.join("state.redb"), [NS]).await?;
    let mut out = BTreeMap::new();
    let mut top = 0;
    for kind in [Kind::of::<Source>(NS), Kind::of::<Derived>(NS), Kind::of::<Summary>(NS)] {
        for r in state.list(&kind, &LabelQuery::all()).await? {
            top = top.max(r.metadata().revision());
            if kind.resource_type() == Source::TYPE {
                r.typed::<Source>()?; // every record decodes: nothing torn
                out.insert(r.id().to_owned(), (r.version().get(), r.metadata().revision()));
            }
        }
    }
    state.close().await?;
    Ok((out, top))
}

/// Crash mode: run the soak as a child, SIGKILL it every `every` seconds,
/// check the file after each kill, then resume the chain on what is left.
async fn crash(o: Options) -> Result<bool, Box<dyn std::error::Error>> {
    use std::io::BufRead;
    let (Some(dir), Some(every)) = (o.state.clone(), o.crash_every) else {
        return Err("--crash-every needs --state".into());
    };
    println!(
        "soak: crash mode: the chain runs in a child killed with SIGKILL every ~{every} s, for {} s",
        o.secs
    );
    let exe = std::env::current_exe()?;
    let deadline = Instant::now() + Duration::from_secs(o.secs);
    let mut rng = fastrand::Rng::with_seed(o.seed);
    let mut failures = Vec::new();
    let (mut kills, mut acked_total, mut last_top) = (0u64, 0u64, 0u64);
    let mut previous: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    while Instant::now() < deadline {
        let mut child = std::process::Command::new(&exe)
            .args(["--child", "--secs", "1000000", "--seed", &rng.u64(..).to_string()])
            .args(["--lanes", &o.lanes.to_string(), "--live", &o.live.to_string()])
            .args([
                "--panic-rate",
                &o.panic_rate.to_string(),
                "--error-rate",
                &o.error_rate.to_string(),
            ])
            .arg("--state")
            .arg(&dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut said: BTreeMap<String, Said> = BTreeMap::new();
            let mut acks = 0u64;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let parts: Vec<&str> = line.split(' ').collect();
                match parts[..] {
                    ["ACK", id, v, r] => {
                        let (Ok(version), Ok(revision)) = (v.parse(), r.parse()) else { continue };
                        said.insert(id.to_owned(), Said::Written { version, revision });
                        acks += 1;
                    }
                    ["DESTROYING", id] => {
                        said.insert(id.to_owned(), Said::Destroying);
                    }
                    _ => {}
                }
            }
            (said, acks)
        });
        let wait = Duration::from_millis(every * 1000 / 2 + rng.u64(0..every * 1000));
        actix::clock::sleep(wait).await;
        child.kill()?; // SIGKILL
        child.wait()?;
        kills += 1;
        let (said, acks) = reader.join().map_err(|_| "the reader thread panicked")?;
        acked_total += acks;
        let (now, top) = stored_sources(&dir).await?;
        if top < last_top {
            failures.push(format!(
                "kill {kills}: the store went back from revision {last_top} to {top}"
            ));
        }
        last_top = last_top.max(top);
        for (id, what) in &said {
            if let Said::Written { version, revision } = what {
                match now.get(id) {
                    Some((v, r)) if v >= version && r >= revision => {}
                    other => failures.push(format!(
                        "kill {kills}: {id} acknowledged at version {version} (revision {revision}), found {other:?}"
                    )),
                }
            }
        }
        for (id, (_, revision)) in &previous {
            if let Some((_, r)) = now.get(id)
                && r < revision
            {
                failures
                    .push(format!("kill {kills}: {id} went back from revision {revision} to {r}"));
            }
        }
        println!(
            "soak: kill {kills} after {:.1} s: {acks} writes acknowledged, all there; {} sources in the file",
            wait.as_secs_f64(),
            now.len()
        );
        previous = now;
    }
    println!(
        "soak: {kills} kills, {acked_total} acknowledged writes checked; resuming the chain on what is left"
    );
    let resumed = run(Options { secs: 0, crash_every: None, ..o }).await?;
    if !failures.is_empty() {
        for f in failures.iter().take(20) {
            println!("soak: FAIL: {f}");
        }
    }
    Ok(resumed && failures.is_empty())
}

#[actix::main]
async fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("error"))
        .format_timestamp(None)
        .init();
    // Seeded panics are expected; the runtime counts them. Keep stderr readable.
    std::panic::set_hook(Box::new(|info| {
        let msg = info.to_string();
        if !msg.contains("a seeded panic") {
            eprintln!("soak: unexpected panic: {msg}");
        }
    }));
    let options = match Options::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = if options.crash_every.is_some() && !options.child {
        crash(options).await
    } else {
        run(options).await
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}
