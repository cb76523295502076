//! Supervision: errors and panics are retried with backoff (virtual time), a
//! panic gets a fresh instance, neighbours never notice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::controllers::int_to_str;
use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::controller::ControllerStatus;
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;
use futures::StreamExt;
use tokio::time::Instant;

fn backoff() -> Backoff {
    Backoff {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(60),
        multiplier: 2.0,
        jitter: 0.0,
    }
}

/// Fails (or panics) while `failures_left` > 0, then writes "done".
struct Flaky {
    panics: bool,
    failures_left: Arc<AtomicUsize>,
    keep_failing: Arc<AtomicBool>,
}

impl Controller for Flaky {
    fn name(&self) -> &str {
        "Flaky"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<SentenceSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let counted = self
            .failures_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if counted || self.keep_failing.load(Ordering::SeqCst) {
            if self.panics {
                panic!("flaky controller panics on purpose");
            }
            return Err("flaky controller fails on purpose".into());
        }
        cx.modify(
            &Pointer::typed::<SentenceSpec>("flaky", "done"),
            |s: &mut Resource<SentenceSpec>| s.spec_mut().0 = "done".into(),
        )
        .await?;
        Ok(())
    }
}

fn flaky(
    panics: bool,
    failures: usize,
) -> (impl Fn() -> Flaky + Send + 'static, Arc<AtomicUsize>, Arc<AtomicBool>) {
    let left = Arc::new(AtomicUsize::new(failures));
    let keep = Arc::new(AtomicBool::new(false));
    let instances = Arc::new(AtomicUsize::new(0));
    let (l, k, i) = (left.clone(), keep.clone(), instances.clone());
    let factory = move || {
        i.fetch_add(1, Ordering::SeqCst);
        Flaky { panics, failures_left: l.clone(), keep_failing: k.clone() }
    };
    (factory, instances, keep)
}

async fn done(state: &State) -> bool {
    state.get(&Pointer::typed::<SentenceSpec>("flaky", "done")).await.is_ok()
}

#[actix::test]
async fn an_erroring_controller_is_retried_with_backoff_and_converges() {
    tokio::time::pause();
    let runtime = Runtime::builder().backoff(backoff()).start();
    let (factory, instances, _) = flaky(false, 3);
    let start = Instant::now();
    runtime.register(factory).await.unwrap();
    runtime.settled().await;
    assert!(done(&runtime.state()).await);
    let m = &runtime.metrics().await[0];
    assert_eq!((m.errors, m.panics, m.retries, m.restarts, m.reconciles), (3, 0, 3, 0, 1));
    assert_eq!(m.status, ControllerStatus::Running);
    // Backoff 1 s, 2 s, 4 s in virtual time.
    assert!(start.elapsed() >= Duration::from_secs(7), "{:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(8), "{:?}", start.elapsed());
    assert_eq!(instances.load(Ordering::SeqCst), 1, "an error keeps the instance");
}

#[actix::test]
async fn a_panicking_controller_gets_a_fresh_instance_and_converges() {
    tokio::time::pause();
    let runtime = Runtime::builder().backoff(backoff()).start();
    let (factory, instances, _) = flaky(true, 2);
    runtime.register(factory).await.unwrap();
    runtime.settled().await;
    assert!(done(&runtime.state()).await);
    let m = &runtime.metrics().await[0];
    assert_eq!((m.errors, m.panics, m.retries, m.restarts, m.reconciles), (0, 2, 2, 2, 1));
    assert_eq!(
        instances.load(Ordering::SeqCst),
        3,
        "one instance at registration, a fresh one after each panic"
    );
}

#[actix::test]
async fn a_neighbour_keeps_reconciling_while_another_controller_panics() {
    tokio::time::pause();
    let runtime = Runtime::builder().backoff(backoff()).start();
    let state = runtime.state();
    let (factory, _, keep_failing) = flaky(true, 0);
    keep_failing.store(true, Ordering::SeqCst);
    runtime.register(factory).await.unwrap();
    runtime.register(int_to_str).await.unwrap();

    let mut outputs = state
        .watch_kind_stream(&Kind::of::<StrSpec>(NS), LabelQuery::all(), &Default::default())
        .await
        .unwrap();
    for n in 1..=3 {
        state
            .modify(
                &Pointer::typed::<IntSpec>(NS, "a"),
                move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n,
                None,
            )
            .await
            .unwrap();
        loop {
            let event = outputs.next().await.unwrap();
            let value = event.resource().unwrap().typed::<StrSpec>().unwrap().into_spec().0;
            if value == n.to_string() {
                break;
            }
        }
    }
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[0].status, ControllerStatus::BackingOff);
    assert!(metrics[0].panics >= 1);
    assert_eq!(metrics[1].errors + metrics[1].panics, 0);

    keep_failing.store(false, Ordering::SeqCst);
    runtime.settled().await;
    assert!(done(&state).await);
    assert_eq!(runtime.metrics().await[0].status, ControllerStatus::Running);
}

#[actix::test]
async fn requeue_after_reconciles_again_when_the_time_comes() {
    struct Ticker(Arc<AtomicUsize>);
    impl Controller for Ticker {
        fn name(&self) -> &str {
            "Ticker"
        }
        fn inputs(&self) -> Vec<Input> {
            vec![]
        }
        fn outputs(&self) -> Vec<Output> {
            vec![]
        }
        async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
            if self.0.fetch_add(1, Ordering::SeqCst) < 2 {
                cx.requeue_after(Duration::from_secs(30));
            }
            Ok(())
        }
    }
    tokio::time::pause();
    let runtime = Runtime::start();
    let ticks = Arc::new(AtomicUsize::new(0));
    let t = ticks.clone();
    runtime.register(move || Ticker(t.clone())).await.unwrap();
    runtime.settled().await;
    assert_eq!(ticks.load(Ordering::SeqCst), 1, "a pending requeue is not pending work");
    tokio::time::advance(Duration::from_secs(29)).await;
    runtime.settled().await;
    assert_eq!(ticks.load(Ordering::SeqCst), 1);
    // (tokio rounds timer deadlines up to the next millisecond)
    tokio::time::advance(Duration::from_millis(1_001)).await;
    runtime.settled().await;
    assert_eq!(ticks.load(Ordering::SeqCst), 2);
    tokio::time::advance(Duration::from_millis(30_001)).await;
    runtime.settled().await;
    tokio::time::advance(Duration::from_secs(300)).await;
    runtime.settled().await;
    assert_eq!(ticks.load(Ordering::SeqCst), 3, "no requeue asked after the third");
}
