//! Scraping a running runtime through `Runtime::register_metrics`: after a
//! known sequence of reconciles, errors, panics, terminal errors and requeues,
//! controller-runtime's series (names, labels, types, values) and ours.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::controller::{
    Controller, Outcome, QueueController, QueueSettings, ReconcileError, ReconcileResult,
    TerminalError,
};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

/// One scrape: series (name with labels) → value, and family → type.
struct Scrape {
    samples: HashMap<String, f64>,
    types: HashMap<String, String>,
    text: String,
}

impl Scrape {
    fn of(registry: &Registry) -> Scrape {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        assert!(text.ends_with("# EOF\n"), "{text}");
        let mut samples = HashMap::new();
        let mut types = HashMap::new();
        for line in text.lines() {
            if let Some(t) = line.strip_prefix("# TYPE ") {
                let (name, kind) = t.split_once(' ').unwrap();
                types.insert(name.to_owned(), kind.to_owned());
            } else if !line.starts_with('#') {
                let (series, value) = line.rsplit_once(' ').unwrap();
                let previous = samples.insert(series.to_owned(), value.parse().unwrap());
                assert!(previous.is_none(), "{series} appears twice");
            }
        }
        Scrape { samples, types, text }
    }

    /// The value of `name{labels}`; fails the test when the series is missing.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        let series = format!("{name}{{{}}}", labels.join(","));
        *self.samples.get(&series).unwrap_or_else(|| panic!("no {series} in\n{}", self.text))
    }

    fn kind(&self, family: &str) -> &str {
        self.types.get(family).map_or("missing", String::as_str)
    }

    fn by_controller(&self, name: &str, controller: &str) -> f64 {
        self.get(name, &[("controller", controller)])
    }

    fn by_queue(&self, name: &str, controller: &str) -> f64 {
        self.get(name, &[("name", controller), ("controller", controller)])
    }

    fn results(&self, controller: &str) -> [f64; 4] {
        ["success", "error", "requeue", "requeue_after"].map(|r| {
            self.get(
                "controller_runtime_reconcile_total",
                &[("controller", controller), ("result", r)],
            )
        })
    }
}

/// What one reconcile of [`Scripted`] does.
#[derive(Clone, Copy, Debug)]
enum Step {
    Fail,
    Panic,
    RequeueAfter(Duration),
    Done,
}

/// A plain controller that plays a script, one step per reconcile (the
/// script outlives the instances a panic replaces).
struct Scripted(Arc<Mutex<VecDeque<Step>>>);

impl Controller for Scripted {
    fn name(&self) -> &str {
        "Scripted"
    }

    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>("scripted")]
    }

    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<StrSpec>()]
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let step = self.0.lock().unwrap().pop_front().unwrap_or(Step::Done);
        match step {
            Step::Fail => Err("scripted failure".into()),
            Step::Panic => panic!("scripted panic"),
            Step::RequeueAfter(d) => {
                cx.requeue_after(d);
                Ok(())
            }
            Step::Done => Ok(()),
        }
    }
}

/// A queue controller whose key ids choose what happens: `ok*` succeeds,
/// `fail*` fails once, `panic*` panics once, `later*` asks to run again after
/// 5 s once, `again*` asks to run again at once, `terminal*` fails for good,
/// `stuck*` waits for the gate.
#[derive(Clone)]
struct Keys {
    name: &'static str,
    namespace: &'static str,
    attempts: Arc<Mutex<HashMap<String, usize>>>,
    entered: watch::Sender<usize>,
    gate: watch::Receiver<bool>,
}

impl Keys {
    fn new(name: &'static str, namespace: &'static str) -> Keys {
        Keys {
            name,
            namespace,
            attempts: Arc::default(),
            entered: watch::channel(0).0,
            gate: watch::channel(true).1,
        }
    }
}

