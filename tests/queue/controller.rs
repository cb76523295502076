//! Queue controllers: per-object reconciles, concurrency, the shared pool,
//! failures, panics, requeues, terminal errors, mapped inputs, feeders.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::controller::{
    ControllerStatus, Outcome, QueueController, QueueSettings, ReconcileError, TerminalError,
};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::{Backoff, RegistrationError};
use futures::StreamExt;
use tokio::sync::watch;

/// Observes concurrency across reconciles (possibly of several controllers).
#[derive(Default)]
struct Probe {
    in_flight: Mutex<HashSet<String>>,
    current: AtomicUsize,
    max: AtomicUsize,
    attempts: Mutex<std::collections::HashMap<String, usize>>,
}

impl Probe {
    /// Enters a reconcile of `key`; panics (failing the test) if it is already in flight.
    fn enter(&self, key: &str) -> usize {
        assert!(
            self.in_flight.lock().unwrap().insert(key.to_owned()),
            "{key} reconciled concurrently with itself"
        );
        let now = self.current.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        let mut attempts = self.attempts.lock().unwrap();
        let n = attempts.entry(key.to_owned()).or_default();
        *n += 1;
        *n
    }

    fn leave(&self, key: &str) {
        self.in_flight.lock().unwrap().remove(key);
        self.current.fetch_sub(1, Ordering::SeqCst);
    }

    fn attempts(&self, key: &str) -> usize {
        self.attempts.lock().unwrap().get(key).copied().unwrap_or(0)
    }
}

/// Mirrors integers to strings; ids choose misbehaviour:
/// `fail*` fails twice, `panic*` panics once, `requeue*` requeues once after
/// 10 s, `terminal*` fails terminally, `slow*` waits for the gate.
struct Mirror {
    name: &'static str,
    namespace: &'static str,
    concurrency: usize,
    probe: Arc<Probe>,
    gate: watch::Receiver<bool>,
}

impl QueueController for Mirror {
    fn name(&self) -> &str {
        self.name
    }

    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(self.namespace)],
            outputs: vec![Output::shared::<StrSpec>()],
            concurrency: self.concurrency,
        }
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let key = format!("{}/{}", self.name, ptr.id());
        let attempt = self.probe.enter(&key);
        let result = self.mirror(cx, ptr, attempt).await;
        self.probe.leave(&key);
        result
    }
}

impl Mirror {
    async fn mirror(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
        attempt: usize,
    ) -> Result<Outcome, ReconcileError> {
        let id = ptr.id();
        if id.starts_with("slow") || id.starts_with("gated") {
            self.gate.clone().wait_for(|open| *open).await?;
        }
        if id.starts_with("fail") && attempt <= 2 {
            return Err(format!("{id} fails on attempt {attempt}").into());
        }
        if id.starts_with("panic") && attempt == 1 {
            self.probe.leave(&format!("{}/{id}", self.name));
            panic!("{id} panics on attempt 1");
        }
        if id.starts_with("terminal") {
            return Err(TerminalError::new(format!("{id} can never work")).into());
        }
        let out = Pointer::typed::<StrSpec>(self.namespace, id);
        match cx.get_typed::<IntSpec>(ptr).await {
            Ok(int) => {
                let text = int.spec().0.to_string();
                cx.modify(&out, move |s: &mut Resource<StrSpec>| s.spec_mut().0 = text.clone())
                    .await?;
            }
            Err(e) if e.is_not_found() => match cx.destroy(&out).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            },
            Err(e) => return Err(e.into()),
        }
        if id.starts_with("requeue") && attempt == 1 {
            return Ok(Outcome::RequeueAfter(Duration::from_secs(10)));
        }
        if id.starts_with("cx-requeue") && attempt == 1 {
            cx.requeue_after(Duration::from_secs(10)); // the same, through the context
        }
        Ok(Outcome::Done)
    }
}

fn mirror(
    name: &'static str,
    namespace: &'static str,
    concurrency: usize,
    probe: &Arc<Probe>,
    gate: &watch::Receiver<bool>,
) -> impl Fn() -> Mirror + Send + 'static {
    let (probe, gate) = (probe.clone(), gate.clone());
    move || Mirror { name, namespace, concurrency, probe: probe.clone(), gate: gate.clone() }
}

fn runtime() -> Runtime {
    Runtime::builder()
        .backoff(Backoff { initial: Duration::from_secs(1), jitter: 0.0, ..Backoff::default() })
        .start()
}

