//! The state contract (DESIGN §3), written once and run against every backend.
//!
//! Each `check_*` function takes a fresh [`State`] and pins down one rule. The
//! `conformance!` macro instantiates the whole suite for a backend; add a line
//! at the bottom for each new backend.

mod common;

use std::collections::BTreeMap;

use common::{IntSpec, NS, StrSpec};
use cosi_runtime::prelude::*;
use cosi_runtime::resource::{DynamicResource, Id};
use cosi_runtime::state::{Backend, MemoryBackend, WatchOptions};
use futures::StreamExt;
use futures::future::join_all;

fn int(id: &str, n: i64) -> Resource<IntSpec> {
    Resource::new(NS, id, IntSpec(n))
}

fn ptr(id: &str) -> Pointer {
    Pointer::of::<IntSpec>(NS, id)
}

fn kind() -> Kind {
    Kind::of::<IntSpec>(NS)
}

async fn check_get_returns_the_resource_or_not_found(state: State) {
    let created = state.create(int("a", 1), None).await.unwrap();
    let got = state.get(&ptr("a")).await.unwrap();
    assert_eq!(got, created);
    assert_eq!(got.typed::<IntSpec>().unwrap().spec(), &IntSpec(1));
    let err = state.get(&ptr("missing")).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert!(err.to_string().contains("missing"), "names the resource: {err}");
}

async fn check_create_of_an_existing_id_is_already_exists(state: State) {
    state.create(int("a", 1), None).await.unwrap();
    let err = state.create(int("a", 2), None).await.unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    let stored = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    assert_eq!(stored.spec(), &IntSpec(1), "the first create stands");
}

async fn check_create_keeps_phase_finalizers_and_labels_as_given(state: State) {
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("held");
    r.metadata_mut().labels_mut().insert("tier", "edge");
    r.metadata_mut().annotations_mut().insert("note", "hello");
    r.metadata_mut().set_phase(Phase::TearingDown);
    let created = state.create(r, Some("ctrl")).await.unwrap();
    let md = created.metadata();
    assert!(md.finalizers().contains("held"));
    assert_eq!(md.labels().get("tier"), Some("edge"));
    assert_eq!(md.annotations().get("note"), Some("hello"));
    assert_eq!(md.phase(), Phase::TearingDown);
    assert_eq!(md.owner(), Some("ctrl"));
}

async fn check_versions_are_owned_by_the_state(state: State) {
    let mut r = int("a", 1);
    r.metadata_mut().set_version(Version::new(42));
    let created = state.create(r, None).await.unwrap();
    assert_eq!(created.version(), Version::new(1), "create sets 1 whatever was sent");

    // An update must send the version it read: not the pre-create version,
    // not a bumped one, exactly the stored one.
    let mut unset = int("a", 2);
    unset.metadata_mut().set_version(Version::UNSET);
    assert!(state.update(unset, None).await.unwrap_err().is_version_conflict());
    let mut bumped = created.typed::<IntSpec>().unwrap();
    bumped.metadata_mut().set_version(Version::new(2));
    assert!(state.update(bumped, None).await.unwrap_err().is_version_conflict());

    let mut exact = created.typed::<IntSpec>().unwrap();
    exact.spec_mut().0 = 2;
    let updated = state.update(exact, None).await.unwrap();
    assert_eq!(updated.version(), Version::new(2));
    let again = updated.typed::<IntSpec>().unwrap();
    assert_eq!(state.update(again, None).await.unwrap().version(), Version::new(3));
}

async fn check_update_keeps_created_and_moves_updated(state: State) {
    let created = state.create(int("a", 1), None).await.unwrap();
    let mut next = created.typed::<IntSpec>().unwrap();
    next.spec_mut().0 = 2;
    let updated = state.update(next, None).await.unwrap();
    assert_eq!(updated.metadata().created(), created.metadata().created());
    assert!(updated.metadata().updated() >= created.metadata().updated());
}

