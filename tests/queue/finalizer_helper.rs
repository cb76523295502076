//! `controller::finalizer`: a queue controller's finalizer dance in one call
//! (apply while running, clean up once when torn down, then let go).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::prelude::*;
use cosi_runtime::testing::Harness;

/// How often each closure ran, and how many cleanups are still to fail.
#[derive(Debug, Default)]
struct Calls {
    apply: AtomicU32,
    cleanup: AtomicU32,
    failing_cleanups: AtomicU32,
}

impl Calls {
    fn applied(&self) -> u32 {
        self.apply.load(Ordering::SeqCst)
    }
    fn cleaned(&self) -> u32 {
        self.cleanup.load(Ordering::SeqCst)
    }
}

/// Writes each `Int` as a `Str` of the same id, holding the `Int` until the
/// `Str` is gone. Changes to a `Str` map back to its `Int` (by id), so an
/// output that lets go wakes the cleanup again.
struct Holder {
    calls: Arc<Calls>,
}

impl QueueController for Holder {
    fn name(&self) -> &str {
        "Holder"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<IntSpec>(NS), Input::mapped::<StrSpec>(NS)],
            vec![Output::exclusive::<StrSpec>()],
        )
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let out = Pointer::typed::<StrSpec>(NS, ptr.id());
        finalizer(
            cx,
            ptr,
            async |int: Resource<IntSpec>| {
                self.calls.apply.fetch_add(1, Ordering::SeqCst);
                let text = int.spec().0.to_string();
                cx.modify(&out, move |s| s.spec_mut().0 = text.clone()).await?;
                Ok(Outcome::Done)
            },
            async |int| {
                assert_eq!(int.phase(), Phase::TearingDown);
                self.calls.cleanup.fetch_add(1, Ordering::SeqCst);
                let failing = &self.calls.failing_cleanups;
                if failing
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
                {
                    return Err("the output's disk is busy".into());
                }
                Ok(cx.release(&out).await?)
            },
        )
        .await
    }
}

fn int(id: &str) -> TypedPointer<IntSpec> {
    Pointer::typed(NS, id)
}

fn out(id: &str) -> TypedPointer<StrSpec> {
    Pointer::typed(NS, id)
}

async fn holder() -> (Harness, Arc<Calls>) {
    let calls = Arc::new(Calls::default());
    let shared = calls.clone();
    let h = Harness::queue(move || Holder { calls: shared.clone() }).await;
    (h, calls)
}

#[actix::test]
async fn apply_runs_while_the_finalizer_is_held() {
    let (h, calls) = holder().await;
    h.modify(&int("a"), |i| i.spec_mut().0 = 7).await.unwrap();
    h.settle().await;
    assert_eq!(h.get(&out("a")).await.unwrap().spec().0, "7");
    assert_eq!(h.finalizers(&int("a")).await, ["Holder"]);
    assert_eq!(
        h.write_log()[..2],
        ["add_finalizer default/Ints.test.cosi.dev/a", "modify default/Strs.test.cosi.dev/a"],
        "the finalizer goes on before apply writes anything"
    );
    assert!(calls.applied() >= 1);
    assert_eq!(calls.cleaned(), 0);

    // A change is applied again; the finalizer is not added twice.
    h.take_writes();
    h.modify(&int("a"), |i| i.spec_mut().0 = 8).await.unwrap();
    h.settle().await;
    assert_eq!(h.get(&out("a")).await.unwrap().spec().0, "8");
    assert_eq!(h.write_log(), ["modify default/Strs.test.cosi.dev/a"]);
}

#[actix::test]
async fn teardown_and_destroy_runs_the_cleanup_once_then_completes() {
    let (h, calls) = holder().await;
    h.modify(&int("a"), |i| i.spec_mut().0 = 1).await.unwrap();
    h.settle().await;
    h.take_writes();

    h.teardown_and_destroy(&int("a")).await.unwrap();
    assert!(h.get(&int("a")).await.unwrap_err().is_not_found());
    assert!(h.get(&out("a")).await.unwrap_err().is_not_found());
    assert_eq!(
        h.write_log(),
        [
            "teardown default/Strs.test.cosi.dev/a",
            "destroy default/Strs.test.cosi.dev/a",
            "remove_finalizer default/Ints.test.cosi.dev/a",
        ]
    );
    h.settle().await;
    assert_eq!(calls.cleaned(), 1, "the cleanup ran once");
    assert_eq!(h.metrics().await.errors, 0);
}

