//! Failures that speak up: terminal errors end a plain controller at once,
//! `health()` reports attempts and last errors, and `settled_within` names
//! what is still busy instead of hanging. Time is tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{IntSpec, NS};
use cosi_runtime::controller::{
    ControllerStatus, Outcome, QueueController, QueueSettings, TerminalError,
};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;

/// Fails every reconcile: terminally, or with a retryable error.
struct Failing {
    terminal: bool,
    runs: Arc<AtomicUsize>,
}

impl Controller for Failing {
    fn name(&self) -> &str {
        "Failing"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if self.terminal {
            Err(TerminalError::new("the spec asks for an MTU of 12").into())
        } else {
            Err("the device is busy".into())
        }
    }
}

async fn failing(terminal: bool) -> (Runtime, Arc<AtomicUsize>) {
    tokio::time::pause();
    let runtime = Runtime::start();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    runtime.register(move || Failing { terminal, runs: r.clone() }).await.unwrap();
    (runtime, runs)
}

#[actix::test]
async fn a_terminal_error_fails_a_plain_controller_without_retries() {
    let (runtime, runs) = failing(true).await;
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.idle(Duration::from_secs(3600)).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "never retried, not even after an hour");
    let health = runtime.health().await;
    let c = &health.controllers[0];
    assert_eq!(c.status, ControllerStatus::Failed);
    assert_eq!(c.failures_in_a_row, 1);
    assert!(c.last_error.as_deref().is_some_and(|e| e.contains("MTU of 12")), "{c}");
    assert!(!health.is_healthy());
    assert_eq!(runtime.metrics().await[0].restarts, 0);
}

#[actix::test]
async fn health_reports_the_attempts_and_the_last_error_of_a_controller_backing_off() {
    let (runtime, runs) = failing(false).await;
    // Give up on settling after a virtual minute: the retries never end.
    let err = runtime.settled_within(Duration::from_secs(60)).await.unwrap_err();
    let tries = runs.load(Ordering::SeqCst) as u64;
    assert!(tries > 3, "retried with backoff meanwhile: {tries}");
    let text = err.to_string();
    assert!(text.contains("Failing") && text.contains("the device is busy"), "{text}");
    assert_eq!(err.busy.len(), 1, "{text}");
    let health = runtime.health().await;
    let c = &health.controllers[0];
    assert_eq!(c.status, ControllerStatus::BackingOff, "{c}");
    assert!(c.failures_in_a_row >= tries - 1, "{c} after {tries} runs");
    assert_eq!(health.unhealthy().count(), 1);
}

#[actix::test]
async fn a_settled_runtime_passes_settled_within_and_is_healthy() {
    tokio::time::pause();
    let runtime = Runtime::start();
    runtime.settled_within(Duration::from_secs(1)).await.unwrap();
    assert!(runtime.health().await.is_healthy());
}

/// A queue controller whose reconcile of each key is `outcome(key)`.
struct Keyed {
    name: &'static str,
    outcome: fn(&Pointer) -> Result<Outcome, ReconcileError>,
}

impl QueueController for Keyed {
    fn name(&self) -> &str {
        self.name
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
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        (self.outcome)(ptr)
    }
}

/// `FailsBadKeys`: `bad*` keys always fail, the others succeed.
fn fails_bad_keys() -> Keyed {
    Keyed {
        name: "FailsBadKeys",
        outcome: |ptr| {
            if ptr.id().starts_with("bad") {
                return Err(format!("{} has no route to its gateway", ptr.id()).into());
            }
            Ok(Outcome::Done)
        },
    }
}

/// `Hourly`: succeeds on every key and asks to run it again in an hour.
fn hourly() -> Keyed {
    Keyed { name: "Hourly", outcome: |_| Ok(Outcome::RequeueAfter(Duration::from_secs(3600))) }
}

#[actix::test]
async fn a_queue_key_that_keeps_failing_stays_in_health_while_other_keys_succeed() {
    tokio::time::pause();
    // A long first backoff: the failing key waits it out through the test.
    let (initial, max) = (Duration::from_secs(600), Duration::from_secs(600));
    let backoff = Backoff { initial, max, jitter: 0.0, ..Backoff::default() };
    let runtime = Runtime::builder().backoff(backoff).start();
    runtime.register(fails_bad_keys).await.unwrap();
    let state = runtime.state();
    state.create(Resource::new(NS, "bad-eth0", IntSpec(1)), None).await.unwrap();
    for i in 0..3 {
        state.create(Resource::new(NS, format!("good-{i}"), IntSpec(i)), None).await.unwrap();
    }
    // A key backing off is work still to do: the runtime does not settle
    // within a virtual minute, and says which controller holds it.
    let busy = runtime.settled_within(Duration::from_secs(60)).await.unwrap_err();
    assert!(busy.to_string().contains("FailsBadKeys"), "{busy}");
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[0].reconciles, 3, "the good keys succeeded after the failure");
    let health = runtime.health().await;
    let c = &health.controllers[0];
    assert_eq!(c.status, ControllerStatus::BackingOff, "{c}");
    assert_eq!(c.failures_in_a_row, 1, "the success of other keys does not clear it: {c}");
    let error = c.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("bad-eth0") && error.contains("no route to its gateway"), "{c}");
    assert!(!health.is_healthy());
}

#[actix::test]
async fn settled_within_names_what_holds_it_not_keys_waiting_for_their_time() {
    tokio::time::pause();
    let runtime = Runtime::start();
    runtime.register(fails_bad_keys).await.unwrap();
    runtime.register(hourly).await.unwrap();
    runtime.state().create(Resource::new(NS, "bad-eth1", IntSpec(1)), None).await.unwrap();
    let busy = runtime.settled_within(Duration::from_secs(60)).await.unwrap_err();
    let names: Vec<&str> = busy.busy.iter().map(|c| c.controller.as_str()).collect();
    assert_eq!(names, ["FailsBadKeys"], "{busy}");
    let hourly = &runtime.health().await.controllers[1];
    assert_eq!(hourly.queued, Some((1, 0)), "its key waits for its hour: {hourly}");
    assert!(hourly.is_healthy(), "{hourly}");
}
