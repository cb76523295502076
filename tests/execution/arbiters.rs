//! Arbiters: where controllers run, and that every guarantee holds when they
//! run on threads other than the state's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use crate::common::controllers::{int_to_str, str_to_sentence};
use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::Error;
use cosi_runtime::controller::ControllerStatus;
use cosi_runtime::execution::Placement;
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::RegistrationError;
use tokio::sync::watch;

/// Records the thread of every reconcile; reads nothing, writes nothing.
struct Where {
    name: &'static str,
    threads: Arc<Mutex<Vec<ThreadId>>>,
}

impl Controller for Where {
    fn name(&self) -> &str {
        self.name
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        self.threads.lock().unwrap().push(std::thread::current().id());
        Ok(())
    }
}

/// Registers `Where` controllers named `names` placed as given, settles, and
/// returns the thread each first reconciled on.
async fn threads_of(runtime: &Runtime, placed: &[(&'static str, Placement)]) -> Vec<ThreadId> {
    let mut threads = Vec::new();
    for &(name, placement) in placed {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        runtime.register(move || Where { name, threads: s.clone() }).on(placement).await.unwrap();
        threads.push(seen);
    }
    runtime.settled().await;
    threads.iter().map(|t| t.lock().unwrap()[0]).collect()
}

#[actix::test]
async fn spread_controllers_run_round_robin_on_threads_other_than_the_states() {
    let runtime = Runtime::builder().arbiters(2).start();
    let home = std::thread::current().id();
    let t = threads_of(
        &runtime,
        &[("A", Placement::Spread), ("B", Placement::Spread), ("C", Placement::Spread)],
    )
    .await;
    assert!(t.iter().all(|t| *t != home), "a spread controller ran on the home arbiter");
    assert_ne!(t[0], t[1]);
    assert_eq!(t[0], t[2], "the third controller went back to the first arbiter");
}

#[actix::test]
async fn home_placed_controllers_run_on_the_states_thread() {
    let runtime = Runtime::builder().arbiters(2).start();
    let home = std::thread::current().id();
    let t = threads_of(&runtime, &[("A", Placement::Home), ("B", Placement::default())]).await;
    assert_eq!(t, vec![home, home]);
}

#[actix::test]
async fn controllers_given_the_same_arbiter_share_its_thread() {
    let runtime = Runtime::builder().arbiters(2).start();
    let t = threads_of(
        &runtime,
        &[("A", Placement::Arbiter(1)), ("B", Placement::Arbiter(0)), ("C", Placement::Arbiter(3))],
    )
    .await;
    assert_eq!(t[0], t[2], "arbiter 3 of 2 is arbiter 1");
    assert_ne!(t[0], t[1]);
}

#[actix::test]
async fn a_single_arbiter_runtime_runs_every_controller_on_the_home_thread() {
    let runtime = Runtime::builder().arbiters(1).placement(Placement::Spread).start();
    let home = std::thread::current().id();
    let t = threads_of(
        &runtime,
        &[("A", Placement::Spread), ("B", Placement::Arbiter(3)), ("C", Placement::default())],
    )
    .await;
    assert_eq!(t, vec![home; 3]);
}

#[actix::test]
async fn a_refused_registration_on_another_arbiter_leaves_nothing_behind() {
    let runtime = Runtime::builder().arbiters(2).placement(Placement::Spread).start();
    runtime.register(int_to_str).await.unwrap();
    let again = runtime.register(int_to_str).await;
    assert!(matches!(again, Err(RegistrationError::DuplicateController { .. })), "{again:?}");
    let panicked = runtime.register(|| -> Where { panic!("the factory panics") }).await;
    assert!(matches!(panicked, Err(RegistrationError::Panicked { .. })), "{panicked:?}");
    runtime.register(str_to_sentence).await.unwrap();
    let names: Vec<_> = runtime.metrics().await.into_iter().map(|m| m.controller).collect();
    assert_eq!(names, vec!["IntToStr", "StrToSentence"]);
}

#[actix::test]
async fn settled_waits_for_work_on_every_arbiter() {
    let runtime = Runtime::builder().arbiters(2).placement(Placement::Spread).start();
    runtime.register(int_to_str).await.unwrap();
    runtime.register(str_to_sentence).await.unwrap();
    let state = runtime.state();
    for round in 0..3 {
        for i in 0..50 {
            state
                .modify(
                    &Pointer::typed::<IntSpec>(NS, format!("n{i}")),
                    move |r: &mut Resource<IntSpec>| r.spec_mut().0 = 100 * round + i,
                    None,
                )
                .await
                .unwrap();
        }
        runtime.settled().await;
        // Read at once: nothing may still be on its way on another thread.
        let sentences = state.list_typed::<SentenceSpec>(NS, &LabelQuery::all()).await.unwrap();
        assert_eq!(sentences.len(), 50);
        for s in sentences {
            let i: i64 = s.id()[1..].parse().unwrap();
            assert_eq!(s.spec().0, format!("{} sentence", 100 * round + i), "round {round}");
        }
    }
}

/// Blocks each reconcile until the gate opens; counts reconciles.
struct Gated {
    gate: watch::Receiver<bool>,
    reconciles: Arc<AtomicUsize>,
}

impl Controller for Gated {
    fn name(&self) -> &str {
        "Gated"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        self.gate.wait_for(|open| *open).await?;
        Ok(())
    }
}

#[actix::test]
async fn changes_to_a_controller_on_another_arbiter_coalesce_while_it_reconciles() {
    let runtime = Runtime::builder().arbiters(2).start();
    let (open, gate) = watch::channel(false);
    let reconciles = Arc::new(AtomicUsize::new(0));
    let r = reconciles.clone();
    runtime
        .register(move || Gated { gate: gate.clone(), reconciles: r.clone() })
        .on(Placement::Spread)
        .await
        .unwrap();
    let state = runtime.state();
    for i in 0..1_000 {
        state
            .modify(
                &Pointer::typed::<IntSpec>(NS, "x"),
                move |r: &mut Resource<IntSpec>| r.spec_mut().0 = i,
                None,
            )
            .await
            .unwrap();
    }
    open.send_replace(true);
    runtime.settled().await;
    // The first reconcile (blocked), then one for everything that came
    // meanwhile: 2 when the other thread handled every change before the gate
    // opened. On a loaded machine some changes are still on their way to that
    // thread when it opens (a watch window in flight, then its coalesced
    // backlog), and each such batch is one more reconcile; never one per change.
    let n = reconciles.load(Ordering::SeqCst);
    assert!((2..10).contains(&n), "1,000 changes took {n} reconciles");
}

/// Writes a type it did not declare.
struct Trespasser {
    denied: Arc<Mutex<Option<Error>>>,
}

impl Controller for Trespasser {
    fn name(&self) -> &str {
        "Trespasser"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<StrSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let written = cx.create(Resource::new(NS, "n", IntSpec(1))).await;
        *self.denied.lock().unwrap() = written.err();
        Ok(())
    }
}

#[actix::test]
async fn access_is_checked_for_a_controller_on_another_arbiter() {
    let runtime = Runtime::builder().arbiters(2).start();
    let denied = Arc::new(Mutex::new(None));
    let d = denied.clone();
    runtime.register(move || Trespasser { denied: d.clone() }).on(Placement::Spread).await.unwrap();
    runtime.settled().await;
    let denied = denied.lock().unwrap().take();
    assert!(matches!(denied, Some(Error::AccessDenied { .. })), "{denied:?}");
}

#[actix::test]
async fn stop_stops_controllers_on_every_arbiter() {
    let runtime = Runtime::builder().arbiters(2).placement(Placement::Spread).start();
    runtime.register(int_to_str).await.unwrap();
    runtime.register(str_to_sentence).await.unwrap();
    runtime.settled().await;
    runtime.stop().await;
    let statuses: Vec<_> = runtime.metrics().await.into_iter().map(|m| m.status).collect();
    assert_eq!(statuses, vec![ControllerStatus::Stopped; 2]);
    let late = runtime.register(|| Where { name: "Late", threads: Arc::default() }).await;
    assert!(matches!(late, Err(RegistrationError::Stopped { .. })), "{late:?}");
}

#[actix::test]
async fn the_test_kit_can_run_its_controller_on_an_arbiter_of_its_own() {
    let home = std::thread::current().id();
    let threads = Arc::new(Mutex::new(Vec::new()));
    let t = threads.clone();
    let h = cosi_runtime::testing::Harness::builder()
        .own_arbiter()
        .start(move || Where { name: "Where", threads: t.clone() })
        .await
        .unwrap();
    h.settle().await;
    let threads = threads.lock().unwrap().clone();
    assert!(!threads.is_empty() && threads.iter().all(|t| *t != home), "{threads:?}");
}

/// Panics in every reconcile.
struct AlwaysPanics;

impl Controller for AlwaysPanics {
    fn name(&self) -> &str {
        "AlwaysPanics"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        panic!("execution_arbiters: AlwaysPanics panics on purpose");
    }
}

#[actix::test]
async fn a_controller_on_another_arbiter_past_its_restart_intensity_stops_the_runtime() {
    use cosi_runtime::supervisor::{Backoff, Intensity, OnExceeded, StopReason};
    use std::time::Duration;
    let runtime = Runtime::builder()
        .arbiters(2)
        .backoff(Backoff { initial: Duration::from_millis(1), ..Backoff::default() })
        .restart_intensity(
            Intensity { max_restarts: 2, within: Duration::from_secs(600) },
            OnExceeded::StopRuntime,
        )
        .start();
    runtime.register(|| AlwaysPanics).on(Placement::Spread).await.unwrap();
    let reason = runtime.stopped().await;
    assert!(
        matches!(&reason, StopReason::ControllerFailed { controller, .. } if controller == "AlwaysPanics"),
        "{reason:?}"
    );
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[0].panics, 3, "the first run and two restarts");
}
