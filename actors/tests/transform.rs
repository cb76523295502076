//! The Transform generic controller: one rule per test.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_actors::{INPUT_LABEL, Mapped, MappedMany, Transform};
use cosi_runtime::controller::{ControllerStatus, TerminalError};
use cosi_runtime::prelude::*;
use cosi_runtime::testing::Harness;
use cosi_runtime::testing::conformance::ScratchDir;

const OUT: &str = "out";

fn int(id: &str, n: i64) -> Resource<IntSpec> {
    Resource::new(NS, id, IntSpec(n))
}

fn out(id: &str) -> Pointer {
    Pointer::typed::<StrSpec>(OUT, id).erase()
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
    runtime.register(transform).await.unwrap();
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
            &Pointer::typed::<IntSpec>(NS, "a"),
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
        .register(|| {
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
    state.destroy(&Pointer::typed::<IntSpec>(NS, "a"), None).await.unwrap();
    runtime.settled().await;
    assert!(texts(&state).await.is_empty());
}

#[actix::test]
async fn input_finalizers_hold_the_input_until_its_outputs_are_destroyed() {
    let (runtime, state) = start(holding).await;
    let a = Pointer::typed::<IntSpec>(NS, "a");
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
    state.client_as("IntText").create(orphan).await.unwrap();
    // Someone else's resource with the same label is not ours to remove.
    let mut foreign = Resource::new(OUT, "s-foreign", StrSpec("8".into()));
    foreign.metadata_mut().labels_mut().insert(INPUT_LABEL, "gone");
    state.client_as("Other").create(foreign).await.unwrap();
    runtime.register(plain).await.unwrap();
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
        .register(move || {
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
        .register(|| {
            Transform::new_async(
                "Sentences",
                NS,
                OUT,
                async |cx: &ReconcileContext, i: &Resource<IntSpec>| {
                    let unit = Pointer::typed::<SentenceSpec>(NS, "unit");
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

// --- What wakes a transform: its inputs, and its outputs only when destroy-ready ---

/// Three inputs through a mapping that is not a pure function: each call
/// stamps a counter into the output. Watching its outputs fully, the
/// transform woke itself with each write and looped for ever; it now runs
/// once per input.
#[actix::test]
async fn a_mapping_that_is_not_a_pure_function_settles_after_one_reconcile_per_input() {
    tokio::time::pause();
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let h = Harness::queue(move || {
        let counted = counted.clone();
        Transform::new("Stamped", NS, OUT, move |i: &Resource<IntSpec>| {
            let call = counted.fetch_add(1, Ordering::Relaxed) + 1;
            Ok(Some((i.id().to_owned(), StrSpec(format!("{} #{call}", i.spec().0)))))
        })
    })
    .await;
    for id in ["a", "b", "c"] {
        h.create(int(id, 1)).await.unwrap();
    }
    h.settle().await;
    assert_eq!(h.reconciles().await, 3);
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    assert_eq!(h.write_log().len(), 3, "{:?}", h.write_log());
}

/// The same with input finalizers: putting the finalizer on is a change of
/// the input, so two reconciles per input, and still no loop.
#[actix::test]
async fn a_mapping_that_is_not_a_pure_function_with_input_finalizers_settles_after_two_reconciles_per_input()
 {
    tokio::time::pause();
    let h = Harness::queue(|| {
        let calls = std::cell::Cell::new(0);
        Transform::new("Stamped", NS, OUT, move |i: &Resource<IntSpec>| {
            calls.set(calls.get() + 1);
            Ok(Some((i.id().to_owned(), StrSpec(format!("{} #{}", i.spec().0, calls.get())))))
        })
        .with_input_finalizers()
    })
    .await;
    for id in ["a", "b", "c"] {
        h.create(int(id, 1)).await.unwrap();
    }
    h.settle().await;
    assert_eq!(h.reconciles().await, 6);
    assert_eq!(h.get_typed::<StrSpec>(&out("c")).await.unwrap().spec().0, "1 #6");
}

/// Four inputs, then one torn down, with input finalizers: 2 reconciles per
/// input (the mapping; the change of putting the finalizer on), 3 for the
/// removal (tearing down; its output destroyed; the input gone).
#[actix::test]
async fn four_held_inputs_and_one_removal_take_eleven_reconciles() {
    tokio::time::pause();
    let h = Harness::queue(holding).await;
    for id in ["a", "b", "c", "d"] {
        h.create(int(id, 1)).await.unwrap();
    }
    h.settle().await;
    assert_eq!(h.reconciles().await, 8);
    h.teardown_and_destroy(&Pointer::typed::<IntSpec>(NS, "b")).await.unwrap();
    h.settle().await;
    assert_eq!(h.reconciles().await, 11);
    assert!(h.get(&out("s-b")).await.unwrap_err().is_not_found());
    assert_eq!(texts(&h.state()).await.len(), 3);
}

/// Without input finalizers: one reconcile per input, two for the removal
/// (the input destroyed; then its output's destruction). Watching its
/// outputs fully, each output it created woke it again: 8, then 10.
#[actix::test]
async fn four_inputs_and_one_destroyed_take_six_reconciles() {
    tokio::time::pause();
    let h = Harness::queue(plain).await;
    for id in ["a", "b", "c", "d"] {
        h.create(int(id, 1)).await.unwrap();
    }
    h.settle().await;
    assert_eq!(h.reconciles().await, 4);
    h.destroy(&Pointer::typed::<IntSpec>(NS, "b")).await.unwrap();
    h.settle().await;
    assert_eq!(h.reconciles().await, 6);
    assert_eq!(texts(&h.state()).await.len(), 3);
}

#[actix::test]
async fn a_change_of_an_output_made_by_its_owner_does_not_wake_the_transform() {
    tokio::time::pause();
    let h = Harness::queue(plain).await;
    h.create(int("a", 1)).await.unwrap();
    h.settle().await;
    let before = h.reconciles().await;
    let owner = h.state().client_as("IntText");
    let edited = |s: &mut Resource<StrSpec>| s.spec_mut().0 = "edited".into();
    owner.modify(&Pointer::typed::<StrSpec>(OUT, "s-a"), edited).await.unwrap();
    h.settle().await;
    assert_eq!(h.reconciles().await, before);
    assert_eq!(h.get_typed::<StrSpec>(&out("s-a")).await.unwrap().spec().0, "edited");
}

#[actix::test]
async fn an_output_destroyed_by_someone_else_is_made_again() {
    let (runtime, state) = start(plain).await;
    state.create(int("a", 1), None).await.unwrap();
    runtime.settled().await;
    state.client_as("IntText").destroy(&out("s-a")).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await, [("s-a".into(), "1".into())]);
}

/// An output still held (by an applier) when the mapping wants its id again:
/// made again once the holder lets it go (its destroy-ready change wakes the
/// input, which releases it and writes it anew).
#[actix::test]
async fn an_output_wanted_again_while_still_held_is_made_again_once_released() {
    let runtime = Runtime::start();
    runtime
        .register(|| {
            Transform::new("ByValue", NS, OUT, |i: &Resource<IntSpec>| {
                Ok(Some((format!("v{}", i.spec().0), StrSpec(i.id().to_owned()))))
            })
        })
        .await
        .unwrap();
    let state = runtime.state();
    let a = Pointer::typed::<IntSpec>(NS, "a");
    let set = |n: i64| move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n;
    state.create(int("a", 1), None).await.unwrap();
    runtime.settled().await;
    state.add_finalizer(&out("v1"), "Applier").await.unwrap();
    state.modify(&a, set(2), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(state.get(&out("v1")).await.unwrap().phase(), Phase::TearingDown);
    state.modify(&a, set(1), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(state.get(&out("v1")).await.unwrap().phase(), Phase::TearingDown, "still held");
    assert!(state.get(&out("v2")).await.unwrap_err().is_not_found());

    state.remove_finalizer(&out("v1"), "Applier").await.unwrap();
    runtime.settled().await;
    let v1 = state.get(&out("v1")).await.unwrap();
    assert_eq!(v1.phase(), Phase::Running);
    assert!(v1.metadata().finalizers().is_empty());
    assert_eq!(texts(&state).await, [("v1".into(), "a".into())]);
}

// --- Leftovers of an earlier run ---

/// A first runtime makes outputs and stops; input `a` is destroyed while no
/// transform runs; a second runtime over the same (durable) state removes
/// `a`'s output at start and keeps `b`'s.
#[actix::test]
async fn outputs_of_an_earlier_runtime_whose_input_vanished_meanwhile_are_removed_at_start() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let first = Runtime::builder().open_durable(&file, [NS, OUT]).await.unwrap();
    first.register(plain).await.unwrap();
    first.state().create(int("a", 1), None).await.unwrap();
    first.state().create(int("b", 2), None).await.unwrap();
    first.settled().await;
    assert_eq!(texts(&first.state()).await.len(), 2);
    first.stop().await;
    first.state().close().await.unwrap();

    let offline = State::builder().durable(&file, [NS, OUT]).open().await.unwrap();
    offline.destroy(&Pointer::typed::<IntSpec>(NS, "a"), None).await.unwrap();
    offline.close().await.unwrap();

    let second = Runtime::builder().open_durable(&file, [NS, OUT]).await.unwrap();
    second.register(plain).await.unwrap();
    second.settled().await;
    assert_eq!(texts(&second.state()).await, [("s-b".into(), "2".into())]);
    second.stop().await;
    second.state().close().await.unwrap();
}

/// A leftover someone still holds is torn down at start, and destroyed once
/// released (its destroy-ready change wakes the transform again).
#[actix::test]
async fn a_held_leftover_is_torn_down_at_start_and_destroyed_once_released() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let mut orphan = Resource::new(OUT, "s-gone", StrSpec("7".into()));
    orphan.metadata_mut().labels_mut().insert(INPUT_LABEL, "gone");
    orphan.metadata_mut().finalizers_mut().add("Applier");
    state.client_as("IntText").create(orphan).await.unwrap();
    runtime.register(plain).await.unwrap();
    runtime.settled().await;
    assert_eq!(state.get(&out("s-gone")).await.unwrap().phase(), Phase::TearingDown);

    state.remove_finalizer(&out("s-gone"), "Applier").await.unwrap();
    runtime.settled().await;
    assert!(state.get(&out("s-gone")).await.unwrap_err().is_not_found());
}

// --- Many outputs per input ---

/// `<id>` with number n → outputs `<id>-0` .. `<id>-(n-1)`.
fn to_parts(input: &Resource<IntSpec>) -> MappedMany<StrSpec> {
    let n = input.spec().0.max(0);
    Ok((0..n).map(|k| (format!("{}-{k}", input.id()), StrSpec(k.to_string()))).collect())
}

fn parts() -> Transform<IntSpec, StrSpec> {
    Transform::many("IntParts", NS, OUT, to_parts).with_input_finalizers()
}

async fn ids(state: &State) -> Vec<String> {
    texts(state).await.into_iter().map(|(id, _)| id).collect()
}

#[actix::test]
async fn many_makes_one_labelled_output_per_listed_item() {
    let (runtime, state) = start(parts).await;
    state.create(int("a", 3), None).await.unwrap();
    state.create(int("b", 1), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(ids(&state).await, ["a-0", "a-1", "a-2", "b-0"]);
    for id in ["a-0", "a-1", "a-2"] {
        let made = state.get(&out(id)).await.unwrap();
        assert_eq!(made.owner(), Some("IntParts"));
        assert_eq!(made.metadata().labels().get(INPUT_LABEL), Some("a"));
    }
}

#[actix::test]
async fn many_removes_an_output_no_longer_listed_and_keeps_the_others_untouched() {
    let (runtime, state) = start(parts).await;
    state.create(int("a", 3), None).await.unwrap();
    runtime.settled().await;
    let kept = state.get(&out("a-0")).await.unwrap().version();
    state
        .modify(
            &Pointer::typed::<IntSpec>(NS, "a"),
            |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2,
            None,
        )
        .await
        .unwrap();
    runtime.settled().await;
    assert_eq!(ids(&state).await, ["a-0", "a-1"]);
    assert_eq!(state.get(&out("a-0")).await.unwrap().version(), kept);
}

#[actix::test]
async fn many_input_teardown_removes_every_output_before_the_input_is_released() {
    let (runtime, state) = start(parts).await;
    let a = Pointer::typed::<IntSpec>(NS, "a");
    state.create(int("a", 3), None).await.unwrap();
    state.create(int("b", 1), None).await.unwrap();
    runtime.settled().await;
    state.add_finalizer(&out("a-1"), "Applier").await.unwrap();
    let teardown = {
        let (state, a) = (state.clone(), a.clone());
        actix::spawn(async move { state.teardown_and_destroy(&a, None).await })
    };
    runtime.settled().await;
    assert_eq!(ids(&state).await, ["a-1", "b-0"], "the free outputs go at once");
    assert_eq!(state.get(&out("a-1")).await.unwrap().phase(), Phase::TearingDown);
    assert!(state.get(&a).await.unwrap().metadata().finalizers().contains("IntParts"));
    assert!(!teardown.is_finished());

    state.remove_finalizer(&out("a-1"), "Applier").await.unwrap();
    teardown.await.unwrap().unwrap();
    runtime.settled().await;
    assert!(state.get(&a).await.unwrap_err().is_not_found());
    assert_eq!(ids(&state).await, ["b-0"]);
}

#[actix::test]
async fn many_with_an_id_listed_twice_is_a_terminal_error_and_writes_nothing() {
    tokio::time::pause();
    let h = Harness::queue(|| {
        Transform::many("Twice", NS, OUT, |i: &Resource<IntSpec>| {
            Ok(vec![
                (i.id().to_owned(), StrSpec("1".into())),
                (i.id().to_owned(), StrSpec("2".into())),
            ])
        })
    })
    .await;
    h.create(int("a", 1)).await.unwrap();
    h.settle().await;
    assert!(h.write_log().is_empty(), "{:?}", h.write_log());
    let metrics = h.metrics().await;
    assert_eq!((metrics.reconciles, metrics.errors), (0, 1), "{metrics:?}");
}

#[actix::test]
async fn many_async_reads_through_the_context_and_makes_every_output() {
    let runtime = Runtime::start();
    runtime
        .register(|| {
            Transform::many_async(
                "Words",
                NS,
                OUT,
                async |cx: &ReconcileContext, i: &Resource<IntSpec>| {
                    let unit = Pointer::typed::<SentenceSpec>(NS, "unit");
                    let unit = match cx.get_typed::<SentenceSpec>(&unit).await {
                        Ok(unit) => unit.spec().0.clone(),
                        Err(e) if e.is_not_found() => return Ok(Vec::new()),
                        Err(e) => return Err(e.into()),
                    };
                    Ok((0..i.spec().0)
                        .map(|k| (format!("{}-{k}", i.id()), StrSpec(format!("{k} {unit}"))))
                        .collect())
                },
            )
            .with_extra_input(Input::weak::<SentenceSpec>(NS))
        })
        .await
        .unwrap();
    let state = runtime.state();
    state.create(int("a", 2), None).await.unwrap();
    runtime.settled().await;
    assert!(texts(&state).await.is_empty());
    state.create(Resource::new(NS, "unit", SentenceSpec("kg".into())), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(texts(&state).await, [("a-0".into(), "0 kg".into()), ("a-1".into(), "1 kg".into())]);
    state.destroy(&Pointer::typed::<SentenceSpec>(NS, "unit"), None).await.unwrap();
    runtime.settled().await;
    assert!(texts(&state).await.is_empty(), "an empty list removes them all");
}