async fn check_update_checks_not_found_owner_version_phase_in_order(state: State) {
    // Missing beats everything.
    let mut ghost = int("ghost", 1);
    ghost.metadata_mut().set_version(Version::new(9));
    let e = state.update(ghost, Some("other")).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");

    let created = state.create(int("a", 1), Some("owner")).await.unwrap();
    state.teardown(&ptr("a"), Some("owner")).await.unwrap();

    // Wrong owner + stale version + wrong phase: owner first.
    let stale = created.typed::<IntSpec>().unwrap();
    let e = state.update(stale.clone(), Some("other")).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    // None matches only none.
    let e = state.update(stale.clone(), None).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    // Right owner, stale version, wrong phase: version next.
    let e = state.update(stale, Some("owner")).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    // Right owner and version, wrong phase: phase last.
    let fresh = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    let e = state.update(fresh, Some("owner")).await.unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
}

async fn check_modify_creates_then_updates(state: State) {
    let p = ptr("m");
    let created: Resource<IntSpec> =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 5, Some("c")).await.unwrap();
    assert_eq!(created.version(), Version::new(1));
    assert_eq!(created.metadata().owner(), Some("c"));
    let updated =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, Some("c")).await.unwrap();
    assert_eq!(updated.spec(), &IntSpec(6));
    assert_eq!(updated.version(), Version::new(2));
    let e =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
}

async fn check_no_op_modify_writes_nothing_and_emits_nothing(state: State) {
    let p = ptr("m");
    state.create(int("m", 1), None).await.unwrap();
    let mut events = state.watch_stream(&p).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Created(_))));

    let same =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 1, None).await.unwrap();
    assert_eq!(same.version(), Version::new(1), "no version bump");
    let unchanged = state
        .modify(
            &p,
            |r: &mut Resource<IntSpec>| {
                r.metadata_mut().labels_mut().insert("x", "1");
                r.metadata_mut().labels_mut().remove("x");
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(unchanged.version(), Version::new(1));

    // The next event is the real change: nothing was emitted in between.
    state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.version(), Version::new(1));
            assert_eq!(new.version(), Version::new(2));
        }
        other => panic!("expected the real update, got {other:?}"),
    }
}

async fn check_modify_of_a_torn_down_resource_is_a_phase_conflict_unless_expected(state: State) {
    let p = ptr("m");
    state.create(int("m", 1), None).await.unwrap();
    state.teardown(&p, None).await.unwrap();
    let e =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
    let r = state
        .modify_with(
            &p,
            || int("m", 0),
            |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2,
            None,
            ExpectedPhase::TearingDown,
        )
        .await
        .unwrap();
    assert_eq!(r.spec(), &IntSpec(2));
    assert_eq!(r.phase(), Phase::TearingDown);
}

async fn check_destroy_with_finalizers_is_refused(state: State) {
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("f1");
    state.create(r, Some("owner")).await.unwrap();
    let e = state.destroy(&ptr("a"), Some("other")).await.unwrap_err();
    assert!(e.is_owner_conflict(), "owner is checked before finalizers: {e}");
    let e = state.destroy(&ptr("a"), Some("owner")).await.unwrap_err();
    assert!(e.is_pending_finalizers(), "{e}");
    assert!(e.to_string().contains("f1"), "{e}");
    state.remove_finalizer(&ptr("a"), "f1").await.unwrap();
    // No teardown needed.
    state.destroy(&ptr("a"), Some("owner")).await.unwrap();
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
    assert!(state.destroy(&ptr("a"), Some("owner")).await.unwrap_err().is_not_found());
}

async fn check_teardown_is_idempotent_and_reports_readiness(state: State) {
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("f1");
    state.create(r, None).await.unwrap();
    assert!(!state.teardown(&ptr("a"), None).await.unwrap(), "held by f1");
    assert!(!state.teardown(&ptr("a"), None).await.unwrap(), "still held");
    let v = state.get(&ptr("a")).await.unwrap().version();
    assert_eq!(v, Version::new(2), "the second teardown wrote nothing");
    state.remove_finalizer(&ptr("a"), "f1").await.unwrap();
    assert!(state.teardown(&ptr("a"), None).await.unwrap(), "ready now");
    let e = state.teardown(&ptr("a"), Some("x")).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    assert!(state.teardown(&ptr("zz"), None).await.unwrap_err().is_not_found());
}

