//! The test kit: harness, probe, faults, panics, paused clock.

use std::time::Duration;

use crate::common::controllers::int_to_str;
use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::testing::{Fault, Harness, StateProbe};

fn int(id: &str) -> TypedPointer<IntSpec> {
    Pointer::typed(NS, id)
}

fn s(id: &str) -> TypedPointer<StrSpec> {
    Pointer::typed(NS, id)
}

#[actix::test]
async fn the_harness_logs_the_controllers_writes_in_order() {
    let h = Harness::new(int_to_str).await;
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.settle().await;
    assert_eq!(
        h.write_log(),
        ["add_finalizer default/Ints.test.cosi.dev/a", "modify default/Strs.test.cosi.dev/a"]
    );
    assert_eq!(h.get(&s("a")).await.unwrap().spec().0, "1");
    assert_eq!(h.finalizers(&int("a")).await, ["IntToStr"]);
    assert_eq!(h.writes()[1].owner.as_deref(), Some("IntToStr"));

    // The user's own writes are not in the log; no-op modifies are not writes.
    h.take_writes();
    h.modify(&int("a"), |r| r.metadata_mut().labels_mut().insert("x", "y").map(drop).unwrap_or(()))
        .await
        .unwrap();
    h.settle().await;
    assert!(h.write_log().is_empty(), "{:?}", h.write_log());
    assert!(h.reconciles().await >= 3);
}

#[actix::test]
async fn teardown_through_the_harness_shows_the_release_sequence() {
    let h = Harness::new(int_to_str).await;
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.settle().await;
    h.take_writes();
    h.teardown_and_destroy(&int("a")).await.unwrap();
    assert_eq!(
        h.write_log(),
        [
            "teardown default/Strs.test.cosi.dev/a",
            "destroy default/Strs.test.cosi.dev/a",
            "remove_finalizer default/Ints.test.cosi.dev/a"
        ]
    );
    assert!(h.get(&int("a")).await.unwrap_err().is_not_found());
}

#[actix::test]
async fn injected_faults_exercise_the_error_path_in_virtual_time() {
    tokio::time::pause();
    let h = Harness::new(int_to_str).await;
    h.inject(Fault::on("add_finalizer").times(2));
    let start = tokio::time::Instant::now();
    h.create(Resource::new(NS, "a", IntSpec(7))).await.unwrap();
    h.settle().await;
    assert_eq!(h.get(&s("a")).await.unwrap().spec().0, "7");
    let m = h.metrics().await;
    assert_eq!(m.errors, 2);
    assert_eq!((m.retries, m.restarts), (2, 0), "errors are retried, the instance kept");
    let failed: Vec<_> = h.writes().into_iter().filter(|w| !w.is_ok()).collect();
    assert_eq!(failed.len(), 2);
    assert!(failed[0].error.as_ref().unwrap().is_unavailable());
    assert!(
        start.elapsed() >= Duration::from_millis(30),
        "10 ms + 20 ms of backoff in virtual time"
    );
}

#[actix::test]
async fn a_fault_can_carry_a_chosen_error() {
    let h = Harness::new(int_to_str).await;
    h.inject(
        Fault::on("modify").at(&s("a")).error(Error::AlreadyExists { resource: s("a").erase() }),
    );
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.create(Resource::new(NS, "b", IntSpec(2))).await.unwrap();
    h.settle().await;
    let failed: Vec<_> = h.writes().into_iter().filter(|w| !w.is_ok()).collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].error.as_ref().unwrap().is_already_exists());
    assert_eq!(failed[0].subject, s("a").to_string());
}

#[actix::test]
async fn wait_for_is_driven_by_watch_events() {
    let h = Harness::new(int_to_str).await;
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.wait_for(&s("a"), |r| r.is_some_and(|r| r.spec().0 == "1")).await;
    h.modify(&int("a"), |r| r.spec_mut().0 = 2).await.unwrap();
    h.wait_for(&s("a"), |r| r.is_some_and(|r| r.spec().0 == "2")).await;
    h.teardown(&int("a")).await.unwrap();
    h.wait_for(&s("a"), |r| r.is_none()).await;
}

#[actix::test]
#[should_panic(expected = "did not reach the expected state")]
async fn wait_for_fails_when_the_state_never_comes() {
    tokio::time::pause();
    let h = Harness::new(int_to_str).await;
    h.wait_for(&s("never"), |r| r.is_some()).await;
}

struct Panicky;

impl Controller for Panicky {
    fn name(&self) -> &str {
        "Panicky"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        if !cx.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await?.is_empty() {
            panic!("a bug in the controller");
        }
        Ok(())
    }
}

#[actix::test]
#[should_panic(expected = "the system panicked")]
async fn a_panic_in_the_controller_fails_the_test() {
    tokio::time::pause();
    let h = Harness::new(|| Panicky).await;
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    // Supervision catches the panic and retries; the kit still fails the test.
    h.settle().await;
}

/// The controller on an arbiter of its own: its panic happens on another
/// thread, and still fails the test.
#[actix::test]
#[should_panic(expected = "the system panicked")]
async fn a_panic_on_the_controllers_own_arbiter_fails_the_test() {
    let h = Harness::builder().own_arbiter().start(|| Panicky).await.unwrap();
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.settle().await;
}

/// A blocking reconcile panics on a pool thread; the panic comes back to
/// the host (and to the test).
#[actix::test]
#[should_panic(expected = "on a blocking pool thread")]
async fn a_panic_of_a_blocking_reconcile_fails_the_test() {
    let h = Harness::new(|| cosi_runtime::execution::Blocking::new(Panicky)).await;
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.settle().await;
}