async fn mirrored(state: &State, namespace: &str, id: &str) -> Option<String> {
    state
        .get_typed::<StrSpec>(&Pointer::typed::<StrSpec>(namespace, id))
        .await
        .ok()
        .map(|s| s.into_spec().0)
}

#[actix::test]
async fn mirrors_every_key_through_failures_panics_and_requeues() {
    tokio::time::pause();
    let runtime = runtime();
    let state = runtime.state();
    let probe = Arc::new(Probe::default());
    let (_open, gate) = watch::channel(true);
    let ids: Vec<String> = (0..12)
        .map(|i| format!("plain{i}"))
        .chain(
            ["fail-a", "fail-b", "panic-a", "requeue-a", "cx-requeue-a", "terminal-a"]
                .map(String::from),
        )
        .collect();
    for (n, id) in ids.iter().enumerate() {
        state.create(Resource::new(NS, id.as_str(), IntSpec(n as i64)), None).await.unwrap();
    }
    runtime.register(mirror("Mirror", NS, 4, &probe, &gate)).await.unwrap();
    runtime.settled().await;
    assert_eq!(probe.attempts("Mirror/requeue-a"), 1, "a requested delay is not pending work");
    assert_eq!(probe.attempts("Mirror/cx-requeue-a"), 1);
    tokio::time::advance(Duration::from_secs(11)).await;
    runtime.settled().await;

    for (n, id) in ids.iter().enumerate() {
        let expected = (!id.starts_with("terminal")).then(|| n.to_string());
        assert_eq!(mirrored(&state, NS, id).await, expected, "{id}");
    }
    assert_eq!(probe.attempts("Mirror/fail-a"), 3, "two failures, then success");
    assert_eq!(probe.attempts("Mirror/panic-a"), 2, "a panic is retried");
    assert_eq!(probe.attempts("Mirror/requeue-a"), 2, "requeued once");
    assert_eq!(probe.attempts("Mirror/cx-requeue-a"), 2, "cx.requeue_after requeues the key too");
    assert_eq!(probe.attempts("Mirror/terminal-a"), 1, "never retried");
    assert!(probe.max.load(Ordering::SeqCst) <= 4);

    let m = &runtime.metrics().await[0];
    assert_eq!(m.panics, 1);
    assert_eq!(m.errors, 5, "2 + 2 failures, 1 terminal");
    assert_eq!(m.retries, 5, "every retriable failure is retried");
    assert_eq!(m.restarts, 1, "the panic replaced the instance with a fresh one");
    assert_eq!(m.terminal_errors, 1);
    let q = m.queue.as_ref().expect("queue metrics");
    assert_eq!(q.retries, 5);
    assert_eq!(q.depth, 0);
    assert_eq!(
        q.reconcile_latency.count,
        probe.attempts.lock().unwrap().values().sum::<usize>() as u64
    );
    assert_eq!(m.status, ControllerStatus::Running);

    // Changes and removals flow too.
    state
        .modify(
            &Pointer::typed::<IntSpec>(NS, "plain0"),
            |r: &mut Resource<IntSpec>| r.spec_mut().0 = 100,
            None,
        )
        .await
        .unwrap();
    state.destroy(&Pointer::typed::<IntSpec>(NS, "plain1"), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(mirrored(&state, NS, "plain0").await.as_deref(), Some("100"));
    assert_eq!(mirrored(&state, NS, "plain1").await, None);
}

#[actix::test]
async fn a_slow_key_does_not_block_the_others() {
    let runtime = runtime();
    let state = runtime.state();
    let probe = Arc::new(Probe::default());
    let (open, gate) = watch::channel(false);
    runtime.register(mirror("Mirror", NS, 4, &probe, &gate)).await.unwrap();
    let mut outputs = state
        .watch_kind_stream(&Kind::of::<StrSpec>(NS), LabelQuery::all(), &Default::default())
        .await
        .unwrap();
    state.create(Resource::new(NS, "slow", IntSpec(0)), None).await.unwrap();
    for i in 0..10 {
        state.create(Resource::new(NS, format!("k{i}"), IntSpec(i)), None).await.unwrap();
    }
    let mut done = HashSet::new();
    while done.len() < 10 {
        if let Some(Event::Created(r)) = outputs.next().await {
            done.insert(r.id().to_owned());
        }
    }
    assert!(!done.contains("slow"));
    assert_eq!(probe.current.load(Ordering::SeqCst), 1, "only the slow key is still running");
    open.send_replace(true);
    runtime.settled().await;
    assert_eq!(mirrored(&state, NS, "slow").await.as_deref(), Some("0"));
}

#[actix::test]
async fn per_controller_concurrency_is_respected() {
    let runtime = Runtime::builder().worker_pool(64).start();
    let state = runtime.state();
    let probe = Arc::new(Probe::default());
    let (open, gate) = watch::channel(false);
    for i in 0..10 {
        state.create(Resource::new(NS, format!("gated{i}"), IntSpec(i)), None).await.unwrap();
    }
    runtime.register(mirror("Mirror", NS, 2, &probe, &gate)).await.unwrap();
    // Let the host hand out everything it may.
    for _ in 0..5 {
        state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap();
    }
    assert_eq!(probe.current.load(Ordering::SeqCst), 2);
    open.send_replace(true);
    runtime.settled().await;
    assert_eq!(probe.max.load(Ordering::SeqCst), 2);
    assert_eq!(probe.attempts.lock().unwrap().len(), 10);
}

#[actix::test]
async fn the_shared_pool_cap_holds_across_two_controllers() {
    let runtime = Runtime::builder().worker_pool(3).start();
    let state = runtime.state();
    let probe = Arc::new(Probe::default());
    let (open, gate) = watch::channel(false);
    for i in 0..8 {
        state.create(Resource::new("a", format!("gated{i}"), IntSpec(i)), None).await.unwrap();
        state.create(Resource::new("b", format!("gated{i}"), IntSpec(i)), None).await.unwrap();
    }
    runtime.register(mirror("A", "a", 4, &probe, &gate)).await.unwrap();
    runtime.register(mirror("B", "b", 4, &probe, &gate)).await.unwrap();
    for _ in 0..5 {
        state.list(&Kind::of::<IntSpec>("a"), &LabelQuery::all()).await.unwrap();
    }
    assert_eq!(probe.current.load(Ordering::SeqCst), 3, "the pool allows three in all");
    open.send_replace(true);
    runtime.settled().await;
    assert_eq!(probe.max.load(Ordering::SeqCst), 3);
    for ns in ["a", "b"] {
        for i in 0..8 {
            assert_eq!(mirrored(&state, ns, &format!("gated{i}")).await, Some(i.to_string()));
        }
    }
}

/// Primary: strings; mapped: integers with the same id. Writes "<str>=<int>".
struct Joiner;

impl QueueController for Joiner {
    fn name(&self) -> &str {
        "Joiner"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<StrSpec>(NS), Input::mapped::<IntSpec>(NS)],
            outputs: vec![Output::exclusive::<SentenceSpec>()],
            concurrency: 2,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let Ok(s) = cx.get_typed::<StrSpec>(ptr).await else {
            return Ok(Outcome::Done);
        };
        let n = cx
            .get_typed::<IntSpec>(&Pointer::typed::<IntSpec>(NS, ptr.id()))
            .await
            .map(|i| i.spec().0.to_string())
            .unwrap_or_else(|_| "?".into());
        let text = format!("{}={n}", s.spec().0);
        cx.modify(
            &Pointer::typed::<SentenceSpec>(NS, ptr.id()),
            move |o: &mut Resource<SentenceSpec>| o.spec_mut().0 = text.clone(),
        )
        .await?;
        Ok(Outcome::Done)
    }
}