async fn check_phase_conflict_after_teardown_and_expected_phase_override(state: State) {
    state.create(int("a", 1), None).await.unwrap();
    state.teardown(&ptr("a"), None).await.unwrap();
    let mut r = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    r.spec_mut().0 = 2;
    let e = state.update(r.clone(), None).await.unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
    let updated =
        state.update_with_phase(r.clone(), None, ExpectedPhase::TearingDown).await.unwrap();
    assert_eq!(updated.phase(), Phase::TearingDown);
    let mut back = updated.typed::<IntSpec>().unwrap();
    back.metadata_mut().set_phase(Phase::Running);
    let e = state.update_with_phase(back, None, ExpectedPhase::Any).await.unwrap_err();
    assert!(e.is_invalid_input(), "never back to running: {e}");
}

async fn check_finalizer_operations_ignore_owner_and_phase(state: State) {
    state.create(int("a", 1), Some("owner")).await.unwrap();
    state.teardown(&ptr("a"), Some("owner")).await.unwrap();
    state.add_finalizer(&ptr("a"), "anyone").await.unwrap();
    state.add_finalizer(&ptr("a"), "anyone").await.unwrap();
    let r = state.get(&ptr("a")).await.unwrap();
    assert_eq!(r.metadata().finalizers().to_vec(), ["anyone"]);
    assert_eq!(r.version(), Version::new(3), "the duplicate add wrote nothing");
    state.remove_finalizer(&ptr("a"), "anyone").await.unwrap();
    state.remove_finalizer(&ptr("a"), "never-there").await.unwrap();
    let r = state.get(&ptr("a")).await.unwrap();
    assert!(r.metadata().finalizers().is_empty());
    assert_eq!(r.owner(), Some("owner"), "finalizer edits keep the owner");
    let e = state.add_finalizer(&ptr("zz"), "f").await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

async fn check_concurrent_finalizer_adds_and_removes_converge(state: State) {
    state.create(int("a", 1), None).await.unwrap();
    let adds = (0..8).map(|i| {
        let state = state.clone();
        async move { state.add_finalizer(&ptr("a"), &format!("f{i}")).await }
    });
    for r in join_all(adds).await {
        r.unwrap();
    }
    let removes = [1, 3, 6].map(|i| {
        let state = state.clone();
        async move { state.remove_finalizer(&ptr("a"), &format!("f{i}")).await }
    });
    for r in join_all(removes).await {
        r.unwrap();
    }
    let r = state.get(&ptr("a")).await.unwrap();
    assert_eq!(r.metadata().finalizers().to_vec(), ["f0", "f2", "f4", "f5", "f7"]);
}

async fn check_parallel_destroys_one_succeeds_the_rest_not_found(state: State) {
    state.create(int("a", 1), None).await.unwrap();
    let results = join_all((0..10).map(|_| {
        let state = state.clone();
        async move { state.destroy(&ptr("a"), None).await }
    }))
    .await;
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1);
    assert!(results.iter().filter_map(|r| r.as_ref().err()).all(Error::is_not_found));
}

async fn check_list_is_sorted_by_id(state: State) {
    for id in ["delta", "alpha", "charlie", "bravo", "10", "9"] {
        state.create(int(id, 0), None).await.unwrap();
    }
    state.create(Resource::new(NS, "zulu", StrSpec("other type".into())), None).await.unwrap();
    state.create(Resource::new("elsewhere", "echo", IntSpec(0)), None).await.unwrap();
    let ids: Vec<String> = state
        .list(&kind(), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| r.id().to_owned())
        .collect();
    assert_eq!(ids, ["10", "9", "alpha", "bravo", "charlie", "delta"]);
    assert!(
        state.list(&Kind::of::<IntSpec>("empty"), &LabelQuery::all()).await.unwrap().is_empty()
    );
}

