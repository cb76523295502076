//! Watches that resume from a revision: what the history must still hold
//! is the watched kind's own changes, not everyone's.

use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchOptions;
use cosi_runtime::state::WatchStream;
use futures::StreamExt;

/// A state keeping 16 changes, with `a` of kind `IntSpec` created, and the
/// revision a watch that saw it is caught up to.
async fn quiet_kind_seen() -> (State, u64) {
    let state = State::builder().history(16).open().await.unwrap();
    let mut watch =
        state.watch_kind_stream(&Kind::of::<IntSpec>(NS), LabelQuery::all(), true).await.unwrap();
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    loop {
        match watch.next().await.unwrap() {
            Event::Created(r) if r.pointer().id() == "a" => break,
            _ => {}
        }
    }
    (state, watch.revision())
}

/// A watch of every `S` in the namespace, resumed after `revision`.
async fn resume<S: Spec>(state: &State, revision: u64) -> Result<WatchStream, Error> {
    let kind = Kind::of::<S>(NS);
    state.watch_kind_stream(&kind, LabelQuery::all(), WatchOptions::resume_from(revision)).await
}

/// 100 changes of another kind: far more than the history keeps.
async fn churn_strings(state: &State) {
    for i in 0..100 {
        state
            .create(Resource::new(NS, format!("s{i}"), StrSpec(i.to_string())), None)
            .await
            .unwrap();
    }
}

#[actix::test]
async fn a_quiet_kind_resumes_from_its_last_event_after_other_kinds_overflowed_the_history() {
    let (state, seen) = quiet_kind_seen().await;
    churn_strings(&state).await;
    state.create(Resource::new(NS, "b", IntSpec(2)), None).await.unwrap();
    let mut resumed =
        resume::<IntSpec>(&state, seen).await.expect("nothing of this kind was dropped since");
    match resumed.next().await.unwrap() {
        Event::Created(r) => assert_eq!(r.pointer().id(), "b"),
        other => panic!("{other:?}"),
    }
    assert!(resumed.revision() > seen + 100, "b came after the churn");
}

#[actix::test]
async fn a_resume_that_would_miss_a_dropped_change_of_its_own_kind_is_compacted() {
    let (state, _) = quiet_kind_seen().await;
    churn_strings(&state).await;
    // From revision 0 it would need `a`'s create, long dropped.
    let err = resume::<IntSpec>(&state, 0).await.unwrap_err();
    assert!(err.is_compacted(), "{err}");
    // The churned kind itself cannot resume from before its dropped changes.
    let err = resume::<StrSpec>(&state, 10).await.unwrap_err();
    assert!(err.is_compacted(), "{err}");
}
