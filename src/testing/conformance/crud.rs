//! Checks of single-resource reads and writes: get, create, update, modify,
//! versions and uids; and of lists (their order, label queries).

use futures::StreamExt;

use super::Target;
use super::support::{IntSpec, NS, StrSpec, int, kind, ptr};
use crate::prelude::*;

/// Checks that get returns the resource or not found.
pub async fn check_get_returns_the_resource_or_not_found(t: &mut dyn Target) {
    let state = t.open().await;
    let created = state.create(int("a", 1), None).await.unwrap();
    let got = state.get(&ptr("a")).await.unwrap();
    let state = t.reopen(state).await;
    assert_eq!(state.get(&ptr("a")).await.unwrap(), got, "a reopened state has it too");
    assert_eq!(got, created);
    assert_eq!(got.typed::<IntSpec>().unwrap().spec(), &IntSpec(1));
    let err = state.get(&ptr("missing")).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert!(err.to_string().contains("missing"), "names the resource: {err}");
}

/// Checks that create of an existing id is already exists.
pub async fn check_create_of_an_existing_id_is_already_exists(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let err = state.create(int("a", 2), None).await.unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    let state = t.reopen(state).await;
    assert!(state.create(int("a", 2), None).await.unwrap_err().is_already_exists());
    let stored = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    assert_eq!(stored.spec(), &IntSpec(1), "the first create stands");
}

/// Checks that create keeps phase finalizers and labels as given.
pub async fn check_create_keeps_phase_finalizers_and_labels_as_given(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("held");
    r.metadata_mut().labels_mut().insert("tier", "edge");
    r.metadata_mut().annotations_mut().insert("note", "hello");
    r.metadata_mut().set_phase(Phase::TearingDown);
    let created = state.client_as("ctrl").create(r).await.unwrap();
    let state = t.reopen(state).await;
    let reread = state.get(created.pointer()).await.unwrap();
    assert_eq!(reread, created, "metadata survives as stored");
    assert_eq!(reread.metadata().created(), created.metadata().created());
    let md = created.metadata();
    assert!(md.finalizers().contains("held"));
    assert_eq!(md.labels().get("tier"), Some("edge"));
    assert_eq!(md.annotations().get("note"), Some("hello"));
    assert_eq!(md.phase(), Phase::TearingDown);
    assert_eq!(md.owner(), Some("ctrl"));
}

/// Checks that versions are owned by the state.
pub async fn check_versions_are_owned_by_the_state(t: &mut dyn Target) {
    let state = t.open().await;
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
    let state = t.reopen(state).await;
    let again = updated.typed::<IntSpec>().unwrap();
    assert_eq!(state.update(again, None).await.unwrap().version(), Version::new(3));
}

/// Checks that update keeps created and moves updated.
pub async fn check_update_keeps_created_and_moves_updated(t: &mut dyn Target) {
    let state = t.open().await;
    let created = state.create(int("a", 1), None).await.unwrap();
    let mut next = created.typed::<IntSpec>().unwrap();
    next.spec_mut().0 = 2;
    let updated = state.update(next, None).await.unwrap();
    assert_eq!(updated.metadata().created(), created.metadata().created());
    assert!(updated.metadata().updated() >= created.metadata().updated());
}

/// Checks that update checks not found owner version phase in order.
pub async fn check_update_checks_not_found_owner_version_phase_in_order(t: &mut dyn Target) {
    let state = t.open().await;
    // Missing beats everything.
    let mut ghost = int("ghost", 1);
    ghost.metadata_mut().set_version(Version::new(9));
    let e = state.client_as("other").update(ghost).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");

    let created = state.client_as("owner").create(int("a", 1)).await.unwrap();
    state.client_as("owner").teardown(&ptr("a")).await.unwrap();
    let state = t.reopen(state).await;

    // Wrong owner + stale version + wrong phase: owner first.
    let stale = created.typed::<IntSpec>().unwrap();
    let e = state.client_as("other").update(stale.clone()).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    // None matches only none.
    let e = state.update(stale.clone(), None).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    // Right owner, stale version, wrong phase: version next.
    let e = state.client_as("owner").update(stale).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    // Right owner and version, wrong phase: phase last.
    let fresh = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    let e = state.client_as("owner").update(fresh).await.unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
}

/// Checks that an update computed from an earlier incarnation of a resource
/// (read, then the resource was destroyed and created again) is a version
/// conflict even at the same version, and leaves the new incarnation as it is.
pub async fn check_an_update_from_another_incarnation_is_a_version_conflict(t: &mut dyn Target) {
    let state = t.open().await;
    state.client_as("owner").create(int("a", 1)).await.unwrap();
    let read = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    let first = read.metadata().uid().expect("a stored resource has a uid");
    let state = t.reopen(state).await;
    state.client_as("owner").destroy(&ptr("a")).await.unwrap();
    let again = state.client_as("owner").create(int("a", 2)).await.unwrap();
    let second = again.metadata().uid().expect("a stored resource has a uid");
    assert_ne!(first, second, "another incarnation, another uid");
    assert_eq!(again.version(), read.version(), "both at version 1: only the uid tells");
    let state = t.reopen(state).await;

    let mut stale = read.clone();
    stale.spec_mut().0 = 99;
    let e = state.client_as("owner").update(stale.clone()).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    assert!(e.to_string().contains(&ptr("a").to_string()), "names the resource: {e}");
    // The same through a phase-expecting update.
    let e =
        state.client_as("owner").update_with_phase(stale, ExpectedPhase::Any).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    let now = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    assert_eq!(now.spec(), &IntSpec(2), "the new incarnation is untouched");
    assert_eq!(now.version(), Version::new(1));
    assert_eq!(now.metadata().uid(), Some(second));
    assert_eq!(now.metadata().revision(), again.metadata().revision(), "nothing was written");

    // The new incarnation's own copy updates as usual.
    let mut fresh = now;
    fresh.spec_mut().0 = 3;
    let updated = state.client_as("owner").update(fresh).await.unwrap();
    assert_eq!(updated.version(), Version::new(2));
    assert_eq!(updated.metadata().uid(), Some(second));
}

