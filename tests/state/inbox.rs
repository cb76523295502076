//! Requests sent through `State` handles go into the state actor's inbox,
//! which it drains whole each turn. What a user relies on: requests from one
//! handle are served in the order they were sent, requests from other
//! threads are answered too, and a state whose handles are all gone stops and
//! frees what it held.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{IntSpec, NS};
use actix::prelude::*;
use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchEvent;
use tokio::sync::oneshot;

fn int(id: &str, value: i64) -> Resource<IntSpec> {
    Resource::new(NS, id, IntSpec(value))
}

#[actix::test]
async fn requests_sent_together_are_served_in_the_order_they_were_sent() {
    let state = State::start();
    let ptr = Pointer::typed::<IntSpec>(NS, "counter");
    // Sent before any answer comes back: the create, then ten modifies.
    let create = state.create(int("counter", 0), None);
    let modifies: Vec<_> = (1..=10)
        .map(|k| {
            let ptr = ptr.clone();
            let state = state.clone();
            async move {
                state.modify(&ptr, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = k, None).await
            }
        })
        .collect();
    let (created, modified) = futures::join!(create, futures::future::join_all(modifies));
    assert_eq!(created.unwrap().version().get(), 1);
    let versions: Vec<u64> = modified.into_iter().map(|m| m.unwrap().version().get()).collect();
    assert_eq!(versions, (2..=11).collect::<Vec<_>>(), "each modify saw the one before it");
    let last = state.get_typed::<IntSpec>(&ptr).await.unwrap();
    assert_eq!(last.spec().0, 10);
}

#[actix::test]
async fn requests_from_other_threads_are_answered() {
    let state = State::start();
    let mut threads = Vec::new();
    for t in 0..4 {
        let state = state.clone();
        let arbiter = Arbiter::new();
        let (tx, rx) = oneshot::channel();
        arbiter.spawn(async move {
            for k in 0..100 {
                state.create(int(&format!("t{t}-{k}"), k), None).await.unwrap();
            }
            let _ = tx.send(());
        });
        threads.push((arbiter, rx));
    }
    for (arbiter, rx) in threads {
        rx.await.expect("the thread finished its creates");
        arbiter.stop();
    }
    let all = state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap();
    assert_eq!(all.len(), 400);
}

/// Tells when it stops: it is kept alive only by the watch that delivers to it.
struct Subscriber(Option<oneshot::Sender<()>>);

impl Actor for Subscriber {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Self::Context) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

impl Handler<WatchEvent> for Subscriber {
    type Result = ();

    fn handle(&mut self, _: WatchEvent, _: &mut Self::Context) {}
}

/// A subscriber that lives only through `state`'s watch of it: the receiver
/// hears when it stops, which is when the state actor has let it go.
async fn subscribed(state: &State) -> oneshot::Receiver<()> {
    let (tx, stopped) = oneshot::channel();
    let subscriber = Subscriber(Some(tx)).start();
    state
        .watch_kind(&Kind::of::<IntSpec>(NS), LabelQuery::all(), true, subscriber.recipient())
        .await
        .unwrap();
    stopped
}

async fn assert_freed(stopped: oneshot::Receiver<()>, what: &str) {
    let freed = tokio::time::timeout(Duration::from_secs(10), stopped).await;
    assert!(freed.is_ok(), "{what}");
}

#[actix::test]
async fn a_state_whose_handles_are_all_gone_stops_and_frees_what_it_held() {
    let state = State::start();
    state.create(int("kept", 1), None).await.unwrap();
    let stopped = subscribed(&state).await;
    drop(state);
    assert_freed(stopped, "the state stopped once its last handle was dropped").await;
}

#[actix::test]
async fn a_dropped_handle_leaves_the_other_handles_working() {
    let state = State::start();
    let other = Arc::new(state.clone());
    drop(state);
    other.create(int("still", 1), None).await.unwrap();
    assert_eq!(
        other.get_typed::<IntSpec>(&Pointer::typed::<IntSpec>(NS, "still")).await.unwrap().spec().0,
        1
    );
}

/// Per object: reads its integer and writes nothing (a queue controller to
/// keep a host alive with work).
struct Reader;

impl cosi_runtime::controller::QueueController for Reader {
    fn name(&self) -> &str {
        "Reader"
    }

    fn settings(&self) -> cosi_runtime::controller::QueueSettings {
        cosi_runtime::controller::QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![],
            concurrency: 4,
        }
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<cosi_runtime::controller::Outcome, cosi_runtime::controller::ReconcileError> {
        let _ = cx.get_typed::<IntSpec>(ptr).await;
        Ok(cosi_runtime::controller::Outcome::Done)
    }
}

#[actix::test]
async fn a_stopped_runtime_frees_its_state_and_controllers() {
    let runtime = Runtime::start();
    runtime.register(|| Reader).await.unwrap();
    let state = runtime.state();
    for k in 0..50 {
        state.create(int(&format!("r{k}"), k), None).await.unwrap();
    }
    runtime.settled().await;
    let stopped = subscribed(&state).await;
    drop(state);
    runtime.stop().await;
    drop(runtime);
    assert_freed(stopped, "the state stopped with the runtime's last handle").await;
}