impl QueueController for Keys {
    fn name(&self) -> &str {
        self.name
    }

    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(self.namespace)],
            outputs: vec![Output::shared::<StrSpec>()],
            concurrency: 2,
        }
    }

    async fn reconcile(
        &self,
        _cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let id = ptr.id().to_owned();
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap();
            let n = attempts.entry(id.clone()).or_default();
            *n += 1;
            *n
        };
        self.entered.send_modify(|n| *n += 1);
        let first = attempt == 1;
        match id.trim_end_matches(char::is_numeric) {
            "fail" if first => Err(format!("{id} fails once").into()),
            "panic" if first => panic!("{id} panics once"),
            "later" if first => Ok(Outcome::RequeueAfter(Duration::from_secs(5))),
            "again" if first => Ok(Outcome::RequeueAfter(Duration::ZERO)),
            "terminal" => Err(TerminalError::new(format!("{id} never works")).into()),
            "stuck" => {
                self.gate.clone().wait_for(|open| *open).await?;
                Ok(Outcome::Done)
            }
            _ => Ok(Outcome::Done),
        }
    }
}

fn runtime() -> Runtime {
    Runtime::builder()
        .backoff(Backoff { initial: Duration::from_secs(1), jitter: 0.0, ..Backoff::default() })
        .start()
}

async fn create(runtime: &Runtime, namespace: &str, ids: &[&str]) {
    for id in ids {
        runtime.state().create(Resource::new(namespace, *id, IntSpec(1)), None).await.unwrap();
    }
}

const CONTROLLER_RUNTIME_COUNTERS: [&str; 5] = [
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_terminal_reconcile_errors_total",
    "controller_runtime_reconcile_panics_total",
    "controller_runtime_reconcile_timeouts_total",
    "cosi_controller_restarts_total",
];

#[actix::test]
async fn every_series_is_there_at_zero_from_the_first_scrape() {
    let runtime = runtime();
    let mut registry = Registry::default();
    runtime.register_metrics(&mut registry);
    runtime.register(|| Keys::new("Idle", "nothing-here")).await.unwrap();
    let scrape = Scrape::of(&registry);
    let c = "Idle";
    assert_eq!(scrape.results(c), [0.0; 4]);
    for name in CONTROLLER_RUNTIME_COUNTERS {
        assert_eq!(scrape.by_controller(name, c), 0.0, "{name}");
    }
    assert_eq!(scrape.by_controller("controller_runtime_active_workers", c), 0.0);
    assert_eq!(scrape.by_controller("controller_runtime_max_concurrent_reconciles", c), 2.0);
    assert_eq!(scrape.by_controller("controller_runtime_reconcile_time_seconds_count", c), 0.0);
    assert_eq!(
        scrape.get("workqueue_depth", &[("name", c), ("controller", c), ("priority", "")]),
        0.0
    );
    for name in [
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    ] {
        assert_eq!(scrape.by_queue(name, c), 0.0, "{name}");
    }
    for (family, kind) in [
        ("controller_runtime_reconcile", "counter"),
        ("controller_runtime_reconcile_errors", "counter"),
        ("controller_runtime_terminal_reconcile_errors", "counter"),
        ("controller_runtime_reconcile_panics", "counter"),
        ("controller_runtime_reconcile_timeouts", "counter"),
        ("controller_runtime_reconcile_time_seconds", "histogram"),
        ("controller_runtime_active_workers", "gauge"),
        ("controller_runtime_max_concurrent_reconciles", "gauge"),
        ("workqueue_depth", "gauge"),
        ("workqueue_adds", "counter"),
        ("workqueue_retries", "counter"),
        ("workqueue_queue_duration_seconds", "histogram"),
        ("workqueue_work_duration_seconds", "histogram"),
        ("workqueue_unfinished_work_seconds", "gauge"),
        ("workqueue_longest_running_processor_seconds", "gauge"),
        ("cosi_controller_restarts", "counter"),
        ("cosi_controller_retries", "counter"),
        ("cosi_controller_status", "gauge"),
    ] {
        assert_eq!(scrape.kind(family), kind, "{family}");
    }
    // controller-runtime's buckets, every one of them.
    let reconcile_buckets = scrape
        .samples
        .keys()
        .filter(|s| s.starts_with("controller_runtime_reconcile_time_seconds_bucket{"))
        .count();
    assert_eq!(reconcile_buckets, 41, "40 bounds and +Inf");
    assert_eq!(
        scrape.get(
            "workqueue_queue_duration_seconds_bucket",
            &[("le", "1e-8"), ("name", c), ("controller", c)]
        ),
        0.0
    );
    assert_eq!(
        scrape.get(
            "workqueue_work_duration_seconds_bucket",
            &[("le", "1000.0"), ("name", c), ("controller", c)]
        ),
        0.0
    );
    runtime.stop().await;
}

