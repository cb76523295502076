//! Blocking reconciles: a controller wrapped in `Blocking` reconciles on the
//! blocking thread pool, never on an arbiter, and keeps every guarantee.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::ThreadId;
use std::time::Duration;

use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::execution::Blocking;
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;
use tokio::sync::watch;

/// Mirrors integers to strings; records the thread of each reconcile.
struct Mirror {
    threads: Arc<Mutex<HashSet<ThreadId>>>,
}

impl Controller for Mirror {
    fn name(&self) -> &str {
        "Mirror"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<StrSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        self.threads.lock().unwrap().insert(std::thread::current().id());
        for int in cx.list_typed::<IntSpec>(NS, &LabelQuery::all()).await? {
            let text = int.spec().0.to_string();
            cx.modify(
                &Pointer::typed::<StrSpec>(NS, int.id()),
                move |s: &mut Resource<StrSpec>| s.spec_mut().0 = text.clone(),
            )
            .await?;
        }
        Ok(())
    }
}

async fn text(state: &State, id: &str) -> String {
    state.get_typed::<StrSpec>(&Pointer::typed::<StrSpec>(NS, id)).await.unwrap().spec().0.clone()
}

#[actix::test]
async fn a_blocking_controller_reconciles_off_the_arbiter_thread() {
    let runtime = Runtime::start();
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let seen = threads.clone();
    runtime.register(move || Blocking::new(Mirror { threads: seen.clone() })).await.unwrap();
    runtime.state().create(Resource::new(NS, "a", IntSpec(7)), None).await.unwrap();
    runtime.settled().await;

    assert_eq!(text(&runtime.state(), "a").await, "7");
    let threads = threads.lock().unwrap();
    assert!(!threads.is_empty());
    assert!(!threads.contains(&std::thread::current().id()), "a reconcile ran on the arbiter");
}

/// Reconciles each integer key on a pool thread; checks that no key runs
/// twice at once and records the threads.
struct QMirror {
    threads: Arc<Mutex<HashSet<ThreadId>>>,
    in_flight: Arc<Mutex<HashSet<String>>>,
}

impl QueueController for QMirror {
    fn name(&self) -> &str {
        "QMirror"
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
        self.threads.lock().unwrap().insert(std::thread::current().id());
        assert!(self.in_flight.lock().unwrap().insert(ptr.id().to_owned()), "{ptr} twice at once");
        let int = cx.get_typed::<IntSpec>(ptr).await;
        self.in_flight.lock().unwrap().remove(ptr.id());
        let text = int?.spec().0.to_string();
        cx.modify(&Pointer::typed::<StrSpec>(NS, ptr.id()), move |s: &mut Resource<StrSpec>| {
            s.spec_mut().0 = text.clone()
        })
        .await?;
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn a_blocking_queue_controller_reconciles_every_key_off_the_arbiter_thread() {
    let runtime = Runtime::start();
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let (seen, in_flight) = (threads.clone(), Arc::new(Mutex::new(HashSet::new())));
    runtime
        .register(move || {
            Blocking::new(QMirror { threads: seen.clone(), in_flight: in_flight.clone() })
        })
        .await
        .unwrap();
    let state = runtime.state();
    for round in 0..3 {
        for i in 0..50 {
            let id = format!("k{i}");
            state
                .modify(
                    &Pointer::typed::<IntSpec>(NS, &id),
                    move |r: &mut Resource<IntSpec>| r.spec_mut().0 = i * 10 + round,
                    None,
                )
                .await
                .unwrap();
        }
    }
    runtime.settled().await;

    for i in 0..50 {
        assert_eq!(text(&state, &format!("k{i}")).await, (i * 10 + 2).to_string());
    }
    assert!(!threads.lock().unwrap().contains(&std::thread::current().id()));
}

/// Blocks its thread until the quiet controller has reconciled (a
/// synchronous channel, as a device or a C library would block).
struct WaitsForQuiet {
    quiet_ran: Arc<Mutex<mpsc::Receiver<()>>>,
    outcome: watch::Sender<Option<bool>>,
}

impl Controller for WaitsForQuiet {
    fn name(&self) -> &str {
        "WaitsForQuiet"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>("blocking")]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        if cx.list_typed::<IntSpec>("blocking", &LabelQuery::all()).await?.is_empty() {
            return Ok(());
        }
        // A hang guard, not a timing assertion: on an arbiter this would
        // block the quiet controller for good.
        let ran = self.quiet_ran.lock().unwrap().recv_timeout(Duration::from_secs(60)).is_ok();
        self.outcome.send_replace(Some(ran));
        Ok(())
    }
}

/// Signals each reconcile that sees a `StrSpec` in "quiet".
struct Signals(mpsc::Sender<()>);

impl Controller for Signals {
    fn name(&self) -> &str {
        "Signals"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<StrSpec>("quiet")]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        if !cx.list_typed::<StrSpec>("quiet", &LabelQuery::all()).await?.is_empty() {
            let _ = self.0.send(());
        }
        Ok(())
    }
}