#[actix::test]
async fn a_failing_cleanup_is_retried_with_backoff_and_holds_the_resource_meanwhile() {
    tokio::time::pause();
    let calls = Arc::new(Calls { failing_cleanups: AtomicU32::new(3), ..Calls::default() });
    let shared = calls.clone();
    let backoff = Backoff {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(60),
        multiplier: 2.0,
        jitter: 0.0,
    };
    let h = Harness::builder()
        .backoff(backoff)
        .start_queue(move || Holder { calls: shared.clone() })
        .await
        .unwrap();
    h.modify(&int("a"), |i| i.spec_mut().0 = 1).await.unwrap();
    h.settle().await;

    let started = tokio::time::Instant::now();
    assert!(!h.teardown(&int("a")).await.unwrap(), "held by the controller's finalizer");
    // Within the first backoff: one failed cleanup, and the resource still
    // held. (The paused clock stands still while this task keeps yielding:
    // the 1 s backoff cannot pass meanwhile.)
    for _ in 0..10_000 {
        if calls.cleaned() >= 1 && h.metrics().await.errors >= 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(started.elapsed() < Duration::from_secs(1), "still within the first backoff");
    assert_eq!(calls.cleaned(), 1);
    assert_eq!(h.finalizers(&int("a")).await, ["Holder"]);
    assert_eq!(h.get(&out("a")).await.unwrap().phase(), Phase::Running, "nothing released yet");
    assert_eq!(h.metrics().await.errors, 1);

    // Retried after 1 s, 2 s and 4 s; the fourth cleanup succeeds.
    h.settle().await;
    assert!(started.elapsed() >= Duration::from_secs(7), "{:?}", started.elapsed());
    assert_eq!(calls.cleaned(), 4);
    let m = h.metrics().await;
    assert_eq!((m.errors, m.retries), (3, 3));
    assert!(h.finalizers(&int("a")).await.is_empty());
    assert!(h.get(&out("a")).await.unwrap_err().is_not_found());
    h.destroy(&int("a")).await.unwrap();
}

#[actix::test]
async fn an_unfinished_cleanup_keeps_the_finalizer_until_a_change_wakes_it() {
    let (h, calls) = holder().await;
    h.modify(&int("a"), |i| i.spec_mut().0 = 1).await.unwrap();
    h.settle().await;
    // Someone else holds the output: the cleanup cannot finish yet.
    h.add_finalizer(&out("a"), "backup").await.unwrap();
    let user = h.client().clone();
    let waiting = actix::spawn(async move { user.teardown_and_destroy(&int("a")).await });
    h.wait_for(&out("a"), |s| s.is_some_and(|s| s.phase() == Phase::TearingDown)).await;
    h.settle().await;
    assert_eq!(h.finalizers(&int("a")).await, ["Holder"], "cleanup said: not yet");
    assert!(!waiting.is_finished());

    // The holder lets go; the output's change maps back to "a".
    h.remove_finalizer(&out("a"), "backup").await.unwrap();
    waiting.await.unwrap().unwrap();
    assert!(h.get(&int("a")).await.unwrap_err().is_not_found());
    assert!(h.get(&out("a")).await.unwrap_err().is_not_found());
    assert!(calls.cleaned() >= 2);
}

#[actix::test]
async fn a_resource_that_is_gone_is_done_without_either_closure() {
    let (h, calls) = holder().await;
    h.queue_handle().unwrap().enqueue(&int("ghost")).await.unwrap();
    h.settle().await;
    let m = h.metrics().await;
    assert_eq!((m.reconciles, m.errors), (1, 0));
    assert_eq!((calls.applied(), calls.cleaned()), (0, 0));
    assert!(h.write_log().is_empty());
}

#[actix::test]
async fn a_resource_torn_down_before_it_was_held_is_left_alone() {
    let (h, calls) = holder().await;
    // Created already tearing down: the controller never held it.
    let mut gone = Resource::new(NS, "early", IntSpec(1));
    gone.metadata_mut().set_phase(Phase::TearingDown);
    h.create(gone).await.unwrap();
    h.settle().await;
    assert_eq!((calls.applied(), calls.cleaned()), (0, 0));
    assert!(h.finalizers(&int("early")).await.is_empty());
    assert!(h.write_log().is_empty());
}