#[actix::test]
async fn a_plain_controller_counts_errors_panics_restarts_and_requeues_apart() {
    tokio::time::pause();
    let runtime = runtime();
    let mut registry = Registry::default();
    runtime.register_metrics(&mut registry);
    let script = Arc::new(Mutex::new(VecDeque::from([
        Step::Fail,
        Step::Panic,
        Step::RequeueAfter(Duration::from_secs(10)),
        Step::Done,
    ])));
    let shared = script.clone();
    runtime.register(move || Scripted(shared.clone())).await.unwrap();
    runtime.idle(Duration::from_secs(60)).await.unwrap();
    assert!(script.lock().unwrap().is_empty(), "every step ran");

    let scrape = Scrape::of(&registry);
    let c = "Scripted";
    // success, error, requeue, requeue_after
    assert_eq!(scrape.results(c), [1.0, 2.0, 0.0, 1.0]);
    assert_eq!(scrape.by_controller("controller_runtime_reconcile_errors_total", c), 2.0);
    assert_eq!(scrape.by_controller("controller_runtime_reconcile_panics_total", c), 1.0);
    assert_eq!(scrape.by_controller("controller_runtime_terminal_reconcile_errors_total", c), 0.0);
    assert_eq!(scrape.by_controller("controller_runtime_reconcile_time_seconds_count", c), 4.0);
    assert_eq!(
        scrape.get(
            "controller_runtime_reconcile_time_seconds_bucket",
            &[("le", "+Inf"), ("controller", c)]
        ),
        4.0
    );
    assert_eq!(scrape.by_controller("controller_runtime_max_concurrent_reconciles", c), 1.0);
    assert_eq!(scrape.by_controller("controller_runtime_active_workers", c), 0.0);
    // The queue of one pending reconcile: the first one, the two retries after
    // the failures, and the requeue became ready; the two backoffs and the
    // requeue were delayed adds.
    assert_eq!(scrape.by_queue("workqueue_adds_total", c), 4.0);
    assert_eq!(scrape.by_queue("workqueue_retries_total", c), 3.0);
    assert_eq!(scrape.by_queue("workqueue_queue_duration_seconds_count", c), 4.0);
    assert_eq!(scrape.by_queue("workqueue_work_duration_seconds_count", c), 4.0);
    assert_eq!(
        scrape.get("workqueue_depth", &[("name", c), ("controller", c), ("priority", "")]),
        0.0
    );
    // Ours: the panic built one fresh instance; two failures were retried.
    assert_eq!(scrape.by_controller("cosi_controller_restarts_total", c), 1.0);
    assert_eq!(scrape.by_controller("cosi_controller_retries_total", c), 2.0);
    assert_eq!(scrape.by_controller("cosi_controller_reconciles_total", c), 2.0);
    assert_eq!(
        scrape.get("cosi_controller_status", &[("controller", c), ("status", "running")]),
        1.0
    );
    runtime.stop().await;
}