/// Each test's log is its own: a panic on a thread that works for no test
/// (here a plain thread) fails none.
#[actix::test]
async fn a_panic_on_an_unrelated_thread_fails_no_harness() {
    let h = Harness::new(int_to_str).await;
    std::thread::spawn(|| std::panic::catch_unwind(|| panic!("not this test's")).is_err())
        .join()
        .unwrap();
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.wait_for(&s("a"), |r| r.is_some()).await;
    assert!(h.panics().is_empty(), "{:?}", h.panics());
}

#[actix::test]
async fn allow_panics_lets_a_test_check_recovery() {
    tokio::time::pause();
    let h = Harness::builder().allow_panics().start(|| Panicky).await.unwrap();
    h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.destroy(&int("a")).await.unwrap();
    h.settle().await;
    assert!(!h.panics().is_empty());
    assert!(h.metrics().await.panics >= 1);
}

#[actix::test]
async fn the_probe_records_exact_requests_for_delivered_messages() {
    let probe = StateProbe::start();
    let a = probe.seed(Resource::new(NS, "a", IntSpec(5))).await;
    let host = probe.host(int_to_str).await.unwrap();
    probe.settled().await;
    assert_eq!(
        probe.request_log(),
        [
            "watch default/Ints.test.cosi.dev",
            "watch default/Strs.test.cosi.dev",
            "list default/Ints.test.cosi.dev",
            "add_finalizer default/Ints.test.cosi.dev/a",
            "modify default/Strs.test.cosi.dev/a",
            "list default/Strs.test.cosi.dev",
        ]
    );
    // A change message straight into the mailbox: one reconcile, the same reads.
    probe.take_requests();
    host.deliver(Event::Created(a)).await;
    probe.settled().await;
    let log = probe.request_log();
    assert_eq!(log.first().map(String::as_str), Some("list default/Ints.test.cosi.dev"));
    assert!(!log.iter().any(|l| l.starts_with("modify") && l.contains("failed")));
    assert_eq!(host.metrics().reconciles, 2);
    // A destroy-ready change of a running output does not trigger.
    probe.take_requests();
    let out = probe.state().get(&s("a")).await.unwrap();
    probe.take_requests();
    host.deliver(Event::Created(out.into())).await;
    probe.settled().await;
    assert!(probe.request_log().is_empty(), "{:?}", probe.request_log());
}

#[actix::test]
async fn the_probe_injects_faults_too() {
    tokio::time::pause();
    let probe = StateProbe::start();
    probe.seed(Resource::new(NS, "a", IntSpec(5))).await;
    probe.inject(Fault::on("list"));
    let host = probe.host(int_to_str).await.unwrap();
    probe.settled().await;
    let m = host.metrics();
    assert_eq!((m.errors, m.retries, m.restarts, m.reconciles), (1, 1, 0, 1));
}

/// Echoes each key into a string resource.
struct Echo;

impl QueueController for Echo {
    fn name(&self) -> &str {
        "Echo"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<IntSpec>(NS)],
            vec![Output::exclusive::<StrSpec>()],
        )
        .with_concurrency(2)
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let id = ptr.id().to_owned();
        cx.modify(&s(ptr.id()), move |r| r.spec_mut().0 = id.clone()).await?;
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn queue_controllers_run_in_the_harness_and_the_probe() {
    let h = Harness::queue(|| Echo).await;
    h.create(Resource::new(NS, "q", IntSpec(1))).await.unwrap();
    h.settle().await;
    assert_eq!(h.write_log(), ["modify default/Strs.test.cosi.dev/q"]);
    assert!(h.queue_handle().is_some());

    let probe = StateProbe::start();
    let host = probe.queue_host(|| Echo).await.unwrap();
    probe.settled().await;
    assert_eq!(probe.request_log(), ["watch default/Ints.test.cosi.dev"]);
    host.deliver(Event::Created(Resource::new(NS, "k", IntSpec(1)).into())).await;
    probe.settled().await;
    assert_eq!(
        probe.request_log(),
        ["watch default/Ints.test.cosi.dev", "modify default/Strs.test.cosi.dev/k"]
    );
    assert_eq!(host.metrics().queue.unwrap().reconcile_latency.count, 1);
}

/// Fails every reconcile with the same retryable error.
struct NeverWorks;

impl Controller for NeverWorks {
    fn name(&self) -> &str {
        "NeverWorks"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        Err("the disk is read-only".into())
    }
}

#[actix::test]
#[should_panic(expected = "NeverWorks: backing-off")]
async fn settle_fails_a_test_whose_controller_never_succeeds_with_its_last_error() {
    tokio::time::pause();
    let h = Harness::new(|| NeverWorks).await;
    // Retried with backoff forever: settle gives up after its 10 s (virtual)
    // and says which controller and which error, instead of hanging.
    h.settle().await;
}

/// Asks to run again in 30 s, each time.
struct Every30s;

impl Controller for Every30s {
    fn name(&self) -> &str {
        "Every30s"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        cx.requeue_after(Duration::from_secs(30));
        Ok(())
    }
}

#[actix::test]
async fn advance_moves_the_paused_clock_past_a_requeue() {
    tokio::time::pause();
    let h = Harness::new(|| Every30s).await;
    h.settle().await;
    assert_eq!(h.reconciles().await, 1);
    h.advance(Duration::from_secs(29)).await;
    assert_eq!(h.reconciles().await, 1, "not due yet");
    h.advance(Duration::from_secs(1)).await;
    assert_eq!(h.reconciles().await, 2, "due exactly 30 s later");
    h.advance(Duration::from_secs(90)).await;
    assert_eq!(h.reconciles().await, 5, "three more periods");
}
