//! The Poller mirrors a changing external list; a controller reacts to each change.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::controllers::int_to_str;
use common::{IntSpec, NS, StrSpec};
use cosi_actors::Poller;
use cosi_runtime::prelude::*;

type External = Arc<Mutex<Vec<(String, IntSpec)>>>;

fn set(list: &External, items: &[(&str, i64)]) {
    *list.lock().unwrap() = items.iter().map(|(id, n)| ((*id).to_owned(), IntSpec(*n))).collect();
}

async fn ids<S: Spec>(state: &State) -> Vec<(String, Option<String>)> {
    state
        .list(&Kind::of::<S>(NS), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| (r.id().to_owned(), Some(format!("{:?}", r.typed::<S>().unwrap().spec()))))
        .collect()
}

async fn next_poll(runtime: &Runtime) {
    tokio::time::advance(Duration::from_millis(10_001)).await;
    runtime.settled().await;
}

#[actix::test]
async fn the_poller_mirrors_additions_changes_and_removals_and_a_controller_follows() {
    tokio::time::pause();
    let runtime = Runtime::start();
    let state = runtime.state();
    runtime.register(int_to_str).await.unwrap();
    let external: External = Arc::default();
    set(&external, &[("a", 1), ("b", 2)]);
    let source = external.clone();
    Poller::register(&runtime, "IntPoller", NS, Duration::from_secs(10), move || {
        let items = source.lock().unwrap().clone();
        async move { Ok(items) }
    })
    .await
    .unwrap();
    runtime.settled().await;
    assert_eq!(
        ids::<StrSpec>(&state).await,
        [("a".into(), Some("StrSpec(\"1\")".into())), ("b".into(), Some("StrSpec(\"2\")".into()))]
    );
    let a = state.get(&Pointer::typed::<IntSpec>(NS, "a")).await.unwrap();
    assert_eq!(a.owner(), Some("IntPoller"));

    // Change a, remove b, add c.
    set(&external, &[("a", 10), ("c", 3)]);
    next_poll(&runtime).await;
    assert_eq!(
        ids::<StrSpec>(&state).await,
        [("a".into(), Some("StrSpec(\"10\")".into())), ("c".into(), Some("StrSpec(\"3\")".into()))]
    );
    // b was held by the controller's finalizer: torn down now, destroyed by
    // the next poll once released.
    let b = state.get(&Pointer::typed::<IntSpec>(NS, "b")).await.unwrap();
    assert_eq!(b.phase(), Phase::TearingDown);
    assert!(b.metadata().finalizers().is_empty(), "released by the controller");
    next_poll(&runtime).await;
    assert!(state.get(&Pointer::typed::<IntSpec>(NS, "b")).await.unwrap_err().is_not_found());

    // Nothing changes: nothing is written.
    let before = state.get(&Pointer::typed::<IntSpec>(NS, "a")).await.unwrap().version();
    next_poll(&runtime).await;
    assert_eq!(state.get(&Pointer::typed::<IntSpec>(NS, "a")).await.unwrap().version(), before);
}

#[actix::test]
async fn a_failed_poll_changes_nothing_and_the_next_one_recovers() {
    tokio::time::pause();
    let runtime = Runtime::start();
    let state = runtime.state();
    let fail = Arc::new(Mutex::new(true));
    let f = fail.clone();
    Poller::register(&runtime, "Flaky", NS, Duration::from_secs(10), move || {
        let failing = *f.lock().unwrap();
        async move {
            if failing {
                Err("the API is down".into())
            } else {
                Ok(vec![("x".to_owned(), IntSpec(1))])
            }
        }
    })
    .await
    .unwrap();
    runtime.settled().await;
    assert!(state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap().is_empty());
    *fail.lock().unwrap() = false;
    next_poll(&runtime).await;
    assert_eq!(state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap().len(), 1);
}

#[actix::test]
async fn the_poller_never_touches_resources_it_did_not_create() {
    tokio::time::pause();
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new(NS, "mine", IntSpec(7)), None).await.unwrap();
    Poller::register(&runtime, "P", NS, Duration::from_secs(10), || async {
        Ok(vec![("mine".to_owned(), IntSpec(1)), ("new".to_owned(), IntSpec(2))])
    })
    .await
    .unwrap();
    runtime.settled().await;
    let mine = state.get_typed::<IntSpec>(&Pointer::typed::<IntSpec>(NS, "mine")).await.unwrap();
    assert_eq!(mine.spec(), &IntSpec(7), "a user resource under the same id is left alone");
    assert!(state.get(&Pointer::typed::<IntSpec>(NS, "new")).await.is_ok());
}

#[actix::test]
async fn a_panicking_poll_is_restarted_by_the_supervisor_and_stops_with_the_runtime() {
    tokio::time::pause();
    let runtime = Runtime::start();
    let state = runtime.state();
    let calls = Arc::new(Mutex::new(0u32));
    let c = calls.clone();
    Poller::register(&runtime, "Crashy", NS, Duration::from_secs(10), move || {
        let call = {
            let mut n = c.lock().unwrap();
            *n += 1;
            *n
        };
        assert!(call != 1, "the first poll panics");
        async move { Ok(vec![("x".to_owned(), IntSpec(i64::from(call)))]) }
    })
    .await
    .unwrap();
    runtime.settled().await;
    let x = state.get_typed::<IntSpec>(&Pointer::typed::<IntSpec>(NS, "x")).await.unwrap();
    assert_eq!(x.spec(), &IntSpec(2), "the fresh instance polled");
    let m = &runtime.metrics().await[0];
    assert_eq!((m.controller.as_str(), m.panics, m.reconciles), ("Crashy", 1, 1));

    runtime.stop().await;
    let before = *calls.lock().unwrap();
    tokio::time::advance(Duration::from_secs(60)).await;
    runtime.settled().await;
    assert_eq!(*calls.lock().unwrap(), before, "no poll after the runtime stopped");
}
