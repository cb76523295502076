//! The Transform generic controller: one rule per test.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_actors::{INPUT_LABEL, Mapped, Transform};
use cosi_runtime::controller::{ControllerStatus, TerminalError};
use cosi_runtime::prelude::*;

const OUT: &str = "out";

fn int(id: &str, n: i64) -> Resource<IntSpec> {
    Resource::new(NS, id, IntSpec(n))
}

fn out(id: &str) -> Pointer {
    Pointer::of::<StrSpec>(OUT, id)
}

/// `<id>` → output `s-<id>` with the number as text; negative numbers make nothing.
fn to_text(input: &Resource<IntSpec>) -> Mapped<StrSpec> {
    let n = input.spec().0;
    Ok((n >= 0).then(|| (format!("s-{}", input.id()), StrSpec(n.to_string()))))
}

async fn texts(state: &State) -> Vec<(String, String)> {
    state
        .list_typed::<StrSpec>(OUT, &LabelQuery::all())
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.id().to_owned(), r.spec().0.clone()))
        .collect()
}

async fn start(transform: fn() -> Transform<IntSpec, StrSpec>) -> (Runtime, State) {
    let runtime = Runtime::start();
    runtime.register_queue(transform).await.unwrap();
    let state = runtime.state();
    (runtime, state)
}

fn plain() -> Transform<IntSpec, StrSpec> {
    Transform::new("IntText", NS, OUT, to_text)
}

fn holding() -> Transform<IntSpec, StrSpec> {
    plain().with_input_finalizers()
}

#[actix::test]
async fn each_input_makes_one_labelled_output_owned_by_the_transform() {
    let (runtime, state) = start(plain).await;
    state.create(int("a", 1), None).await.unwrap();
    state.create(int("b", 2), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await, [("s-a".into(), "1".into()), ("s-b".into(), "2".into())]);
    let a = state.get(&out("s-a")).await.unwrap();
    assert_eq!(a.owner(), Some("IntText"));
    assert_eq!(a.metadata().labels().get(INPUT_LABEL), Some("a"));
}

#[actix::test]
async fn a_changed_input_updates_its_output_and_an_unchanged_one_writes_nothing() {
    let (runtime, state) = start(plain).await;
    let a = state.create(int("a", 1), None).await.unwrap();
    runtime.settled().await;
    let before = state.get(&out("s-a")).await.unwrap().version();
    let mut a = a.typed::<IntSpec>().unwrap();
    a.spec_mut().0 = 5;
    state.update(a, None).await.unwrap();
    runtime.settled().await;
    let after = state.get_typed::<StrSpec>(&out("s-a")).await.unwrap();
    assert_eq!(after.spec().0, "5");
    assert_eq!(after.version().get(), before.get() + 1);
    // A label change on the input maps to the same output: no write.
    state
        .modify(
            &Pointer::of::<IntSpec>(NS, "a"),
            |r: &mut Resource<IntSpec>| {
                r.metadata_mut().labels_mut().insert("touched", "yes");
            },
            None,
        )
        .await
        .unwrap();
    runtime.settled().await;
    assert_eq!(state.get(&out("s-a")).await.unwrap().version(), after.version());
}

#[actix::test]
async fn a_mapping_to_nothing_removes_the_output_made_earlier() {
    let (runtime, state) = start(plain).await;
    let a = state.create(int("a", 1), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await.len(), 1);
    let mut a = a.typed::<IntSpec>().unwrap();
    a.spec_mut().0 = -1;
    state.update(a, None).await.unwrap();
    runtime.settled().await;
    assert!(texts(&state).await.is_empty());
}

#[actix::test]
async fn an_output_id_that_changes_replaces_the_old_output() {
    let runtime = Runtime::start();
    runtime
        .register_queue(|| {
            Transform::new("ByValue", NS, OUT, |i: &Resource<IntSpec>| {
                Ok(Some((format!("v{}", i.spec().0), StrSpec(i.id().to_owned()))))
            })
        })
        .await
        .unwrap();
    let state = runtime.state();
    let a = state.create(int("a", 1), None).await.unwrap();
    runtime.settled().await;
    let mut a = a.typed::<IntSpec>().unwrap();
    a.spec_mut().0 = 2;
    state.update(a, None).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await, [("v2".into(), "a".into())]);
}

#[actix::test]
async fn the_output_of_a_destroyed_input_is_removed() {
    let (runtime, state) = start(plain).await;
    state.create(int("a", 1), None).await.unwrap();
    runtime.settled().await;
    state.destroy(&Pointer::of::<IntSpec>(NS, "a"), None).await.unwrap();
    runtime.settled().await;
    assert!(texts(&state).await.is_empty());
}