#[actix::test]
async fn a_blocked_reconcile_leaves_the_other_controllers_running() {
    let runtime = Runtime::start();
    let (tx, rx) = mpsc::channel();
    let rx = Arc::new(Mutex::new(rx));
    let (outcome_tx, mut outcome) = watch::channel(None);
    runtime
        .register(move || {
            Blocking::new(WaitsForQuiet { quiet_ran: rx.clone(), outcome: outcome_tx.clone() })
        })
        .await
        .unwrap();
    runtime.register(move || Signals(tx.clone())).await.unwrap();
    runtime.settled().await;

    let state = runtime.state();
    state.create(Resource::new("blocking", "b", IntSpec(1)), None).await.unwrap();
    state.create(Resource::new("quiet", "q", StrSpec("q".into())), None).await.unwrap();
    let ran = outcome.wait_for(Option::is_some).await.unwrap().unwrap();
    assert!(ran, "the quiet controller did not run while the other one blocked");
    runtime.settled().await;
}

/// Panics in the first instance's first reconcile; each instance counts its
/// reconciles and asks for a requeue after its first one.
struct PanicsOnce {
    built: usize,
    reconciles: usize,
    total: Arc<AtomicUsize>,
}

impl Controller for PanicsOnce {
    fn name(&self) -> &str {
        "PanicsOnce"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<StrSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        self.reconciles += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
        if self.built == 1 {
            panic!("the first instance panics");
        }
        if self.reconciles == 1 {
            cx.requeue_after(Duration::from_millis(5));
        }
        let text = format!("instance {} reconcile {}", self.built, self.reconciles);
        cx.modify(&Pointer::typed::<StrSpec>(NS, "out"), move |s: &mut Resource<StrSpec>| {
            s.spec_mut().0 = text.clone()
        })
        .await?;
        Ok(())
    }
}

#[actix::test]
async fn a_blocking_reconcile_that_panics_is_retried_on_a_fresh_instance_and_requeues_work() {
    let runtime = Runtime::builder()
        .backoff(Backoff { initial: Duration::from_millis(1), ..Backoff::default() })
        .start();
    let built = Arc::new(AtomicUsize::new(0));
    let total = Arc::new(AtomicUsize::new(0));
    let (b, t) = (built.clone(), total.clone());
    runtime
        .register(move || {
            let built = b.fetch_add(1, Ordering::SeqCst) + 1;
            Blocking::new(PanicsOnce { built, reconciles: 0, total: t.clone() })
        })
        .await
        .unwrap();
    runtime.idle(Duration::from_secs(60)).await.unwrap();

    // The factory ran at registration and after the panic; the second
    // instance's requeue (set on the pool thread) came back and ran.
    assert_eq!(built.load(Ordering::SeqCst), 2);
    assert_eq!(text(&runtime.state(), "out").await, "instance 2 reconcile 2");
    assert_eq!(total.load(Ordering::SeqCst), 3);
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[0].panics, 1);
}

/// Requeues itself an hour later, each reconcile on the blocking pool.
struct Hourly;

impl Controller for Hourly {
    fn name(&self) -> &str {
        "Hourly"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        cx.requeue_after(Duration::from_secs(3_600));
        Ok(())
    }
}

#[actix::test]
async fn a_blocking_controller_runs_under_the_test_kits_paused_clock() {
    tokio::time::pause();
    let h = cosi_runtime::testing::Harness::new(|| Blocking::new(Hourly)).await;
    h.settle().await;
    assert_eq!(h.reconciles().await, 1);
    h.advance(Duration::from_secs(3_600)).await;
    assert_eq!(h.reconciles().await, 2);
    h.advance(Duration::from_secs(2 * 3_600)).await;
    assert_eq!(h.reconciles().await, 4);
}