async fn check_label_queries_filter_lists(state: State) {
    let labelled = [
        ("a", vec![("app", "web"), ("tier", "edge")]),
        ("b", vec![("app", "db")]),
        ("c", vec![("app", "web")]),
        ("d", vec![]),
    ];
    for (id, labels) in labelled {
        let mut r = int(id, 0);
        r.metadata_mut().labels_mut().extend(labels);
        state.create(r, None).await.unwrap();
    }
    let ids = |q: LabelQuery| {
        let state = state.clone();
        async move {
            state
                .list(&kind(), &q)
                .await
                .unwrap()
                .iter()
                .map(|r| r.id().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(ids(LabelQuery::all().exists("app")).await, ["a", "b", "c"]);
    assert_eq!(ids(LabelQuery::all().not_exists("app")).await, ["d"]);
    assert_eq!(ids(LabelQuery::all().equal("app", "web")).await, ["a", "c"]);
    assert_eq!(ids(LabelQuery::all().not_equal("app", "web")).await, ["b"]);
    assert_eq!(ids(LabelQuery::all().in_values("app", ["db", "web"])).await, ["a", "b", "c"]);
    assert_eq!(ids(LabelQuery::all().not_in("app", ["db"])).await, ["a", "c"]);
    assert_eq!(ids(LabelQuery::all().equal("app", "web").exists("tier")).await, ["a"]);
}

async fn check_watch_starts_with_created_or_a_tombstone(state: State) {
    state.create(int("here", 7), None).await.unwrap();
    let mut here = state.watch_stream(&ptr("here")).await.unwrap();
    match here.next().await {
        Some(Event::Created(r)) => assert_eq!(r.typed::<IntSpec>().unwrap().spec(), &IntSpec(7)),
        other => panic!("expected Created, got {other:?}"),
    }
    let mut gone = state.watch_stream(&ptr("gone")).await.unwrap();
    match gone.next().await {
        Some(Event::Destroyed(r)) => {
            assert!(r.is_tombstone());
            assert_eq!(r.pointer(), &ptr("gone"));
        }
        other => panic!("expected a tombstone, got {other:?}"),
    }
    // Then every change, in order.
    state.create(int("gone", 1), None).await.unwrap();
    state.destroy(&ptr("gone"), None).await.unwrap();
    assert!(matches!(gone.next().await, Some(Event::Created(_))));
    assert!(matches!(gone.next().await, Some(Event::Destroyed(r)) if !r.is_tombstone()));
}

async fn check_watch_kind_bootstrap_order_then_bootstrapped(state: State) {
    for id in ["c", "a", "b"] {
        state.create(int(id, 0), None).await.unwrap();
    }
    let mut events = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .unwrap();
    let mut seen = vec![];
    for _ in 0..3 {
        match events.next().await {
            Some(Event::Created(r)) => seen.push(r.id().to_owned()),
            other => panic!("expected Created, got {other:?}"),
        }
    }
    assert_eq!(seen, ["a", "b", "c"]);
    assert!(matches!(events.next().await, Some(Event::Bootstrapped(k)) if k == kind()));
    state.create(int("d", 0), None).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Created(r)) if r.id() == "d"));

    // Without bootstrap: live events only.
    let mut live = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::default())
        .await
        .unwrap();
    state.create(int("e", 0), None).await.unwrap();
    assert!(matches!(live.next().await, Some(Event::Created(r)) if r.id() == "e"));
}

async fn check_label_query_watches_turn_updates_into_created_and_destroyed(state: State) {
    state.create(int("a", 0), None).await.unwrap();
    let query = LabelQuery::all().equal("app", "web");
    let mut events =
        state.watch_kind_stream(&kind(), query, &WatchOptions::bootstrap()).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Bootstrapped(_))), "nothing matches yet");

    let set_label = |v: Option<&'static str>| {
        let state = state.clone();
        async move {
            state
                .modify(
                    &ptr("a"),
                    move |r: &mut Resource<IntSpec>| {
                        let labels = r.metadata_mut().labels_mut();
                        match v {
                            Some(v) => labels.insert("app", v),
                            None => labels.remove("app"),
                        };
                    },
                    None,
                )
                .await
                .unwrap()
        }
    };
    set_label(Some("web")).await;
    assert!(matches!(events.next().await, Some(Event::Created(r)) if r.id() == "a"));
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 1, None).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Updated { .. })));
    set_label(Some("db")).await;
    assert!(
        matches!(events.next().await, Some(Event::Destroyed(r)) if r.metadata().labels().get("app") == Some("db"))
    );
    set_label(None).await; // Still not matching: no event.
    set_label(Some("web")).await;
    assert!(matches!(events.next().await, Some(Event::Created(_))));
}

