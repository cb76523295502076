//! A two-level chain with finalizers: integer → string → sentence.

use crate::common::controllers::{int_to_str, str_to_sentence};
use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::prelude::*;
use futures::StreamExt;

async fn chain() -> Runtime {
    let runtime = Runtime::start();
    runtime.register(int_to_str).await.unwrap();
    runtime.register(str_to_sentence).await.unwrap();
    runtime
}

async fn sentence(state: &State, id: &str) -> Result<String, Error> {
    Ok(state
        .get_typed::<SentenceSpec>(&Pointer::typed::<SentenceSpec>(NS, id))
        .await?
        .into_spec()
        .0)
}

#[actix::test]
async fn integers_flow_through_both_levels() {
    let runtime = chain().await;
    let state = runtime.state();
    for n in [1, 2, 3] {
        state.create(Resource::new(NS, format!("n{n}"), IntSpec(n)), None).await.unwrap();
    }
    runtime.settled().await;
    for n in [1, 2, 3] {
        assert_eq!(sentence(&state, &format!("n{n}")).await.unwrap(), format!("{n} sentence"));
        let int = state.get(&Pointer::typed::<IntSpec>(NS, format!("n{n}"))).await.unwrap();
        assert_eq!(int.metadata().finalizers().to_vec(), ["IntToStr"]);
        let s = state.get(&Pointer::typed::<StrSpec>(NS, format!("n{n}"))).await.unwrap();
        assert_eq!(s.owner(), Some("IntToStr"));
        assert_eq!(s.metadata().finalizers().to_vec(), ["StrToSentence"]);
    }
}

#[actix::test]
async fn updates_flow_through_both_levels() {
    let runtime = chain().await;
    let state = runtime.state();
    let p = Pointer::typed::<IntSpec>(NS, "x");
    state.create(Resource::new(NS, "x", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    for n in 2..=5 {
        state.modify(&p, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None).await.unwrap();
        runtime.settled().await;
        assert_eq!(sentence(&state, "x").await.unwrap(), format!("{n} sentence"));
    }
}

#[actix::test]
async fn teardown_and_destroy_cascades_and_waits_for_both_controllers() {
    let runtime = chain().await;
    let state = runtime.state();
    state.create(Resource::new(NS, "x", IntSpec(7)), None).await.unwrap();
    state.create(Resource::new(NS, "y", IntSpec(8)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(sentence(&state, "x").await.unwrap(), "7 sentence");

    // Watch the downstream resources to check the order of destruction.
    let mut strs = state.watch_stream(&Pointer::typed::<StrSpec>(NS, "x")).await.unwrap();
    let mut sentences = state.watch_stream(&Pointer::typed::<SentenceSpec>(NS, "x")).await.unwrap();

    state.teardown_and_destroy(&Pointer::typed::<IntSpec>(NS, "x"), None).await.unwrap();

    // When the call returns, both levels have released and are gone.
    assert!(state.get(&Pointer::typed::<IntSpec>(NS, "x")).await.unwrap_err().is_not_found());
    assert!(sentence(&state, "x").await.unwrap_err().is_not_found());
    let s = state.get(&Pointer::typed::<StrSpec>(NS, "x")).await;
    assert!(s.unwrap_err().is_not_found());
    let mut saw_destroyed = false;
    while let Some(Some(event)) = sentences.next().now_or_never() {
        saw_destroyed |= matches!(event, Event::Destroyed(r) if !r.is_tombstone());
    }
    assert!(saw_destroyed, "the sentence was destroyed");
    let mut str_phases = vec![];
    while let Some(Some(event)) = strs.next().now_or_never() {
        str_phases.push(event.name());
    }
    assert_eq!(str_phases.last(), Some(&"destroyed"));

    // The sibling is untouched.
    runtime.settled().await;
    assert_eq!(sentence(&state, "y").await.unwrap(), "8 sentence");
}

#[actix::test]
async fn an_input_recreated_after_teardown_flows_again() {
    let runtime = chain().await;
    let state = runtime.state();
    let p = Pointer::typed::<IntSpec>(NS, "x");
    state.create(Resource::new(NS, "x", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    state.teardown_and_destroy(&p, None).await.unwrap();
    state.create(Resource::new(NS, "x", IntSpec(2)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(sentence(&state, "x").await.unwrap(), "2 sentence");
}

use futures::FutureExt;
