//! The Cleanup generic controller: one rule per test.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{IntSpec, NS, StrSpec};
use cosi_actors::Cleanup;
use cosi_runtime::prelude::*;

const DEPS: &str = "deps";

fn parent() -> Pointer {
    Pointer::typed::<IntSpec>(NS, "p").erase()
}

fn dep(id: &str) -> Pointer {
    Pointer::typed::<StrSpec>(DEPS, id).erase()
}

/// Creates dependent `id`, labelled `parent=<of>`, owned by `owner`.
async fn dependent(state: &State, id: &str, of: &str, owner: Option<&str>) {
    let mut r = Resource::new(DEPS, id, StrSpec(of.into()));
    r.metadata_mut().labels_mut().insert("parent", of);
    state.create(r, owner).await.unwrap();
}

async fn remaining(state: &State) -> Vec<String> {
    let deps = state.list(&Kind::of::<StrSpec>(DEPS), &LabelQuery::all()).await.unwrap();
    deps.iter().map(|r| r.id().to_owned()).collect()
}

async fn start(finalizer: bool) -> (Runtime, State) {
    let runtime = Runtime::start();
    let state = runtime.state();
    let handle = state.clone();
    runtime
        .register(move || {
            let cleanup = Cleanup::<IntSpec>::new(handle.clone(), "ParentCleanup", NS)
                .remove_labelled(Kind::of::<StrSpec>(DEPS), "parent");
            if finalizer { cleanup.with_finalizer() } else { cleanup }
        })
        .await
        .unwrap();
    (runtime, state)
}

#[actix::test]
async fn a_destroyed_resource_takes_its_labelled_dependents_whoever_owns_them() {
    let (runtime, state) = start(false).await;
    state.create(Resource::new(NS, "p", IntSpec(1)), None).await.unwrap();
    state.create(Resource::new(NS, "q", IntSpec(2)), None).await.unwrap();
    dependent(&state, "d1", "p", None).await;
    dependent(&state, "d2", "p", Some("SomeController")).await;
    dependent(&state, "other", "q", None).await;
    runtime.settled().await;
    assert_eq!(remaining(&state).await, ["d1", "d2", "other"], "a running parent keeps them");

    state.destroy(&parent(), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(remaining(&state).await, ["other"]);
}

#[actix::test]
async fn with_a_finalizer_the_teardown_waits_until_held_dependents_are_destroyed() {
    let (runtime, state) = start(true).await;
    state.create(Resource::new(NS, "p", IntSpec(1)), None).await.unwrap();
    dependent(&state, "d1", "p", None).await;
    state.add_finalizer(&dep("d1"), "Applier").await.unwrap();
    runtime.settled().await;
    assert!(state.get(&parent()).await.unwrap().metadata().finalizers().contains("ParentCleanup"));

    let teardown = {
        let state = state.clone();
        actix::spawn(async move { state.teardown_and_destroy(&parent(), None).await })
    };
    runtime.settled().await;
    assert_eq!(state.get(&dep("d1")).await.unwrap().phase(), Phase::TearingDown);
    assert_eq!(state.get(&parent()).await.unwrap().phase(), Phase::TearingDown);
    assert!(!teardown.is_finished());

    state.remove_finalizer(&dep("d1"), "Applier").await.unwrap();
    teardown.await.unwrap().unwrap();
    assert!(remaining(&state).await.is_empty());
}

#[actix::test]
async fn dependents_of_a_resource_gone_before_the_start_are_removed_at_start() {
    let runtime = Runtime::start();
    let state = runtime.state();
    dependent(&state, "orphan", "gone", None).await;
    let handle = state.clone();
    runtime
        .register(move || {
            Cleanup::<IntSpec>::new(handle.clone(), "ParentCleanup", NS)
                .remove_labelled(Kind::of::<StrSpec>(DEPS), "parent")
        })
        .await
        .unwrap();
    runtime.settled().await;
    assert!(remaining(&state).await.is_empty());
}

#[actix::test]
async fn mapped_dependents_are_found_by_the_function_and_waited_for() {
    tokio::time::pause();
    let runtime = Runtime::start();
    let state = runtime.state();
    let handle = state.clone();
    runtime
        .register(move || {
            Cleanup::<IntSpec>::new(handle.clone(), "MappedCleanup", NS)
                .remove_mapped(Kind::of::<StrSpec>(DEPS), |p: &Pointer| {
                    vec![format!("{}-a", p.id()), format!("{}-b", p.id())]
                })
        })
        .await
        .unwrap();
    state.create(Resource::new(NS, "p", IntSpec(1)), None).await.unwrap();
    state.create(Resource::new(DEPS, "p-a", StrSpec::default()), None).await.unwrap();
    state.client_as("Owner").create(Resource::new(DEPS, "p-b", StrSpec::default())).await.unwrap();
    state.create(Resource::new(DEPS, "q-a", StrSpec::default()), None).await.unwrap();
    state.add_finalizer(&dep("p-b"), "Applier").await.unwrap();
    state.destroy(&parent(), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(remaining(&state).await, ["p-b", "q-a"], "p-b waits for its finalizer");

    state.remove_finalizer(&dep("p-b"), "Applier").await.unwrap();
    // Under the paused clock a sleep is an advance that lets the due retry run.
    tokio::time::sleep(cosi_actors::MAPPED_RETRY * 2).await;
    runtime.settled().await;
    assert_eq!(remaining(&state).await, ["q-a"]);
}