async fn check_updated_carries_the_old_resource(state: State) {
    state.create(int("a", 1), None).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.typed::<IntSpec>().unwrap().spec(), &IntSpec(1));
            assert_eq!(new.typed::<IntSpec>().unwrap().spec(), &IntSpec(2));
            assert_eq!(old.version().next(), new.version());
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    state.teardown(&ptr("a"), None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.phase(), Phase::Running);
            assert_eq!(new.phase(), Phase::TearingDown);
        }
        other => panic!("expected Updated, got {other:?}"),
    }
}

async fn check_invalid_input_is_rejected_and_nothing_stored(state: State) {
    let long = "x".repeat(257);
    let bad: Vec<(&str, Resource<IntSpec>)> = vec![
        ("empty id", Resource::new(NS, "", IntSpec(0))),
        ("empty namespace", Resource::new("", "a", IntSpec(0))),
        ("long id", Resource::new(NS, long.clone(), IntSpec(0))),
        ("control character", Resource::new(NS, "a\tb", IntSpec(0))),
        ("bad label key", {
            let mut r = int("a", 0);
            r.metadata_mut().labels_mut().insert("not a key", "v");
            r
        }),
        ("bad finalizer", {
            let mut r = int("a", 0);
            r.metadata_mut().finalizers_mut().add("");
            r
        }),
    ];
    for (what, r) in bad {
        let e = state.create(r, None).await.unwrap_err();
        assert!(e.is_invalid_input(), "{what}: {e}");
    }
    assert!(state.list(&kind(), &LabelQuery::all()).await.unwrap().is_empty());
    let bad_kind = Kind::new(NS, "");
    assert!(state.list(&bad_kind, &LabelQuery::all()).await.unwrap_err().is_invalid_input());
    let e = state.get(&Pointer::new(NS, long, "a")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
    state.create(int("ok", 0), None).await.unwrap();
    let e = state.add_finalizer(&ptr("ok"), "bad\nfinalizer").await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
    let e = state.watch_stream(&Pointer::new(NS, "T", "")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
}

async fn check_wrong_spec_type_is_a_type_mismatch(state: State) {
    state.create(int("a", 1), None).await.unwrap();
    let e = state.get_typed::<StrSpec>(&ptr("a")).await.unwrap_err();
    assert!(e.is_type_mismatch(), "{e}");
    let e = state
        .modify(&ptr("a"), |r: &mut Resource<StrSpec>| r.spec_mut().0.push('!'), None)
        .await
        .unwrap_err();
    assert!(e.is_type_mismatch(), "{e}");
}

async fn check_dynamic_resources_are_read_back_typed(state: State) {
    let manifest = serde_json::json!({
        "metadata": {"namespace": NS, "type": "Ints.test.cosi.dev", "id": "from-yaml"},
        "spec": 12,
    });
    let dynamic: DynamicResource = serde_json::from_value(manifest).unwrap();
    state.create(dynamic, None).await.unwrap();
    let typed = state.get_typed::<IntSpec>(&ptr("from-yaml")).await.unwrap();
    assert_eq!(typed.spec(), &IntSpec(12));
    let back = state.get(&ptr("from-yaml")).await.unwrap().to_dynamic().unwrap();
    assert_eq!(back.spec(), &serde_json::json!(12));
}

async fn check_teardown_and_destroy_waits_for_finalizers(state: State) {
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    state.create(r, None).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();

    let waiting = {
        let state = state.clone();
        actix::spawn(async move { state.teardown_and_destroy(&ptr("a"), None).await })
    };
    // The teardown happens first; the call then waits for the holder.
    match events.next().await {
        Some(Event::Updated { new, .. }) => assert_eq!(new.phase(), Phase::TearingDown),
        other => panic!("expected the teardown, got {other:?}"),
    }
    assert!(!waiting.is_finished());
    state.remove_finalizer(&ptr("a"), "holder").await.unwrap();
    waiting.await.unwrap().unwrap();
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
}

async fn check_concurrent_teardown_and_destroy_all_finish(state: State) {
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    state.create(r, None).await.unwrap();
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let state = state.clone();
            actix::spawn(async move { state.teardown_and_destroy(&ptr("a"), None).await })
        })
        .collect();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    // Wait until the resource is tearing down, then release it.
    loop {
        match events.next().await {
            Some(Event::Created(r) | Event::Updated { new: r, .. })
                if r.phase() == Phase::TearingDown =>
            {
                break;
            }
            Some(_) => {}
            None => panic!("watch ended"),
        }
    }
    state.remove_finalizer(&ptr("a"), "holder").await.unwrap();
    for call in calls {
        let result = call.await.unwrap();
        assert!(result.is_ok() || result.as_ref().unwrap_err().is_not_found(), "{result:?}");
    }
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
    let e = state.teardown_and_destroy(&ptr("a"), None).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

async fn check_teardown_and_destroy_of_a_resource_destroyed_meanwhile_succeeds(state: State) {
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    state.create(r, Some("owner")).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();
    let waiting = {
        let state = state.clone();
        actix::spawn(async move { state.teardown_and_destroy(&ptr("a"), Some("owner")).await })
    };
    events.next().await.unwrap(); // torn down
    state.remove_finalizer(&ptr("a"), "holder").await.unwrap();
    // Someone else may win the destroy; either way the waiter succeeds.
    let _ = state.destroy(&ptr("a"), Some("owner")).await;
    waiting.await.unwrap().unwrap();
    let e = state.teardown_and_destroy(&ptr("b"), None).await.unwrap_err();
    assert!(e.is_not_found());
}

async fn check_a_stalled_subscriber_stays_bounded_and_catches_up(state: State) {
    const UPDATES: i64 = 100_000;
    const RESOURCES: usize = 10;
    for i in 0..RESOURCES {
        state.create(int(&format!("r{i}"), 0), None).await.unwrap();
    }
    let options = WatchOptions::default().with_window(64);
    // Never polled while the updates run: stalled.
    let mut stalled = state.watch_kind_stream(&kind(), LabelQuery::all(), &options).await.unwrap();
    let id = stalled.id();
    let mut max_seen = (0, 0);
    for n in 1..=UPDATES {
        let p = ptr(&format!("r{}", n as usize % RESOURCES));
        state.modify(&p, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None).await.unwrap();
        if n % 10_000 == 0 {
            let stats = state.watch_stats(id).await.unwrap();
            max_seen = (max_seen.0.max(stats.in_flight), max_seen.1.max(stats.backlog));
        }
    }
    assert!(max_seen.0 <= 64, "in flight bounded by the window: {max_seen:?}");
    assert!(max_seen.1 <= RESOURCES, "backlog bounded by resources: {max_seen:?}");

    // A healthy neighbour kept working throughout.
    assert_eq!(state.list(&kind(), &LabelQuery::all()).await.unwrap().len(), RESOURCES);

    // Catching up yields every resource's latest state, nothing lost.
    let mut latest: BTreeMap<Id, i64> = BTreeMap::new();
    let expected: BTreeMap<Id, i64> = state
        .list(&kind(), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| (Id::from(r.id()), r.typed::<IntSpec>().unwrap().spec().0))
        .collect();
    while latest != expected {
        match stalled.next().await {
            Some(Event::Updated { new, .. } | Event::Created(new)) => {
                latest.insert(Id::from(new.id()), new.typed::<IntSpec>().unwrap().spec().0);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let stats = state.watch_stats(id).await.unwrap();
    assert_eq!(stats.backlog, 0);
}

async fn check_recipient_watches_deliver_to_actors(state: State) {
    use actix::prelude::*;
    use futures::channel::mpsc;

    struct Forward(mpsc::UnboundedSender<Event>);
    impl Actor for Forward {
        type Context = Context<Self>;
    }
    impl Handler<WatchEvent> for Forward {
        type Result = ();
        fn handle(&mut self, msg: WatchEvent, _: &mut Context<Self>) {
            let _ = self.0.unbounded_send(msg.into_event());
        }
    }

    let (tx, mut rx) = mpsc::unbounded();
    let actor = Forward(tx).start();
    state.create(int("a", 1), None).await.unwrap();
    let id = state
        .watch_kind(&kind(), LabelQuery::all(), true, actor.clone().recipient())
        .await
        .unwrap();
    assert!(matches!(rx.next().await, Some(Event::Created(r)) if r.id() == "a"));
    assert!(matches!(rx.next().await, Some(Event::Bootstrapped(_))));
    state.destroy(&ptr("a"), None).await.unwrap();
    assert!(matches!(rx.next().await, Some(Event::Destroyed(_))));
    state.unwatch(id).await.unwrap();
    assert!(state.watch_stats(id).await.unwrap_err().is_invalid_input());
    let single = state.watch(&ptr("a"), actor.recipient()).await.unwrap();
    assert!(matches!(rx.next().await, Some(Event::Destroyed(r)) if r.is_tombstone()));
    state.unwatch(single).await.unwrap();
}

macro_rules! conformance {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;
            conformance!(@tests $make;
                check_get_returns_the_resource_or_not_found,
                check_create_of_an_existing_id_is_already_exists,
                check_create_keeps_phase_finalizers_and_labels_as_given,
                check_versions_are_owned_by_the_state,
                check_update_keeps_created_and_moves_updated,
                check_update_checks_not_found_owner_version_phase_in_order,
                check_modify_creates_then_updates,
                check_no_op_modify_writes_nothing_and_emits_nothing,
                check_modify_of_a_torn_down_resource_is_a_phase_conflict_unless_expected,
                check_destroy_with_finalizers_is_refused,
                check_teardown_is_idempotent_and_reports_readiness,
                check_phase_conflict_after_teardown_and_expected_phase_override,
                check_finalizer_operations_ignore_owner_and_phase,
                check_concurrent_finalizer_adds_and_removes_converge,
                check_parallel_destroys_one_succeeds_the_rest_not_found,
                check_list_is_sorted_by_id,
                check_label_queries_filter_lists,
                check_watch_starts_with_created_or_a_tombstone,
                check_watch_kind_bootstrap_order_then_bootstrapped,
                check_label_query_watches_turn_updates_into_created_and_destroyed,
                check_updated_carries_the_old_resource,
                check_invalid_input_is_rejected_and_nothing_stored,
                check_wrong_spec_type_is_a_type_mismatch,
                check_dynamic_resources_are_read_back_typed,
                check_teardown_and_destroy_waits_for_finalizers,
                check_concurrent_teardown_and_destroy_all_finish,
                check_teardown_and_destroy_of_a_resource_destroyed_meanwhile_succeeds,
                check_a_stalled_subscriber_stays_bounded_and_catches_up,
                check_recipient_watches_deliver_to_actors,
            );
        }
    };
    (@tests $make:expr; $($check:ident),* $(,)?) => {
        $(
            #[actix::test]
            async fn $check() {
                let state: State = $make;
                super::$check(state).await;
            }
        )*
    };
}

conformance!(memory, State::start_with_backend(MemoryBackend::new()));
conformance!(vec_backend, State::start_with_backend(naive::VecBackend::default()));

/// A deliberately naive second backend: one sorted `Vec` for everything. It
/// proves the rules live in the `Store`, not in a backend: the same suite
/// passes over it unchanged.
mod naive {
    use super::*;

    #[derive(Default)]
    pub struct VecBackend {
        items: Vec<AnyResource>,
    }

    impl VecBackend {
        fn position(&self, ptr: &Pointer) -> Result<usize, usize> {
            self.items.binary_search_by(|r| r.pointer().cmp(ptr))
        }
    }

    impl Backend for VecBackend {
        fn get(&self, ptr: &Pointer) -> Option<&AnyResource> {
            self.position(ptr).ok().map(|i| &self.items[i])
        }

        fn list<'a>(&'a self, kind: &Kind) -> Box<dyn Iterator<Item = &'a AnyResource> + 'a> {
            let kind = kind.clone();
            Box::new(self.items.iter().filter(move |r| r.pointer().kind() == &kind))
        }

        fn put(&mut self, resource: AnyResource) -> Result<(), Error> {
            match self.position(resource.pointer()) {
                Ok(i) => self.items[i] = resource,
                Err(i) => self.items.insert(i, resource),
            }
            Ok(())
        }

        fn remove(&mut self, ptr: &Pointer) -> Result<Option<AnyResource>, Error> {
            Ok(self.position(ptr).ok().map(|i| self.items.remove(i)))
        }

        fn intern(&mut self, kind: &Kind) -> Kind {
            kind.clone()
        }

        fn len(&self) -> usize {
            self.items.len()
        }
    }
}