#[actix::test]
async fn input_finalizers_hold_the_input_until_its_outputs_are_destroyed() {
    let (runtime, state) = start(holding).await;
    let a = Pointer::of::<IntSpec>(NS, "a");
    state.create(int("a", 1), None).await.unwrap();
    runtime.settled().await;
    let input = state.get(&a).await.unwrap();
    assert!(input.metadata().finalizers().contains("IntText"), "{input:?}");

    // Someone else (an applier) holds the output: the input must wait for it.
    state.add_finalizer(&out("s-a"), "Applier").await.unwrap();
    let teardown = {
        let (state, a) = (state.clone(), a.clone());
        actix::spawn(async move { state.teardown_and_destroy(&a, None).await })
    };
    runtime.settled().await;
    let held = state.get(&a).await.unwrap();
    assert_eq!(held.phase(), Phase::TearingDown);
    assert!(held.metadata().finalizers().contains("IntText"));
    assert_eq!(state.get(&out("s-a")).await.unwrap().phase(), Phase::TearingDown);
    assert!(!teardown.is_finished());

    state.remove_finalizer(&out("s-a"), "Applier").await.unwrap();
    teardown.await.unwrap().unwrap();
    runtime.settled().await;
    assert!(state.get(&a).await.unwrap_err().is_not_found());
    assert!(state.get(&out("s-a")).await.unwrap_err().is_not_found());
}

#[actix::test]
async fn outputs_left_from_an_earlier_run_whose_input_is_gone_are_removed_at_start() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let mut orphan = Resource::new(OUT, "s-gone", StrSpec("7".into()));
    orphan.metadata_mut().labels_mut().insert(INPUT_LABEL, "gone");
    state.create(orphan, Some("IntText")).await.unwrap();
    // Someone else's resource with the same label is not ours to remove.
    let mut foreign = Resource::new(OUT, "s-foreign", StrSpec("8".into()));
    foreign.metadata_mut().labels_mut().insert(INPUT_LABEL, "gone");
    state.create(foreign, Some("Other")).await.unwrap();
    runtime.register_queue(plain).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await, [("s-foreign".into(), "8".into())]);
}

#[actix::test]
async fn a_failing_input_backs_off_alone_and_a_terminal_error_is_not_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let runtime = Runtime::builder()
        .backoff(cosi_runtime::supervisor::Backoff {
            initial: std::time::Duration::from_millis(1),
            max: std::time::Duration::from_millis(1),
            ..Default::default()
        })
        .start();
    runtime
        .register_queue(move || {
            let counted = counted.clone();
            Transform::new("Picky", NS, OUT, move |i: &Resource<IntSpec>| match i.id() {
                "bad" => {
                    counted.fetch_add(1, Ordering::Relaxed);
                    Err(TerminalError::new(format!("{} is not a number I like", i.spec().0)).into())
                }
                _ => to_text(i),
            })
        })
        .await
        .unwrap();
    let state = runtime.state();
    state.create(int("bad", 13), None).await.unwrap();
    state.create(int("good", 1), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await, [("s-good".into(), "1".into())]);
    assert_eq!(calls.load(Ordering::Relaxed), 1, "a terminal error is not retried");
    let metrics = runtime.metrics().await;
    let picky = metrics.iter().find(|m| m.controller == "Picky").unwrap();
    assert_eq!((picky.errors, picky.restarts), (1, 0), "{picky:?}");
    let health = runtime.health().await;
    let picky = health.controllers.iter().find(|c| c.controller == "Picky").unwrap();
    assert_eq!(
        picky.status,
        ControllerStatus::Running,
        "one key's error does not fail the controller"
    );
}

#[actix::test]
async fn an_extra_input_requeues_every_input_and_the_mapping_reads_it() {
    let runtime = Runtime::start();
    runtime
        .register_queue(|| {
            Transform::new_async(
                "Sentences",
                NS,
                OUT,
                async |cx: &ReconcileContext, i: &Resource<IntSpec>| {
                    let unit = Pointer::of::<SentenceSpec>(NS, "unit");
                    match cx.get_typed::<SentenceSpec>(&unit).await {
                        Ok(unit) => Ok(Some((
                            i.id().to_owned(),
                            StrSpec(format!("{} {}", i.spec().0, unit.spec().0)),
                        ))),
                        Err(e) if e.is_not_found() => Ok(None),
                        Err(e) => Err(e.into()),
                    }
                },
            )
            .with_extra_input(Input::weak::<SentenceSpec>(NS))
        })
        .await
        .unwrap();
    let state = runtime.state();
    state.create(int("a", 1), None).await.unwrap();
    state.create(int("b", 2), None).await.unwrap();
    runtime.settled().await;
    assert!(texts(&state).await.is_empty(), "no unit yet: nothing to make");
    state.create(Resource::new(NS, "unit", SentenceSpec("kg".into())), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await, [("a".into(), "1 kg".into()), ("b".into(), "2 kg".into())]);
}