async fn joined(state: &State, id: &str) -> String {
    state
        .get_typed::<SentenceSpec>(&Pointer::typed::<SentenceSpec>(NS, id))
        .await
        .unwrap()
        .into_spec()
        .0
}

#[actix::test]
async fn a_mapped_input_change_reconciles_the_primaries_it_maps_to() {
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new(NS, "x", StrSpec("answer".into())), None).await.unwrap();
    runtime.register(|| Joiner).await.unwrap();
    runtime.settled().await;
    assert_eq!(joined(&state, "x").await, "answer=?");
    state.create(Resource::new(NS, "x", IntSpec(42)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(joined(&state, "x").await, "answer=42");
    // A mapped change with no matching primary reconciles a missing key: harmless.
    state.create(Resource::new(NS, "y", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert!(state.get(&Pointer::typed::<SentenceSpec>(NS, "y")).await.is_err());
}

#[actix::test]
async fn a_queue_handle_pushes_keys_from_any_source() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let probe = Arc::new(Probe::default());
    let (_open, gate) = watch::channel(true);
    let handle = runtime.register(mirror("Mirror", NS, 1, &probe, &gate)).await.unwrap();
    assert_eq!(handle.name(), "Mirror");
    runtime.settled().await;
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(probe.attempts("Mirror/a"), 1);
    handle.enqueue(&Pointer::typed::<IntSpec>(NS, "a")).await.unwrap();
    runtime.settled().await;
    assert_eq!(probe.attempts("Mirror/a"), 2, "an external trigger reconciles again");
    let e = handle.enqueue(&Pointer::typed::<StrSpec>(NS, "a")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
}

#[actix::test]
async fn stop_lets_in_flight_reconciles_finish() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let probe = Arc::new(Probe::default());
    let (open, gate) = watch::channel(false);
    state.create(Resource::new(NS, "slow", IntSpec(5)), None).await.unwrap();
    runtime.register(mirror("Mirror", NS, 1, &probe, &gate)).await.unwrap();
    state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap();
    let stopping = {
        let runtime = runtime.clone();
        actix::spawn(async move { runtime.stop().await })
    };
    open.send_replace(true);
    stopping.await.unwrap();
    assert_eq!(
        mirrored(&state, NS, "slow").await.as_deref(),
        Some("5"),
        "the in-flight reconcile finished"
    );
    assert_eq!(runtime.metrics().await[0].status, ControllerStatus::Stopped);
}

#[actix::test]
async fn queue_registration_rules() {
    struct Bad(QueueSettings);
    impl QueueController for Bad {
        fn name(&self) -> &str {
            "Bad"
        }
        fn settings(&self) -> QueueSettings {
            self.0.clone()
        }
        async fn reconcile(
            &self,
            _: &ReconcileContext,
            _: &Pointer,
        ) -> Result<Outcome, ReconcileError> {
            Ok(Outcome::Done)
        }
    }
    let runtime = Runtime::start();
    let settings =
        |inputs: Vec<Input>, concurrency| QueueSettings { inputs, outputs: vec![], concurrency };
    let zero = settings(vec![Input::primary::<IntSpec>(NS)], 0);
    let e = runtime.register(move || Bad(zero.clone())).await.unwrap_err();
    assert!(matches!(e, RegistrationError::Invalid { .. }), "{e}");
    let no_primary = settings(vec![Input::mapped::<IntSpec>(NS)], 1);
    let e = runtime.register(move || Bad(no_primary.clone())).await.unwrap_err();
    assert!(matches!(e, RegistrationError::Invalid { .. }), "{e}");
    let weak = settings(vec![Input::primary::<IntSpec>(NS), Input::weak::<StrSpec>(NS)], 1);
    let e = runtime.register(move || Bad(weak.clone())).await.unwrap_err();
    assert!(matches!(e, RegistrationError::InvalidInputKind { .. }), "{e}");
    let ok = settings(vec![Input::primary::<IntSpec>(NS)], 1);
    runtime.register(move || Bad(ok.clone())).await.unwrap();
}

/// Counts its instances; the first reconcile of the first instance panics
/// while it holds the instance's lock (poisoning it: that instance could
/// never reconcile again).
struct Poisoned {
    built: usize,
    lock: Mutex<()>,
    runs: Arc<Mutex<Vec<(String, usize)>>>,
}

impl QueueController for Poisoned {
    fn name(&self) -> &str {
        "Poisoned"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<IntSpec>(NS)],
            vec![Output::exclusive::<StrSpec>()],
        )
    }
    async fn reconcile(
        &self,
        _: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let _held = self.lock.lock().expect("a fresh instance's lock is not poisoned");
        self.runs.lock().unwrap().push((ptr.id().to_string(), self.built));
        if self.built == 1 {
            panic!("the first instance panics holding its lock");
        }
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn a_panic_replaces_a_queue_controllers_instance_and_the_retry_runs_on_the_fresh_one() {
    tokio::time::pause();
    let runtime = runtime();
    let state = runtime.state();
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    let built = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (b, r) = (built.clone(), runs.clone());
    runtime
        .register(move || Poisoned {
            built: b.fetch_add(1, Ordering::SeqCst) + 1,
            lock: Mutex::new(()),
            runs: r.clone(),
        })
        .await
        .unwrap();
    runtime.settled().await;
    assert_eq!(*runs.lock().unwrap(), [("a".to_string(), 1), ("a".to_string(), 2)]);
    assert_eq!(built.load(Ordering::SeqCst), 2, "one fresh instance, built after the panic");
    let m = &runtime.metrics().await[0];
    assert_eq!((m.panics, m.restarts, m.retries), (1, 1, 1));
    assert_eq!(m.status, ControllerStatus::Running);
}
