//! The Destroy generic controller: one rule per test.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{IntSpec, NS};
use cosi_actors::Destroy;
use cosi_runtime::prelude::*;

fn ptr(id: &str) -> Pointer {
    Pointer::typed::<IntSpec>(NS, id).erase()
}

async fn start() -> (Runtime, State) {
    let runtime = Runtime::start();
    Destroy::<IntSpec>::register(&runtime, NS).await.unwrap();
    let state = runtime.state();
    (runtime, state)
}

#[actix::test]
async fn a_torn_down_resource_without_finalizers_is_destroyed_as_its_owner() {
    let (runtime, state) = start().await;
    state.client_as("Maker").create(Resource::new(NS, "mine", IntSpec(1))).await.unwrap();
    state.client_as("Maker").teardown(&ptr("mine")).await.unwrap();
    runtime.settled().await;
    assert!(state.get(&ptr("mine")).await.unwrap_err().is_not_found());
}

#[actix::test]
async fn running_resources_are_left_alone() {
    let (runtime, state) = start().await;
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(state.get(&ptr("a")).await.unwrap().phase(), Phase::Running);
}

#[actix::test]
async fn a_held_resource_is_destroyed_once_its_last_finalizer_goes() {
    let (runtime, state) = start().await;
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    state.add_finalizer(&ptr("a"), "One").await.unwrap();
    state.add_finalizer(&ptr("a"), "Two").await.unwrap();
    state.teardown(&ptr("a"), None).await.unwrap();
    runtime.settled().await;
    state.remove_finalizer(&ptr("a"), "One").await.unwrap();
    runtime.settled().await;
    assert_eq!(state.get(&ptr("a")).await.unwrap().phase(), Phase::TearingDown);
    state.remove_finalizer(&ptr("a"), "Two").await.unwrap();
    runtime.settled().await;
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
}

#[actix::test]
async fn resources_torn_down_before_the_start_are_destroyed_at_start() {
    let runtime = Runtime::start();
    let state = runtime.state();
    for id in ["x", "y"] {
        state.create(Resource::new(NS, id, IntSpec(1)), None).await.unwrap();
        state.teardown(&ptr(id), None).await.unwrap();
    }
    Destroy::<IntSpec>::register(&runtime, NS).await.unwrap();
    runtime.settled().await;
    assert!(state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap().is_empty());
}
