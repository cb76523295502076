//! `settled()` does not wait for delayed work that was asked for; `idle()`
//! does, with a bound (virtual time under the paused clock). A requeue at
//! zero delay is not delayed work: `settled()` waits for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{IntSpec, NS};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;

/// Requeues itself after `delay` (30 s unless said) until it has run `runs` times.
struct Ticker {
    count: Arc<AtomicUsize>,
    runs: usize,
    delay: Duration,
}

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
        if self.count.fetch_add(1, Ordering::SeqCst) + 1 < self.runs {
            cx.requeue_after(self.delay);
        }
        Ok(())
    }
}

async fn ticker(runs: usize) -> (Runtime, Arc<AtomicUsize>) {
    ticker_every(runs, Duration::from_secs(30)).await
}

async fn ticker_every(runs: usize, delay: Duration) -> (Runtime, Arc<AtomicUsize>) {
    tokio::time::pause();
    let runtime = Runtime::start();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    runtime.register(move || Ticker { count: c.clone(), runs, delay }).await.unwrap();
    (runtime, count)
}

#[actix::test]
async fn a_zero_requeue_of_a_plain_controller_is_pending_work_that_settled_waits_for() {
    let (runtime, count) = ticker_every(5, Duration::ZERO).await;
    let start = tokio::time::Instant::now();
    runtime.settled().await;
    assert_eq!(count.load(Ordering::SeqCst), 5, "settled: every requeue at zero has run");
    // No timer in between: the paused clock never had to move.
    assert_eq!(start.elapsed(), Duration::ZERO, "a zero requeue waits for no clock tick");
}

#[actix::test]
async fn idle_waits_for_requeue_timers_that_settled_does_not() {
    let (runtime, count) = ticker(4).await;
    runtime.settled().await;
    assert_eq!(count.load(Ordering::SeqCst), 1, "settled: the requeue is still to come");
    runtime.idle(Duration::from_secs(600)).await.unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 4, "idle: every requeue has run");
}

#[actix::test]
async fn idle_gives_up_after_its_bound_and_says_what_is_pending() {
    let (runtime, count) = ticker(usize::MAX).await;
    let err = runtime.idle(Duration::from_secs(100)).await.unwrap_err();
    assert_eq!(err.timers, 1, "{err}");
    assert!(err.to_string().contains("1 timers of delayed work"), "{err}");
    assert!((3..=5).contains(&count.load(Ordering::SeqCst)), "ran about every 30 s");
}

/// Records each key it reconciles; asks for the key again at once until it
/// has run `again` times in all.
struct Counter(Arc<AtomicUsize>, usize);

impl QueueController for Counter {
    fn name(&self) -> &str {
        "Counter"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![],
            concurrency: 1,
        }
    }
    async fn reconcile(
        &self,
        _: &ReconcileContext,
        _: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        if self.0.fetch_add(1, Ordering::SeqCst) + 1 < self.1 {
            return Ok(Outcome::RequeueAfter(Duration::ZERO));
        }
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn a_zero_requeue_of_a_queue_controller_is_pending_work_that_settled_waits_for() {
    tokio::time::pause();
    let runtime = Runtime::start();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let queue = runtime.register(move || Counter(c.clone(), 5)).await.unwrap();
    let start = tokio::time::Instant::now();
    queue.enqueue(&Pointer::typed::<IntSpec>(NS, "again")).await.unwrap();
    runtime.settled().await;
    assert_eq!(count.load(Ordering::SeqCst), 5, "settled: every requeue at zero has run");
    assert_eq!(start.elapsed(), Duration::ZERO, "a zero requeue waits for no clock tick");
}

#[actix::test]
async fn idle_waits_for_keys_enqueued_for_later() {
    tokio::time::pause();
    let runtime = Runtime::start();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let queue = runtime.register(move || Counter(c.clone(), 1)).await.unwrap();
    runtime.settled().await;
    queue
        .enqueue_after(&Pointer::typed::<IntSpec>(NS, "later"), Duration::from_secs(60))
        .await
        .unwrap();
    runtime.settled().await;
    assert_eq!(count.load(Ordering::SeqCst), 0, "settled: the key is not due yet");
    runtime.idle(Duration::from_secs(600)).await.unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 1, "idle: it has run");
}