#[actix::test]
async fn a_queue_controller_counts_every_key_outcome() {
    tokio::time::pause();
    let runtime = runtime();
    let mut registry = Registry::default();
    runtime.register_metrics(&mut registry);
    create(&runtime, NS, &["ok1", "fail1", "panic1", "later1", "again1", "terminal1"]).await;
    // The instances share their count of attempts: the panic replaces the
    // instance, and the retry must see the panic's attempt.
    let keys = Keys::new("Keys", NS);
    runtime.register(move || keys.clone()).await.unwrap();
    runtime.idle(Duration::from_secs(60)).await.unwrap();

    let scrape = Scrape::of(&registry);
    let c = "Keys";
    // ok; fail, panic, later and again the second time: success. fail and
    // panic the first time, terminal: error. again: requeue; later: requeue_after.
    assert_eq!(scrape.results(c), [5.0, 3.0, 1.0, 1.0]);
    assert_eq!(scrape.by_controller("controller_runtime_reconcile_errors_total", c), 3.0);
    assert_eq!(scrape.by_controller("controller_runtime_terminal_reconcile_errors_total", c), 1.0);
    assert_eq!(scrape.by_controller("controller_runtime_reconcile_panics_total", c), 1.0);
    assert_eq!(scrape.by_controller("controller_runtime_reconcile_time_seconds_count", c), 10.0);
    assert_eq!(scrape.by_controller("controller_runtime_max_concurrent_reconciles", c), 2.0);
    // Six keys became ready at start, then fail, panic, later and again once more.
    assert_eq!(scrape.by_queue("workqueue_adds_total", c), 10.0);
    // Two backoffs and one delayed requeue (a zero-delay requeue is no retry).
    assert_eq!(scrape.by_queue("workqueue_retries_total", c), 3.0);
    assert_eq!(scrape.by_queue("workqueue_queue_duration_seconds_count", c), 10.0);
    assert_eq!(scrape.by_queue("workqueue_work_duration_seconds_count", c), 10.0);
    // Ours: the panic built one fresh instance; two failures were retried.
    assert_eq!(scrape.by_controller("cosi_controller_restarts_total", c), 1.0);
    assert_eq!(scrape.by_controller("cosi_controller_retries_total", c), 2.0);
    assert_eq!(scrape.by_controller("cosi_queue_retries_total", c), 2.0);
    assert_eq!(scrape.by_controller("cosi_queue_depth", c), 0.0);
    runtime.stop().await;
}

#[actix::test]
async fn running_work_shows_in_the_gauges_while_it_runs() {
    tokio::time::pause();
    let runtime = runtime();
    let mut registry = Registry::default();
    runtime.register_metrics(&mut registry);
    let (open, gate) = watch::channel(false);
    let keys = Keys { gate, ..Keys::new("Stuck", NS) };
    let mut entered = keys.entered.subscribe();
    create(&runtime, NS, &["stuck1", "stuck2", "stuck3"]).await;
    runtime.register(move || keys.clone()).await.unwrap();
    entered.wait_for(|n| *n == 2).await.unwrap();
    tokio::time::advance(Duration::from_secs(3)).await;

    let scrape = Scrape::of(&registry);
    let c = "Stuck";
    assert_eq!(scrape.by_controller("controller_runtime_active_workers", c), 2.0);
    assert_eq!(
        scrape.get("workqueue_depth", &[("name", c), ("controller", c), ("priority", "")]),
        1.0
    );
    assert_eq!(scrape.by_queue("workqueue_unfinished_work_seconds", c), 6.0);
    assert_eq!(scrape.by_queue("workqueue_longest_running_processor_seconds", c), 3.0);

    open.send_replace(true);
    runtime.settled().await;
    let scrape = Scrape::of(&registry);
    assert_eq!(scrape.by_controller("controller_runtime_active_workers", c), 0.0);
    assert_eq!(scrape.by_queue("workqueue_unfinished_work_seconds", c), 0.0);
    assert_eq!(scrape.by_queue("workqueue_longest_running_processor_seconds", c), 0.0);
    assert_eq!(scrape.results(c), [3.0, 0.0, 0.0, 0.0]);
    // The third key waited in the queue while the first two ran.
    assert!(
        scrape.get("workqueue_queue_duration_seconds_sum", &[("name", c), ("controller", c)])
            >= 3.0
    );
    runtime.stop().await;
}

#[actix::test]
async fn render_and_the_registered_collector_agree() {
    tokio::time::pause();
    let runtime = runtime();
    let mut registry = Registry::default();
    runtime.register_metrics(&mut registry);
    create(&runtime, NS, &["ok1", "fail1"]).await;
    runtime.register(|| Keys::new("Keys", NS)).await.unwrap();
    runtime.settled().await;
    let rendered = cosi_runtime::prometheus::render(&runtime.metrics().await);
    let scraped = Scrape::of(&registry).text;
    // The durations of running work are measured at each scrape: none runs.
    assert_eq!(rendered, scraped);
    runtime.stop().await;
}