/// Checks that the state gives every create a new uid (replacing one the
/// caller sent), that every later write keeps it (update, modify, teardown,
/// finalizer edits), that a reopened state has the same one, and that a
/// resource destroyed and created again has another.
pub async fn check_uids_are_the_states_and_differ_across_incarnations(t: &mut dyn Target) {
    let state = t.open().await;
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Destroyed(_))), "a tombstone first");
    let mut sent = int("a", 1);
    let elsewhere = state.create(int("elsewhere", 1), None).await.unwrap();
    sent.metadata_mut().set_uid(elsewhere.metadata().uid());
    let created = state.create(sent, None).await.unwrap();
    let uid = created.metadata().uid().expect("a stored resource has a uid");
    assert_ne!(Some(uid), elsewhere.metadata().uid(), "a create replaces the caller's uid");
    match events.next().await {
        Some(Event::Created(r)) => assert_eq!(r.metadata().uid(), Some(uid), "watchers see it"),
        other => panic!("expected the create, got {other:?}"),
    }
    let state = t.reopen(state).await;
    let got = state.get(&ptr("a")).await.unwrap();
    assert_eq!(got.metadata().uid(), Some(uid), "the uid survives a reopen");

    let mut next = got.typed::<IntSpec>().unwrap();
    next.spec_mut().0 = 2;
    let updated = state.update(next, None).await.unwrap();
    assert_eq!(updated.metadata().uid(), Some(uid), "update keeps it");
    let modified = state
        .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 3, None)
        .await
        .unwrap();
    assert_eq!(modified.metadata().uid(), Some(uid), "modify keeps it");
    state.add_finalizer(&ptr("a"), "f").await.unwrap();
    state.teardown(&ptr("a"), None).await.unwrap();
    state.remove_finalizer(&ptr("a"), "f").await.unwrap();
    let state = t.reopen(state).await;
    let kept = state.get(&ptr("a")).await.unwrap();
    assert_eq!(kept.metadata().uid(), Some(uid), "finalizer edits and teardown keep it");
    assert_eq!(kept.version(), Version::new(6));

    state.destroy(&ptr("a"), None).await.unwrap();
    let again = state.create(int("a", 1), None).await.unwrap();
    let other = again.metadata().uid().expect("a stored resource has a uid");
    assert_ne!(other, uid, "another incarnation, another uid");
    let state = t.reopen(state).await;
    let got = state.get(&ptr("a")).await.unwrap();
    assert_eq!(got.metadata().uid(), Some(other), "the new uid survives a reopen");
    assert_eq!(got, again, "equal as stored");
    let json = serde_json::to_value(got.metadata()).unwrap();
    assert_eq!(json["uid"], other.to_string(), "serialized as `uid`");
}

/// Checks that modify creates then updates.
pub async fn check_modify_creates_then_updates(t: &mut dyn Target) {
    let state = t.open().await;
    let p = ptr("m");
    let created: Resource<IntSpec> = state
        .client_as("c")
        .modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 5)
        .await
        .unwrap();
    assert_eq!(created.version(), Version::new(1));
    assert_eq!(created.metadata().owner(), Some("c"));
    let state = t.reopen(state).await;
    let updated = state
        .client_as("c")
        .modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1)
        .await
        .unwrap();
    assert_eq!(updated.spec(), &IntSpec(6));
    assert_eq!(updated.version(), Version::new(2));
    let e =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
}

/// Checks that no op modify writes nothing and emits nothing.
pub async fn check_no_op_modify_writes_nothing_and_emits_nothing(t: &mut dyn Target) {
    let state = t.open().await;
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

/// Checks that modify of a torn down resource is a phase conflict unless expected.
pub async fn check_modify_of_a_torn_down_resource_is_a_phase_conflict_unless_expected(
    t: &mut dyn Target,
) {
    let state = t.open().await;
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

/// Checks that list is sorted by id.
pub async fn check_list_is_sorted_by_id(t: &mut dyn Target) {
    let state = t.open().await;
    for id in ["delta", "alpha", "charlie", "bravo", "10", "9"] {
        state.create(int(id, 0), None).await.unwrap();
    }
    state.create(Resource::new(NS, "zulu", StrSpec("other type".into())), None).await.unwrap();
    state.create(Resource::new("elsewhere", "echo", IntSpec(0)), None).await.unwrap();
    let state = t.reopen(state).await;
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

/// Checks that label queries filter lists.
pub async fn check_label_queries_filter_lists(t: &mut dyn Target) {
    let state = t.open().await;
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
