//! Replies to callers on other arbiters go through their thread's lane (one
//! wake-up per pass): every reply arrives, in the order the requests were
//! served, and a thread without an arbiter, or whose arbiter ended, is still
//! answered.

use std::time::Duration;

use crate::common::{IntSpec, NS};
use cosi_runtime::prelude::*;
use cosi_runtime::state::StateBuilder;

/// Runs the future `work` makes on `arbiter` and returns its output.
async fn on_arbiter<T, F>(arbiter: &actix::Arbiter, work: impl FnOnce() -> F + Send + 'static) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    assert!(arbiter.spawn_fn(move || {
        actix::spawn(async move {
            let _ = tx.send(work().await);
        });
    }));
    // A guard against a hang (a lost reply), not a timing assertion.
    match tokio::time::timeout(Duration::from_secs(60), rx).await {
        Ok(Ok(out)) => out,
        Ok(Err(_)) => panic!("the arbiter stopped before its work finished"),
        Err(_) => panic!("the arbiter's work did not finish within a minute (a lost reply?)"),
    }
}

/// 200 creates at once, then 100 modifies of one resource at once: the
/// modifies' versions, in the order they were sent.
async fn burst(state: State, tag: &'static str) -> Vec<u64> {
    let creates = (0..200).map(|i| {
        let state = state.clone();
        async move {
            state.create(Resource::new(NS, format!("{tag}-{i}"), IntSpec(i)), None).await.unwrap()
        }
    });
    let created = futures::future::join_all(creates).await;
    assert_eq!(created.len(), 200);
    let ptr = Pointer::typed::<IntSpec>(NS, format!("{tag}-0"));
    let modifies = (1..=100).map(|i| {
        let (state, ptr) = (state.clone(), ptr.clone());
        async move {
            let r = state.modify(&ptr, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = i, None);
            r.await.unwrap().version().get()
        }
    });
    futures::future::join_all(modifies).await
}

#[actix::test]
async fn callers_on_other_arbiters_get_every_reply_in_order() {
    let state = StateBuilder::new().open().await.unwrap();
    let (a, b) = (actix::Arbiter::new(), actix::Arbiter::new());
    let (on_a, on_b) = futures::join!(
        on_arbiter(&a, {
            let s = state.clone();
            move || burst(s, "a")
        }),
        on_arbiter(&b, {
            let s = state.clone();
            move || burst(s, "b")
        }),
    );
    for versions in [on_a, on_b] {
        assert_eq!(versions, (2..=101).collect::<Vec<u64>>(), "served and answered in order");
    }
    let listed = state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap();
    assert_eq!(listed.len(), 400);
    a.stop();
    b.stop();
}

#[actix::test]
async fn a_caller_on_a_thread_without_an_arbiter_is_answered_directly() {
    let state = StateBuilder::new().open().await.unwrap();
    let remote = state.clone();
    let created = std::thread::spawn(move || {
        futures::executor::block_on(remote.create(Resource::new(NS, "plain", IntSpec(7)), None))
    });
    // The state actor runs on this thread: let it serve while the other waits.
    let created = loop {
        if created.is_finished() {
            break created.join().unwrap().unwrap();
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(created.id(), "plain");
    let got = state.get(&Pointer::typed::<IntSpec>(NS, "plain")).await.unwrap();
    assert_eq!(got.version(), created.version());
}

#[test]
fn a_thread_whose_arbiter_ended_gets_a_new_lane() {
    // The state runs on an arbiter of its own; this thread calls it from one
    // actix system, then from another: the first system's lane task is gone
    // with its runtime, and the second must not queue replies into it.
    for round in 0..2 {
        actix::System::new().block_on(async move {
            let home = actix::Arbiter::new();
            let state =
                on_arbiter(&home, || async { StateBuilder::new().open().await.unwrap() }).await;
            let versions = burst(state.clone(), if round == 0 { "first" } else { "second" }).await;
            assert_eq!(versions, (2..=101).collect::<Vec<u64>>(), "round {round}");
            home.stop();
        });
    }
}
